"""attention_with_bias(mask=...): Swin's shifted-window mask (nW, N, N), window b % nW of the batch, in the
reference, Triton (interpreter) and flex paths, forward and backward, against the explicit softmax; errors."""

from __future__ import annotations

import pytest
import torch

from fastnips import _backend
from fastnips.vision import FreqRelPosBias, SwinRelPosBias, attention_with_bias
from fastnips.vision.attention import attention_backends


def swin_shift_mask(feat: int, window: int, shift: int, masked: float = -100.0) -> torch.Tensor:
    """Swin's SW-MSA mask, written from the paper: after the cyclic shift by ``shift``, the map splits into 3 x 3
    regions per axis [0, F-M), [F-M, F-s), [F-s, F); tokens of one window attend only within their region.
    Windows in raster order, tokens row-major in each window."""
    axis = torch.zeros(feat, dtype=torch.long)
    axis[feat - window:feat - shift] = 1
    axis[feat - shift:] = 2
    label = axis[:, None] * 3 + axis[None, :]  # (F, F)
    n = feat // window
    win = label.reshape(n, window, n, window).permute(0, 2, 1, 3).reshape(n * n, window * window)
    return torch.where(win[:, :, None] == win[:, None, :], 0.0, masked).double()


def _bias(kind, H=2, M=4, seed=0):
    """A bias of O(1) entries (seeded), so that it matters next to q k^T."""
    torch.manual_seed(seed)
    return FreqRelPosBias(H, M, init_std=1.0) if kind == "freq" else SwinRelPosBias(H, M, init_std=1.0)


def _qkv(B, H, N, D, dtype=torch.float32, seed=1, grad=False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn((B, H, N, D), generator=g).to(dtype).requires_grad_(grad) for _ in range(3)]


def _explicit(q, k, v, bias, mask, scale):
    """softmax(scale q k^T + B + mask[b % nW]) v with an explicit loop over the batch."""
    outs = []
    for b in range(q.shape[0]):
        logits = scale * q[b] @ k[b].transpose(-1, -2) + bias + mask[b % mask.shape[0]]
        outs.append(torch.softmax(logits, -1) @ v[b])
    return torch.stack(outs)


def _needs_triton():
    why = _backend.why_unavailable("triton")
    if why:
        pytest.skip(f"triton not available: {why}")


def test_shift_mask_shape_and_content():
    m = swin_shift_mask(8, 4, 2)
    assert m.shape == (4, 16, 16)
    assert torch.equal(m[0], torch.zeros(16, 16))  # the top-left window is one region
    assert (m[3] < 0).any()
    assert (m.diagonal(dim1=1, dim2=2) == 0).all()


@pytest.mark.parametrize("kind", ["freq", "swin"])
@pytest.mark.parametrize("masked", [-100.0, float("-inf")])
def test_reference_matches_explicit(kind, masked):
    H, M = 2, 4
    mod = _bias(kind, H, M).double()
    mask = swin_shift_mask(8, M, 2, masked)  # nW = 4
    q, k, v = _qkv(8, H, M * M, 8, torch.float64)  # 2 images x 4 windows
    out = attention_with_bias(q, k, v, mod, backend="reference", mask=mask, scale=0.3)
    want = _explicit(q, k, v, mod(), mask, 0.3)
    assert (out - want).abs().max() < 1e-12
    no_mask = attention_with_bias(q, k, v, mod, backend="reference", scale=0.3)
    assert (out - no_mask).abs().max() > 1e-2  # the mask matters
    assert (out[0] - no_mask[0]).abs().max() < 1e-12  # window 0 is one region: mask all zero


@pytest.mark.parametrize("kind", ["freq", "swin"])
def test_triton_forward_and_backward_with_mask(kind):
    _needs_triton()
    H, M = 2, 4
    mask = swin_shift_mask(8, M, 2).float()
    mask[1] = torch.where(mask[1] < 0, float("-inf"), 0.0)  # -inf entries too
    grads, outs = [], []
    for backend in ("triton", "reference"):
        mod = _bias(kind, H, M)
        q, k, v = _qkv(8, H, M * M, 16, grad=True)
        out = attention_with_bias(q, k, v, mod, backend=backend, mask=mask)
        go = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
        outs.append(out.detach())
        grads.append(torch.autograd.grad(out, [q, k, v, *mod.parameters()], go))
    assert (outs[0] - outs[1]).abs().max() < 1e-5
    for a, b in zip(*grads):
        assert a.shape == b.shape
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())


