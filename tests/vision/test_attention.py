"""attention_with_bias: compact spec == modules, Triton kernel (interpreter) == reference, gradients, custom op
under torch.compile, flex, errors."""

from __future__ import annotations

import pytest
import torch

from fastnips import _backend
from fastnips.vision import FreqRelPosBias, SwinRelPosBias
from fastnips.vision.attention import (
    ATTENTION_BACKENDS,
    BiasSpec,
    attention_backends,
    attention_with_bias,
    bias_spec,
)

B, H, M, D = 1, 2, 4, 16
N = M * M


def _randomize(mod, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mod.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return mod


def _qkv(shape=(B, H, N, D), dtype=torch.float32, seed=1, grad=False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype).requires_grad_(grad) for _ in range(3)]


MODULES = {
    "freq": lambda: FreqRelPosBias(H, M),  # alias-free 7x7 grid
    "freq_circular": lambda: FreqRelPosBias(H, M, grid=M),
    "freq_band": lambda: FreqRelPosBias(H, (M, M), param="band"),
    "freq_rect": lambda: FreqRelPosBias(H, (2, 8), grid=(5, 9)),
    "swin": lambda: SwinRelPosBias(H, M),
    "swin_rect": lambda: SwinRelPosBias(H, (8, 2)),
}


def _needs_triton():
    why = _backend.why_unavailable("triton")
    if why:
        pytest.skip(f"triton not available: {why}")


# ------------------------------------------------------------------------------------------------ spec
@pytest.mark.parametrize("name", sorted(MODULES))
def test_spec_reproduces_module_exactly(name):
    mod = _randomize(MODULES[name]()).double()
    spec = bias_spec(mod)
    assert spec.periodic == name.startswith("freq")
    assert torch.equal(spec.dense(), mod())
    n = spec.window[0] * spec.window[1]
    assert spec.dense().shape == (H, n, n)


def test_spec_offsets_and_index():
    swin = bias_spec(_randomize(SwinRelPosBias(H, (3, 5))))
    assert swin.offset == (2, 4)
    assert swin.grid == (5, 9)
    from fastnips.vision import periodic_offset_index, relative_position_index

    assert torch.equal(swin.index(), relative_position_index((3, 5)))
    freq = bias_spec(FreqRelPosBias(H, (3, 5), grid=(4, 6)))
    assert freq.offset == (0, 0)
    assert torch.equal(freq.index(), periodic_offset_index((3, 5), (4, 6)))


def test_spec_gradient_reaches_module():
    for name in ("freq", "swin"):
        mod = _randomize(MODULES[name]())
        q, k, v = _qkv()
        attention_with_bias(q, k, v, mod, backend="reference").square().sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mod.parameters())


# --------------------------------------------------------------------------------------------- triton
@pytest.mark.parametrize("name", ["freq", "freq_circular", "swin", "freq_rect", "swin_rect"])
def test_triton_forward_fp32(name):
    _needs_triton()
    mod = _randomize(MODULES[name]())
    q, k, v = _qkv()
    with torch.no_grad():
        out = attention_with_bias(q, k, v, mod, backend="triton")
        ref = attention_with_bias(q, k, v, mod, backend="reference")
    assert out.shape == ref.shape
    assert out.dtype == torch.float32
    assert (out - ref).abs().max() < 1e-4


def test_triton_forward_many_blocks_and_strides(monkeypatch):
    """6x6 window (N = 36) with 16 x 16 tiles: 3 key blocks (online softmax), ragged last block, masked rows;
    non-contiguous q/k/v (a transposed (B, N, H, D) layout), a custom scale."""
    _needs_triton()
    from fastnips.kernels import freqbias as tk

    monkeypatch.setattr(tk, "fwd_blocks", lambda n, d: (16, 16, 16, 4))
    mod = _randomize(FreqRelPosBias(3, 6, grid=(7, 11)))
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in _qkv((2, 3, 36, 16)))
    assert not q.is_contiguous()
    with torch.no_grad():
        out = attention_with_bias(q, k, v, mod, backend="triton", scale=0.3)
        ref = attention_with_bias(q, k, v, mod, backend="reference", scale=0.3)
    assert (out - ref).abs().max() < 1e-4


