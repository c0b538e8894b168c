"""fastnips.prune.masked: masked linear / masked LoRA layers, their gradients, the mask's survival through
training, merging and (de)serialisation, the bounded temporaries, and the model-level helpers.

Oracles: dense ``F.linear`` with ``W * M`` (and ``W + s (B A) * M``), ``torch.autograd.gradcheck`` in
float64, numpy's ``packbits(bitorder="little")`` for the bit layout.
"""

from __future__ import annotations

import copy
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from fastnips.prune import bits as pb  # noqa: E402
from fastnips.prune import masked as mm  # noqa: E402
from fastnips.prune import masked_ops as ops  # noqa: E402
from fastnips.prune.bits import pack_mask, unpack_mask  # noqa: E402
from fastnips.prune.masked import LoRA, MaskedLinear, MaskedLoRALinear  # noqa: E402
from fastnips.prune.surgery import (  # noqa: E402
    add_lora,
    apply_masks,
    keep_masks,
    masks_of,
    merge_lora,
    sparsity_report,
    strip_masks,
)

from ..helpers import backend_fixture  # noqa: E402
from ._masked_helpers import NewStorages, layer, lora_layer, rand_mask  # noqa: E402

# the backends of the masked layers
backend = backend_fixture(*ops.MASKED_BACKENDS)




# ---------------------------------------------------------------------------------------------------
# bit packing


@pytest.mark.parametrize("cols", [1, 7, 8, 13, 64, 65])
def test_pack_layout_is_numpy_little_endian_and_round_trips(cols, monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 16)  # several row blocks
    m = rand_mask(9, cols, 0.4, seed=cols)
    bits = pack_mask(m)
    assert bits.dtype == torch.uint8
    assert bits.shape == (9, math.ceil(cols / 8))
    np.testing.assert_array_equal(bits.numpy(), np.packbits(m.numpy(), axis=1, bitorder="little"))
    assert torch.equal(unpack_mask(bits, cols), m)
    assert torch.equal(pack_mask(m.t().contiguous().t()), bits)  # strided input


def test_pack_refuses_non_bool():
    with pytest.raises(TypeError, match="bool"):
        pack_mask(torch.ones(2, 3))
    with pytest.raises(ValueError, match="2-D"):
        pack_mask(torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="in_features"):
        unpack_mask(pack_mask(torch.ones(2, 9, dtype=torch.bool)), 20)


# ---------------------------------------------------------------------------------------------------
# MaskedLinear


def test_from_linear_takes_over_the_parameter_and_zeroes_pruned_entries():
    lin, mask = layer()
    w0 = lin.weight.detach().clone()
    ml = MaskedLinear.from_linear(lin, mask)
    assert ml.weight is lin.weight
    assert ml.bias is lin.bias
    assert (ml.in_features, ml.out_features) == (12, 7)
    assert torch.equal(ml.weight.detach(), w0 * mask)
    assert torch.equal(ml.mask, mask)
    assert ml.mask_bits.dtype == torch.uint8
    assert ml.mask_bits.shape == (7, 2)
    assert ml.sparsity == pytest.approx(1 - mask.float().mean().item())
    assert ml.to_linear().weight is ml.weight
    assert type(ml.to_linear()) is nn.Linear


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(12,), (5, 12), (2, 3, 12)])
def test_forward_equals_dense_linear_with_masked_weight(dtype, shape):
    lin, mask = layer(dtype=dtype)
    w0 = lin.weight.detach().clone()
    ml = MaskedLinear.from_linear(lin, mask)
    x = torch.randn(shape).to(dtype)
    assert torch.equal(ml(x), F.linear(x, w0 * mask, lin.bias))


def test_fresh_constructor_like_nn_linear():
    m = rand_mask(4, 6)
    ml = MaskedLinear(6, 4, bias=False, mask=m, dtype=torch.float64)
    assert ml.bias is None
    assert ml.weight.dtype == torch.float64
    assert (ml.weight[~m] == 0).all()
    assert torch.equal(ml.mask, m)
    assert torch.equal(MaskedLinear(6, 4).mask, torch.ones(4, 6, dtype=torch.bool))