def test_triton_kernel_mask_many_tiles(monkeypatch):
    """16 x 16 tiles over N = 36 (3 tiles, ragged), strided q/k/v, 2 windows: forward and the raw backward
    kernels against the torch oracle with the mask; a tile whose keys are all -inf for some rows (online softmax
    starting from m = -inf)."""
    _needs_triton()
    from fastnips.kernels import freqbias as tk
    from fastnips.vision._attention_impl import _grads_reference

    monkeypatch.setattr(tk, "fwd_blocks", lambda n, d: (16, 16, 16, 4))
    monkeypatch.setattr(tk, "bwd_blocks", lambda n, d: (16, 16, 16, 4))
    g = torch.Generator().manual_seed(4)
    win, N = (6, 6), 36
    mask = swin_shift_mask(12, 6, 3, float("-inf")).float()  # nW = 4
    mask[2, :16, :16] = float("-inf")  # rows 0..15 see no key of the first tile ...
    mask[2, :16, 16:] = 0.0  # ... but all of the others
    base = torch.randn(8, N, 3, 2, 16, generator=g)  # (B, N, q/k/v, H, D) -> strided (B, H, N, D) views
    q, k, v = (base[:, :, i].transpose(1, 2) for i in range(3))
    tab = torch.randn(2, 11, 11, generator=g)
    out, lse = tk.attention_freqbias_fwd(q, k, v, tab, win, (5, 5), 0.25, mask)
    bias = tab.reshape(2, -1)[:, SwinRelPosBias(2, 6).relative_position_index]
    assert (out - _explicit(q, k, v, bias, mask, 0.25)).abs().max() < 1e-5
    do = torch.randn(out.shape, generator=g)
    got = tk.attention_freqbias_bwd(q, k, v, tab, out, lse, do, win, (5, 5), 0.25, mask)
    want = _grads_reference(q, k, v, tab, win, (5, 5), 0.25, do, mask)
    for name, a, b in zip(("dq", "dk", "dv", "dtable"), got, want):
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item()), name


def test_grads_oracle_with_mask_matches_autograd():
    """The oracle used above, against torch autograd of the explicit formula (float64)."""
    from fastnips.vision._attention_impl import _grads_reference

    mask = swin_shift_mask(8, 4, 2)
    q, k, v = _qkv(4, 2, 16, 8, torch.float64, grad=True)
    tab = torch.randn(2, 7, 7, dtype=torch.float64, requires_grad=True)
    bias = tab.reshape(2, -1)[:, SwinRelPosBias(2, 4).relative_position_index]
    out = _explicit(q, k, v, bias, mask, 0.4)
    do = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    want = torch.autograd.grad(out, [q, k, v, tab], do)
    got = _grads_reference(q.detach(), k.detach(), v.detach(), tab.detach(), (4, 4), (3, 3), 0.4, do, mask)
    for a, b in zip(got, want):
        assert (a.double() - b).abs().max() < 1e-5  # the oracle computes in float32


def test_flex_with_mask():
    if "flex" not in attention_backends("cpu"):
        pytest.skip("flex_attention not importable in this torch")
    mod = _bias("freq")
    mask = swin_shift_mask(8, 4, 2).float()
    q, k, v = _qkv(8, 2, 16, 16)
    with torch.no_grad():
        out = attention_with_bias(q, k, v, mod, backend="flex", mask=mask)
        ref = attention_with_bias(q, k, v, mod, backend="reference", mask=mask)
    assert (out - ref).abs().max() < 1e-5


def test_custom_op_opcheck_with_mask():
    _needs_triton()
    q, k, v = _qkv(4, 2, 16, 16, grad=True)
    tab = torch.randn(2, 7, 7, requires_grad=True)
    mask = swin_shift_mask(8, 4, 2).float()
    torch.library.opcheck(torch.ops.fastnips.attention_freqbias.default, (q, k, v, tab, [4, 4], [0, 0], 0.25, mask),
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


def test_mask_errors():
    mod = FreqRelPosBias(2, 4)
    q, k, v = _qkv(8, 2, 16, 8)
    good = swin_shift_mask(8, 4, 2).float()
    cases = [
        (good[:, :15], "shape"), (good[:3], "dividing the batch"), (good.long(), "floating"),
        (good.clone().fill_(float("nan")), "NaN"), (good.clone().fill_(float("inf")), r"\+inf"),
        (good.clone().fill_(float("-inf")), "-inf everywhere"), ("mask", "floating"),
    ]
    for bad, match in cases:
        with pytest.raises(ValueError, match=match):
            attention_with_bias(q, k, v, mod, mask=bad)
    qg = q.clone().requires_grad_(True)
    with pytest.raises(ValueError, match=r"mask\.detach"):
        attention_with_bias(qg, k, v, mod, mask=good.clone().requires_grad_(True))


def test_torch_compile_with_mask():
    """fullgraph compile of the public function with a mask (the value checks stay out of the trace)."""
    _needs_triton()
    from fastnips.vision import bias_spec

    torch._dynamo.reset()
    mod = _bias("freq")
    mask = swin_shift_mask(8, 4, 2).float()
    q, k, v = _qkv(8, 2, 16, 16)
    cf = torch.compile(lambda q, k, v, m: attention_with_bias(q, k, v, bias_spec(mod), backend="triton", mask=m),
                       backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        out = cf(q, k, v, mask)
        ref = attention_with_bias(q, k, v, mod, backend="reference", mask=mask)
    assert (out - ref).abs().max() < 1e-5