def test_triton_forward_bf16():
    """Under the interpreter the kernel upcasts bf16 to fp32 (triton 3.7.1 interprets bf16 dots wrongly), so
    it differs from the fp32 reference on the same rounded inputs only by the bf16 rounding of the output."""
    _needs_triton()
    mod = _randomize(MODULES["freq"]())
    q, k, v = _qkv(dtype=torch.bfloat16)
    with torch.no_grad():
        out = attention_with_bias(q, k, v, mod, backend="triton")
        ref = attention_with_bias(q.float(), k.float(), v.float(), mod, backend="reference")
    assert out.dtype == torch.bfloat16
    assert (out.float() - ref).abs().max() < 2e-2  # bf16 output rounding: |o| < 4, eps 2^-8


@pytest.mark.parametrize("name", ["freq", "swin", "freq_band"])
def test_triton_backward_matches_reference(name):
    _needs_triton()
    grads = []
    for backend in ("triton", "reference"):
        mod = _randomize(MODULES[name]())
        q, k, v = _qkv(grad=True)
        out = attention_with_bias(q, k, v, mod, backend=backend)
        go = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
        grads.append(torch.autograd.grad(out, [q, k, v, *mod.parameters()], go))
    for a, b in zip(*grads):
        assert a.shape == b.shape
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())


def test_triton_backward_kernel_table_gradcheck():
    """Gradient of the raw (H, Gh, Gw) table through the custom op, against finite differences (float64 is not
    a kernel dtype, so: float32 analytic vs the reference's float32 autograd on a table leaf)."""
    _needs_triton()
    q, k, v = _qkv(grad=True)
    tab = torch.randn(H, 7, 7, requires_grad=True)
    spec = BiasSpec(tab, (M, M), (7, 7))
    out = attention_with_bias(q, k, v, spec, backend="triton")
    (g,) = torch.autograd.grad(out.square().sum(), [tab])
    tab2 = tab.detach().clone().requires_grad_(True)
    ref = attention_with_bias(q, k, v, BiasSpec(tab2, (M, M), (7, 7)), backend="reference")
    (g2,) = torch.autograd.grad(ref.square().sum(), [tab2])
    assert (g - g2).abs().max() < 1e-4


@pytest.mark.parametrize(("grid", "periodic"), [((7, 7), True), ((4, 5), True), ((5, 5), False)])
def test_triton_backward_kernel_many_blocks(monkeypatch, grid, periodic):
    """The backward kernels over several query and key tiles (16 x 16 tiles, N = 9 or 35: ragged last tile),
    strided inputs, and tables smaller than the alias-free grid (wrap-around) and Swin's: against the torch oracle."""
    _needs_triton()
    from fastnips.kernels import freqbias as tk
    from fastnips.vision.attention import _grads_reference

    monkeypatch.setattr(tk, "bwd_blocks", lambda N, D: (16, 16, 16, 4))
    win = (3, 3) if not periodic else (5, 7)
    N = win[0] * win[1]
    g = torch.Generator().manual_seed(3)
    base = torch.randn(2, N, 3, 2, 8, generator=g)  # (B, N, 3 = q/k/v, H, D) -> strided views
    q, k, v = (base[:, :, i].transpose(1, 2) for i in range(3))
    tab = torch.randn(2, *grid, generator=g)
    offset = (0, 0) if periodic else (win[0] - 1, win[1] - 1)
    out, lse = tk.attention_freqbias_fwd(q, k, v, tab, win, offset, 0.3)
    do = torch.randn(out.shape, generator=g)
    got = tk.attention_freqbias_bwd(q, k, v, tab, out, lse, do, win, offset, 0.3)
    want = _grads_reference(q, k, v, tab, win, offset, 0.3, do)
    for name, a, b in zip(("dq", "dk", "dv", "dtable"), got, want):
        assert a.shape == b.shape, name
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item()), name