def test_gradcheck_masked_linear():
    lin, mask = layer(d_in=6, d_out=5, dtype=torch.float64)
    ml = MaskedLinear.from_linear(lin, mask)
    x = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    b = ml.bias.detach().clone().requires_grad_()
    bits = ml.mask_bits
    # W enters as V ⊙ M so that perturbing a pruned entry keeps the invariant W = W ⊙ M (our dW is the
    # gradient on the kept entries; that pruned entries get exactly 0 is tested below)
    V = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    fn = lambda x, V, b: ops.MaskedLinearFn.apply(x, V * mask, b, bits, "reference")
    assert torch.autograd.gradcheck(fn, (x, V, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_weight_grad_is_exactly_zero_on_pruned_entries(dtype, monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 64)  # row-chunked masking
    lin, mask = layer(d_in=20, d_out=9, dtype=dtype)
    ml = MaskedLinear.from_linear(lin, mask)
    x = torch.randn(4, 20).to(dtype)
    x[:, 3] = float("inf")  # inf products on pruned entries must still give 0.0
    y = ml(x).nan_to_num(0.0)
    y.sum().backward()
    g = ml.weight.grad
    assert (g[~mask] == 0).all()
    dense = lin.weight.detach().clone().requires_grad_()
    F.linear(x, dense, lin.bias).nan_to_num(0.0).sum().backward()
    keep = mask & torch.isfinite(dense.grad)
    assert torch.equal(g[keep], dense.grad[keep])


def test_backward_allocates_no_full_size_mask(monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_BYTES", 4096)
    lin, mask = layer(d_in=96, d_out=64, dtype=torch.float64)
    ml = MaskedLinear.from_linear(lin, mask)
    x = torch.randn(4, 96, dtype=torch.float64, requires_grad=True)  # activations < 64 * 96 bytes
    with NewStorages() as rec:
        ml(x).sum().backward()
    w_bytes = 64 * 96 * 8
    big = [s for s in rec.sizes if s[0] >= 64 * 96]  # anything as large as a bool mask
    assert [s for s, _ in big] == [w_bytes], big  # only dW itself (which becomes .grad)


# ---------------------------------------------------------------------------------------------------
# the mask survives training


def _train(model, masks, opt, steps=25, keep=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    handle = keep_masks(opt, model) if keep else None
    for _ in range(steps):
        x = torch.randn(8, 12, generator=g)
        loss = (model(x) - torch.randn(8, 5, generator=g)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return handle


def _net(seed=0):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 5))
    masks = {"0": rand_mask(16, 12, 0.5, seed), "2": rand_mask(5, 16, 0.7, seed + 1)}
    apply_masks(net, masks)
    return net, masks


OPTIMS = {
    "adamw-wd": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    "adamw-wd-foreach": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True),
    "adamw-wd-fused": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, fused=True),
    "adamw-amsgrad": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, amsgrad=True),
    "sgd-momentum-wd": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=0.1),
    "sgd-nesterov-wd": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=0.1, nesterov=True),
}


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("optim", list(OPTIMS))
def test_pruned_entries_stay_exactly_zero_through_training(optim, keep):
    net, masks = _net()
    before = {n: net.get_submodule(n).weight.detach().clone() for n in masks}
    _train(net, masks, OPTIMS[optim](net.parameters()), keep=keep)
    for n, m in masks.items():
        w = net.get_submodule(n).weight.detach()
        assert (w[~m] == 0.0).all(), n
        assert not torch.equal(w[m], before[n][m])  # it did train
        assert torch.equal(net.get_submodule(n).mask, m)


class _Drift(torch.optim.SGD):
    """An optimiser that moves every weight, also those without gradient (what keep_masks guards against)."""

    @torch.no_grad()
    def step(self, closure=None):
        super().step(closure)
        for g in self.param_groups:
            for p in g["params"]:
                p.add_(1e-3)


