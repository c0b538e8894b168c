"""fastnips.prune.masked: the masked LoRA layer (configuration, forward and gradients against the dense
oracle ``W + s (B A) * M``, low precision, bounded temporaries, training then merging).

Oracles: dense ``F.linear`` with ``W + s (B A) * M``, ``torch.autograd.gradcheck`` in float64.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from fastnips.prune import bits as pb  # noqa: E402
from fastnips.prune import masked_ops as ops  # noqa: E402
from fastnips.prune.masked import LoRA, MaskedLinear, MaskedLoRALinear  # noqa: E402

from ._masked_helpers import NewStorages, layer, lora_layer, lora_oracle  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# LoRA


def test_lora_config_validates():
    assert LoRA().scale == 2.0
    assert LoRA(4, 2).scale == 0.5
    for bad in ({"r": 0}, {"r": -1}, {"r": 2.5}, {"r": True}, {"alpha": 0}, {"alpha": -1.0},
                {"alpha": float("nan")}, {"masked": 1}):
        with pytest.raises(ValueError, match="LoRA"):
            LoRA(**bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        LoRA().r = 3


def test_lora_layer_starts_equal_to_base_with_frozen_base():
    lin, mask = layer(dtype=torch.float64)
    ml = MaskedLinear.from_linear(lin, mask)
    x = torch.randn(3, 12, dtype=torch.float64)
    y0 = ml(x)
    lo = MaskedLoRALinear(ml, LoRA(4, 8), generator=torch.Generator().manual_seed(0))
    assert torch.equal(lo(x), y0)
    assert not lo.weight.requires_grad
    assert not lo.bias.requires_grad
    assert lo.lora_A.shape == (4, 12)
    assert lo.lora_B.shape == (7, 4)
    assert (lo.lora_B == 0).all()
    bound = 1 / math.sqrt(12)  # kaiming_uniform(a=sqrt(5)) on fan_in = 12
    assert lo.lora_A.abs().max() <= bound
    assert lo.lora_A.std() > bound / 4
    lo2 = MaskedLoRALinear(MaskedLinear.from_linear(*layer(dtype=torch.float64)), LoRA(4, 8),
                           generator=torch.Generator().manual_seed(0))
    assert torch.equal(lo.lora_A, lo2.lora_A)  # seeded
    with pytest.raises(TypeError, match="MaskedLinear"):
        MaskedLoRALinear(nn.Linear(3, 2))


@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize("shape", [(12,), (5, 12), (2, 3, 12)])
def test_lora_forward_equals_oracle(masked, shape):
    lo, mask = lora_layer(masked=masked)
    x = torch.randn(shape, dtype=torch.float64)
    torch.testing.assert_close(lo(x), lora_oracle(lo, x, mask), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.bfloat16, 1.6e-2), (torch.float16, 2e-3)])
def test_lora_low_precision_forward_and_backward(dtype, tol):
    lo, mask = lora_layer(d_in=20, d_out=9, r=4, dtype=dtype)
    x = torch.randn(2, 3, 20).to(dtype).requires_grad_()
    y = lo(x)
    assert y.dtype == dtype
    y.float().pow(2).sum().backward()
    with torch.no_grad():
        ref = lora_oracle(_to64(lo), x.double(), mask)
    assert float((y.detach().double() - ref).abs().max() / ref.abs().max()) <= tol
    assert lo.lora_A.grad.dtype == dtype
    assert x.grad.shape == x.shape


def _to64(lo):
    return copy.deepcopy(lo).double()


@pytest.mark.parametrize("masked", [True, False])
def test_gradcheck_masked_lora(masked):
    lo, mask = lora_layer(d_in=6, d_out=5, r=2, masked=masked)
    x = torch.randn(2, 2, 6, dtype=torch.float64, requires_grad=True)
    A = lo.lora_A.detach().clone().requires_grad_()
    B = lo.lora_B.detach().clone().requires_grad_()
    b = lo.bias.detach().clone().requires_grad_()
    V = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)  # a trainable base, as V ⊙ M
    bits, s = lo.mask_bits, lo.scale
    if masked:
        fn = lambda x, V, b, A, B: ops.MaskedLoRAFn.apply(x, V * mask, b, A, B, bits, s, "reference")
    else:
        def fn(x, V, b, A, B):
            lo.lora_A, lo.lora_B = nn.Parameter(A), nn.Parameter(B)  # through the module's own path
            return ops.MaskedLinearFn.apply(x, V * mask, b, bits, "reference") + s * F.linear(F.linear(x, A), B)
    assert torch.autograd.gradcheck(fn, (x, V, b, A, B))


def test_lora_gradients_match_autograd_through_the_dense_product_and_are_masked(monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 200)
    lo, mask = lora_layer(d_in=20, d_out=11, r=3)
    lo.weight.requires_grad_(True)
    x = torch.randn(4, 20, dtype=torch.float64, requires_grad=True)
    lo(x).pow(2).sum().backward()
    A = lo.lora_A.detach().clone().requires_grad_()
    B = lo.lora_B.detach().clone().requires_grad_()
    W = lo.weight.detach().clone().requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    F.linear(x2, W + lo.scale * (B @ A) * mask, lo.bias).pow(2).sum().backward()
    for ours, ref in ((lo.lora_A.grad, A.grad), (lo.lora_B.grad, B.grad), (x.grad, x2.grad)):
        torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lo.weight.grad, W.grad * mask, rtol=1e-12, atol=1e-12)
    assert (lo.weight.grad[~mask] == 0).all()


def test_lora_results_do_not_depend_on_the_chunk_size(monkeypatch):
    results = []
    for chunk in (1, 300, 10**9):
        monkeypatch.setattr(pb, "CHUNK_BYTES", chunk)
        lo, _ = lora_layer(d_in=20, d_out=11, r=3)
        x = torch.randn(2, 4, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(3),
                        requires_grad=True)
        y = lo(x)
        y.pow(2).sum().backward()
        results.append((y.detach(), x.grad, lo.lora_A.grad, lo.lora_B.grad))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)


def test_lora_never_forms_a_full_size_temporary(monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 4096)
    lo, _ = lora_layer(d_in=96, d_out=64, r=4)
    x = torch.randn(8, 96, dtype=torch.float64, requires_grad=True)
    with NewStorages() as rec:
        lo(x).pow(2).sum().backward()
    biggest = max(s for s, _ in rec.sizes)
    activations = 8 * max(96, 64) * 8
    assert biggest <= max(4096, activations), sorted(rec.sizes)[-3:]
    assert biggest < 64 * 96 * 8 / 4  # far below one d_out x d_in product


@pytest.mark.parametrize("opt_kind", ["adamw", "sgd"])
def test_lora_training_then_merge_keeps_sparsity_exactly_and_the_function(opt_kind, monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 256)
    lo, mask = lora_layer(d_in=12, d_out=7, r=3, dtype=torch.float32)
    with torch.no_grad():
        lo.lora_B.zero_()
    params = [lo.lora_A, lo.lora_B]
    opt = (torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1) if opt_kind == "adamw"
           else torch.optim.SGD(params, lr=1e-2, momentum=0.9, weight_decay=0.1))
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        loss = (lo(torch.randn(8, 12, generator=g)) - torch.randn(8, 7, generator=g)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert lo.lora_B.abs().max() > 0
    x = torch.randn(5, 12)
    y = lo(x).detach()
    merged = lo.merge()
    assert isinstance(merged, MaskedLinear)
    assert merged.weight is lo.weight
    assert merged.weight.requires_grad
    assert merged.bias.requires_grad
    assert (merged.weight[~mask] == 0.0).all()
    assert torch.equal(merged.mask, mask)
    torch.testing.assert_close(merged(x), y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(lo(x), y, rtol=1e-6, atol=1e-6)  # B zeroed: the LoRA layer is unchanged


def test_unmasked_lora_merge_warns_and_is_dense():
    lo, mask = lora_layer(masked=False)
    x = torch.randn(3, 12, dtype=torch.float64)
    y = lo(x).detach()
    with pytest.warns(UserWarning, match="dense"):
        merged = lo.merge()
    assert type(merged) is nn.Linear
    assert (merged.weight[~mask] != 0).any()
    torch.testing.assert_close(merged(x), y, rtol=1e-12, atol=1e-12)