def test_triton_backward_bf16():
    """bf16 gradients against the float32 oracle on the same (bf16-rounded) inputs."""
    _needs_triton()
    mod = _randomize(FreqRelPosBias(H, M))
    q, k, v = (t.to(torch.bfloat16).requires_grad_(True) for t in _qkv())
    out = attention_with_bias(q, k, v, mod, backend="triton")
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    got = torch.autograd.grad(out, [q, k, v, *mod.parameters()], go)
    q2, k2, v2 = (t.detach().float().requires_grad_(True) for t in (q, k, v))
    ref = attention_with_bias(q2, k2, v2, mod, backend="reference")
    want = torch.autograd.grad(ref, [q2, k2, v2, *mod.parameters()], go.float())
    for a, b in zip(got, want):
        assert (a.float() - b).abs().max() < 3e-2 * max(1.0, b.abs().max().item())


def test_custom_op_opcheck():
    _needs_triton()
    q, k, v = _qkv(grad=True)
    tab = torch.randn(H, 7, 7, requires_grad=True)
    torch.library.opcheck(torch.ops.fastnips.attention_freqbias.default, (q, k, v, tab, [M, M], [0, 0], 0.25),
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


@pytest.mark.parametrize("compiler", ["eager", "aot_eager"])
def test_torch_compile_custom_op(compiler):
    _needs_triton()
    torch._dynamo.reset()
    tab = torch.randn(H, 7, 7, requires_grad=True)

    def f(q, k, v, tab):
        return torch.ops.fastnips.attention_freqbias(q, k, v, tab, [M, M], [0, 0], 0.25)[0].square().sum()

    cf = torch.compile(f, backend=compiler, fullgraph=True)
    q, k, v = _qkv(grad=True)
    loss = cf(q, k, v, tab)
    g = torch.autograd.grad(loss, [q, k, v, tab])
    q2, k2, v2 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    tab2 = tab.detach().clone().requires_grad_(True)
    ref = attention_with_bias(q2, k2, v2, BiasSpec(tab2, (M, M), (7, 7)), backend="reference", scale=0.25)
    ref = ref.square().sum()
    g2 = torch.autograd.grad(ref, [q2, k2, v2, tab2])
    assert abs(loss.item() - ref.item()) < 1e-4 * max(1.0, abs(ref.item()))
    for a, b in zip(g, g2):
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())


def test_torch_compile_public_function():
    _needs_triton()
    torch._dynamo.reset()
    mod = _randomize(FreqRelPosBias(H, M))
    cf = torch.compile(lambda q, k, v: attention_with_bias(q, k, v, bias_spec(mod), backend="triton"),
                       backend="aot_eager")
    q, k, v = _qkv()
    with torch.no_grad():
        out = cf(q, k, v)
        ref = attention_with_bias(q, k, v, mod, backend="reference")
    assert (out - ref).abs().max() < 1e-4


# ----------------------------------------------------------------------------------------------- flex
def test_flex_forward():
    if "flex" not in attention_backends("cpu"):
        pytest.skip("flex_attention not importable in this torch")
    for name in ("freq", "swin"):
        mod = _randomize(MODULES[name]())
        q, k, v = _qkv()
        with torch.no_grad():
            out = attention_with_bias(q, k, v, mod, backend="flex")
            ref = attention_with_bias(q, k, v, mod, backend="reference")
            dense = attention_with_bias(q, k, v, mod(), backend="flex")
        assert (out - ref).abs().max() < 1e-5
        assert (dense - ref).abs().max() < 1e-5