def test_keep_masks_repairs_an_optimizer_that_moves_pruned_weights_and_can_be_removed():
    net, masks = _net()
    opt = _Drift(net.parameters(), lr=1e-2)
    handle = _train(net, masks, opt, steps=3, keep=True)
    for n, m in masks.items():
        assert (net.get_submodule(n).weight[~m] == 0.0).all()
    handle.remove()
    _train(net, masks, opt, steps=1)
    assert (net.get_submodule("0").weight[~masks["0"]] != 0).all()
    with pytest.raises(TypeError, match="Optimizer"):
        keep_masks(object(), net)


def test_keep_masks_only_touches_layers_the_optimizer_trains():
    net, masks = _net()
    opt = torch.optim.SGD(net[2].parameters(), lr=1e-2)
    keep_masks(opt, net)
    with torch.no_grad():
        net[0].weight[~masks["0"]] = 5.0  # not this optimizer's business
        net[2].weight[~masks["2"]] = 5.0
    net(torch.randn(2, 12)).sum().backward()
    opt.step()
    assert (net[0].weight[~masks["0"]] == 5.0).all()
    assert (net[2].weight[~masks["2"]] == 0.0).all()


# ---------------------------------------------------------------------------------------------------
# buffers, state dicts, dtypes, autocast


def test_bits_survive_state_dict_round_trip_to_dtype_and_deepcopy():
    net, masks = _net()
    add_lora(net, LoRA(2, 4), names=["2"])
    sd = net.state_dict()
    assert sd["0.mask_bits"].dtype == torch.uint8
    assert "2.lora_A" in sd
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    net2 = nn.Sequential(MaskedLinear(12, 16), nn.GELU(), MaskedLoRALinear(MaskedLinear(16, 5), LoRA(2, 4)))
    net2.load_state_dict(torch.load(buf))
    assert masks_of(net2).keys() == masks.keys()
    for n, m in masks.items():
        assert torch.equal(net2.get_submodule(n).mask, m)
    x = torch.randn(3, 12)
    torch.testing.assert_close(net2(x), net(x))
    net2.to(torch.float64)
    assert net2[0].weight.dtype == torch.float64
    assert net2[0].mask_bits.dtype == torch.uint8
    assert torch.equal(net2[0].mask, masks["0"])
    assert torch.equal(net2[2].mask, masks["2"])
    net2.half()
    assert net2[0].mask_bits.dtype == torch.uint8
    assert torch.equal(net2[0].mask, masks["0"])
    net3 = copy.deepcopy(net)
    assert torch.equal(net3[0].mask, masks["0"])


def test_loading_dense_weights_reapplies_the_mask():
    net, masks = _net()
    dense = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 5))
    res = net.load_state_dict(dense.state_dict(), strict=False)
    assert res.missing_keys == ["0.mask_bits", "2.mask_bits"]
    for n, m in masks.items():
        w = net.get_submodule(n).weight
        assert (w[~m] == 0).all()
        assert torch.equal(w[m], dense.get_submodule(n).weight[m])


def test_autocast_bf16_on_cpu():
    net, masks = _net()
    add_lora(net, LoRA(2, 4), names=["2"])
    with torch.no_grad():
        net[2].lora_B.normal_()
    x = torch.randn(4, 12)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = net(x)
    assert y.dtype == torch.bfloat16
    y.float().pow(2).sum().backward()
    assert net[0].weight.grad.dtype == torch.float32
    assert (net[0].weight.grad[~masks["0"]] == 0).all()
    assert net[2].lora_A.grad.dtype == torch.float32
    torch.testing.assert_close(y.float(), net(x), rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------------------------------------------
# model-level helpers


def test_apply_strip_round_trip_and_report():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 5)))
    params = {n: p for n, p in net.named_parameters()}
    dense = {n: p.detach().clone() for n, p in params.items()}
    masks = {"0": rand_mask(16, 12, 0.5), "2.1": rand_mask(5, 8, 0.25, seed=1)}
    assert apply_masks(net, masks) is net
    assert isinstance(net[0], MaskedLinear)
    assert isinstance(net[2][1], MaskedLinear)
    assert type(net[2][0]) is nn.Linear
    x = torch.randn(3, 12)
    ref = F.linear(F.relu(F.linear(x, dense["0.weight"] * masks["0"], dense["0.bias"])), dense["2.0.weight"],
                   dense["2.0.bias"])
    ref = F.linear(ref, dense["2.1.weight"] * masks["2.1"], dense["2.1.bias"])
    torch.testing.assert_close(net(x), ref)
    assert {n: m.tolist() for n, m in masks_of(net).items()} == {n: m.tolist() for n, m in masks.items()}
    rep = sparsity_report(net)
    assert [(r.name, r.shape) for r in rep] == [("0", (16, 12)), ("2.0", (8, 16)), ("2.1", (5, 8))]
    assert rep[0].sparsity == pytest.approx(1 - masks["0"].float().mean().item())
    assert rep[1].sparsity == 0.0
    strip_masks(net)
    assert all(type(m) is nn.Linear for m in (net[0], net[2][0], net[2][1]))
    assert all(p is params[n] for n, p in net.named_parameters())  # the same Parameters throughout
    assert (net[0].weight[~masks["0"]] == 0).all()
    torch.testing.assert_close(net(x), ref)
    assert sparsity_report(net)[0].sparsity == pytest.approx(rep[0].sparsity)


def test_add_lora_merge_lora_and_strip_with_lora():
    net, masks = _net()
    net.requires_grad_(False)  # train the LoRA factors alone: the caller's choice
    add_lora(net, LoRA(2, 4), generator=torch.Generator().manual_seed(0))
    assert isinstance(net[0], MaskedLoRALinear)
    assert isinstance(net[2], MaskedLoRALinear)
    assert sorted(n for n, p in net.named_parameters() if p.requires_grad) == ["0.lora_A", "0.lora_B", "2.lora_A",
                                                                              "2.lora_B"]
    with torch.no_grad():
        net[0].lora_B.normal_()
    x = torch.randn(3, 12)
    y = net(x).detach()
    net2 = copy.deepcopy(net)
    merge_lora(net)
    assert type(net[0]) is MaskedLinear
    assert (net[0].weight[~masks["0"]] == 0).all()
    assert not net[0].weight.requires_grad  # restored to the flag it had before add_lora
    torch.testing.assert_close(net(x), y, rtol=1e-6, atol=1e-6)
    strip_masks(net2)
    assert type(net2[0]) is nn.Linear
    assert (net2[0].weight[~masks["0"]] == 0).all()
    torch.testing.assert_close(net2(x), y, rtol=1e-6, atol=1e-6)


def test_shared_module_is_replaced_everywhere():
    lin = nn.Linear(4, 4)
    net = nn.Sequential(lin, nn.ReLU(), lin)
    m = rand_mask(4, 4)
    apply_masks(net, {"0": m})
    assert net[0] is net[2]
    assert isinstance(net[0], MaskedLinear)
    with pytest.raises(ValueError, match="same module"):
        apply_masks(nn.Sequential(lin, lin), {"0": m, "1": m})