def test_flex_backward_on_cpu_is_a_clear_error():
    if "flex" not in attention_backends("cpu"):
        pytest.skip("flex_attention not importable in this torch")
    q, k, v = _qkv(grad=True)
    with pytest.raises(ValueError, match="no backward on CPU"):
        attention_with_bias(q, k, v, FreqRelPosBias(H, M), backend="flex")


# ---------------------------------------------------------------------------------------------- misc
def test_reference_dense_and_auto():
    mod = _randomize(MODULES["swin"]())
    q, k, v = _qkv()
    a = attention_with_bias(q, k, v, mod())
    b = attention_with_bias(q, k, v, mod)  # auto on CPU: reference
    # explicit softmax
    p = torch.softmax(q @ k.transpose(-1, -2) / D**0.5 + mod(), -1)
    assert (a - p @ v).abs().max() < 1e-5
    assert torch.equal(a, b)
    assert "reference" in attention_backends("cpu")
    assert set(attention_backends("cpu")) <= set(ATTENTION_BACKENDS)


def test_errors():
    mod = FreqRelPosBias(H, M)
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="unknown backend"):
        attention_with_bias(q, k, v, mod, backend="cuda-magic")
    with pytest.raises(ValueError, match="has no 'cpp' backend"):  # a house backend this op does not implement
        attention_with_bias(q, k, v, mod, backend="cpp")
    with pytest.raises(ValueError, match="N must equal Mh"):
        attention_with_bias(*_qkv((B, H, 15, D)), mod)
    with pytest.raises(ValueError, match="heads"):
        attention_with_bias(*_qkv((B, 3, N, D)), mod)
    with pytest.raises(ValueError, match="one shape"):
        attention_with_bias(q, k[..., :8], v, mod)
    with pytest.raises(ValueError, match=r"\(B, H, N, D\)"):
        attention_with_bias(q[0], k[0], v[0], mod)
    with pytest.raises(ValueError, match="dense bias must have shape"):
        attention_with_bias(q, k, v, torch.zeros(H, N, N + 1))
    with pytest.raises(ValueError, match="one dtype"):
        attention_with_bias(q, k.double(), v, mod)
    with pytest.raises(ValueError, match="scale"):
        attention_with_bias(q, k, v, mod, scale=float("nan"))
    with pytest.raises(ValueError, match="FreqRelPosBias"):
        bias_spec(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="kernel has shape"):
        BiasSpec(torch.zeros(H, 7, 7), (4, 4), (7, 6))
    with pytest.raises(ValueError, match="non-periodic"):
        BiasSpec(torch.zeros(H, 5, 5), (4, 4), (5, 5), periodic=False)
    with pytest.raises(ValueError, match="floating"):
        BiasSpec(torch.zeros(H, 7, 7, dtype=torch.long), (4, 4), (7, 7))
    if not _backend.why_unavailable("triton"):
        with pytest.raises(ValueError, match="compact table"):
            attention_with_bias(q, k, v, mod(), backend="triton")


def test_triton_unavailable_is_a_clear_error(monkeypatch, fresh_backends):
    monkeypatch.setenv("FASTNIPS_DISABLE_TRITON", "1")
    _backend.refresh()
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="not available here"):
        attention_with_bias(q, k, v, FreqRelPosBias(H, M), backend="triton")


@pytest.mark.parametrize(("grid", "periodic"), [((3, 2), True), ((9, 4), True), ((7, 7), False)])
def test_triton_forward_raw_spec_grids(grid, periodic):
    """A BiasSpec grid smaller than the window (modulo wraps several times: the kernel's general path), a
    larger one, and a raw Swin-layout table."""
    _needs_triton()
    tab = torch.randn(H, *grid, generator=torch.Generator().manual_seed(3))
    spec = BiasSpec(tab, (M, M), grid, periodic=periodic)
    q, k, v = _qkv()
    out = attention_with_bias(q, k, v, spec, backend="triton")
    ref = attention_with_bias(q, k, v, spec.dense(), backend="reference")
    assert (out - ref).abs().max() < 1e-4