def test_bad_inputs_raise_clear_errors():
    net, masks = _net()
    net0 = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 5))
    before = [type(m) for m in net0]
    with pytest.raises(ValueError, match="no module named 'nope'"):
        apply_masks(net0, {"0": rand_mask(16, 12), "nope": rand_mask(16, 12)})
    assert [type(m) for m in net0] == before  # check=True: untouched on error
    with pytest.raises(ValueError, match=r"module '2'.*shape \(16, 12\).*\(5, 16\)"):
        apply_masks(net0, {"2": rand_mask(16, 12)})
    with pytest.raises(TypeError, match=r"module '0'.*bool"):
        apply_masks(net0, {"0": rand_mask(16, 12).float()})
    with pytest.raises(TypeError, match="module '1' is a GELU"):
        apply_masks(net0, {"1": rand_mask(16, 12)})
    with pytest.raises(ValueError, match="the model itself"):
        apply_masks(nn.Linear(3, 2), {"": rand_mask(2, 3)})
    with pytest.raises(TypeError, match="bool"):
        MaskedLinear.from_linear(nn.Linear(3, 2), torch.ones(2, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="shape"):
        MaskedLinear.from_linear(nn.Linear(3, 2), torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"nn\.Linear"):
        MaskedLinear.from_linear(nn.Conv1d(3, 2, 1), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="unknown backend"):
        MaskedLinear(3, 2, backend="cuda!")
    with pytest.raises(ValueError, match=r"backend 'cpp'.*reference, triton"):
        MaskedLinear(3, 2, backend="cpp")
    with pytest.raises(TypeError, match="not a MaskedLinear"):
        add_lora(net0, LoRA(), names=["0"])
    with pytest.raises(ValueError, match="no module named"):
        add_lora(net, LoRA(), names=["9"])
    with pytest.raises(ValueError, match="r must be an int >= 1"):
        LoRA(r=0)
    # tied weights and MultiheadAttention's out_proj
    emb = nn.Embedding(5, 4)
    head = nn.Linear(4, 5, bias=False)
    head.weight = emb.weight
    with pytest.raises(ValueError, match="tied"):
        apply_masks(nn.ModuleDict({"emb": emb, "head": head}), {"head": rand_mask(5, 4)})
    mha = nn.ModuleDict({"attn": nn.MultiheadAttention(4, 1)})
    with pytest.raises(ValueError, match="out_proj"):
        apply_masks(mha, {"attn.out_proj": rand_mask(4, 4)})
    # a LoRA layer must be merged before re-masking
    add_lora(net, LoRA(2, 4), names=["0"])
    with pytest.raises(TypeError, match="merge_lora"):
        apply_masks(net, {"0": masks["0"]})


def test_apply_masks_on_a_masked_layer_prunes_further():
    net, masks = _net()
    tighter = masks["0"] & rand_mask(16, 12, 0.5, seed=7)
    apply_masks(net, {"0": tighter})
    assert torch.equal(net[0].mask, tighter)
    assert (net[0].weight[~tighter] == 0).all()


def test_backend_fixture_agreement(backend):
    """Every backend the masked layers have gives the reference's results (float32)."""
    lo, mask = lora_layer(d_in=20, d_out=16, r=4, dtype=torch.float32)
    lo.weight.requires_grad_(True)
    x = torch.randn(2, 5, 20, requires_grad=True)
    out = {}
    for b in ("reference", backend):
        lo.backend = b
        for p in (lo.lora_A, lo.lora_B, lo.weight):
            p.grad = None
        x.grad = None
        y = lo(x)
        y.pow(2).sum().backward()
        out[b] = [t.detach().clone() for t in (y, x.grad, lo.lora_A.grad, lo.lora_B.grad, lo.weight.grad)]
    for a, b in zip(out["reference"], out[backend]):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5 * float(a.abs().max()))
    assert (out[backend][4][~mask] == 0).all()


def test_triton_is_refused_for_other_dtypes_and_for_atomics_under_deterministic_algorithms():
    t32, t64 = torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.float64)
    assert ops._triton_ok(t32)("triton") == ""
    assert ops._triton_ok(t32)("reference") == ""
    assert "float16, bfloat16 or float32" in ops._triton_ok(t64)("triton")
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert "atomics" in ops._triton_ok(t32, atomics=True)("triton")
        assert ops._triton_ok(t32)("triton") == ""  # kernels without atomics stay allowed
    finally:
        torch.use_deterministic_algorithms(was)
    assert ops._triton_ok(t32, atomics=True)("triton") == ""


def test_moved_names_of_masked_warn_and_still_work():
    import fastnips.prune.surgery as surgery

    with pytest.warns(DeprecationWarning, match="fastnips.prune.surgery.apply_masks"):
        assert mm.apply_masks is surgery.apply_masks
    assert mm.pack_mask is pack_mask
    with pytest.warns(DeprecationWarning, match="CHUNK_BYTES"):
        assert mm.CHUNK_BYTES == pb.CHUNK_BYTES
    with pytest.raises(AttributeError):
        mm.no_such_name  # noqa: B018
