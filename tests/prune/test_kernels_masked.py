"""Triton kernels of fastnips.kernels.masked against the torch reference (and a float64 oracle), under
TRITON_INTERPRET=1 on CPU at small sizes (a real GPU runs them too when one is present).

Stated tolerances, as max |kernel - oracle| / max |oracle| (oracle: the same product in float64 from the
same rounded inputs):

* float32: 1e-5 (``input_precision="ieee"``: no TF32),
* float16: 2e-3 (≈ 4 ulps of fp16 at the output's scale),
* bfloat16: 1.6e-2 (≈ 4 ulps of bf16; the bf16 tile of (BA) ⊙ M is rounded before its dot, as in the
  reference's bf16 ``B_c @ A``).

The torch reference of :mod:`fastnips.prune.masked_ops` (``backend="reference"``) is held to the same bounds.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from fastnips import _backend  # noqa: E402
from fastnips.prune import masked as mm  # noqa: E402
from fastnips.prune.bits import mask_rows_, pack_mask  # noqa: E402

if _backend.why_unavailable("triton"):
    pytest.skip(f"triton backend not available: {_backend.why_unavailable('triton')}", allow_module_level=True)

from fastnips.kernels import masked as kp  # noqa: E402

DEV = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
DTYPES = list(TOL)


def problem(T, d_out, d_in, r, dtype, seed=0, p=0.5):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(d_out, d_in, generator=g) >= p
    t = lambda *s: torch.randn(*s, generator=g).to(dtype).to(DEV)
    W = (torch.randn(d_out, d_in, generator=g) * mask).to(dtype).to(DEV)
    return dict(mask=mask.to(DEV), bits=pack_mask(mask).to(DEV), x=t(T, d_in), dy=t(T, d_out), W=W, A=t(r, d_in),
                B=t(d_out, r), bias=t(d_out))


def close(got, want64, dtype):
    got = got.double()
    scale = float(want64.abs().max()) or 1.0
    err = float((got - want64).abs().max()) / scale
    assert err <= TOL[dtype], f"relative error {err:.3g} > {TOL[dtype]} ({dtype})"


@pytest.fixture(params=["default", "small-tiles"])
def tiles(request, monkeypatch):
    """Default tiles (one tile at these sizes), or 16-wide tiles: several tiles with ragged edges."""
    if request.param == "small-tiles":
        monkeypatch.setattr(kp, "grad_blocks", lambda T, o, i: (16, 16, 16))
        monkeypatch.setattr(kp, "mm_blocks", lambda M, N, K: (16, 16, 16))
    return request.param


SHAPES = [(10, 16, 32, 4), (7, 37, 45, 5)]  # (T, d_out, d_in, r)
# every kernel test runs over both shapes and every dtype
CASES = pytest.mark.parametrize(("dtype", "shape"), [(d, s) for s in SHAPES for d in DTYPES],
                                ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v)[6:])


@CASES
def test_masked_weight_grad(dtype, shape, tiles):
    T, o, i, r = shape
    P = problem(T, o, i, r, dtype)
    dw = kp.masked_weight_grad(P["dy"], P["x"], P["bits"])
    want = (P["dy"].double().T @ P["x"].double()) * P["mask"]
    assert dw.dtype == dtype
    assert dw.shape == (o, i)
    assert (dw[~P["mask"]] == 0).all()
    close(dw, want, dtype)
    ref = mask_rows_(P["dy"].T.mm(P["x"]), P["bits"])  # the torch reference, same dtype
    close(ref, want, dtype)


@CASES
def test_masked_lora_forward_and_input_grad(dtype, shape, tiles):
    T, o, i, r = shape
    P = problem(T, o, i, r, dtype, seed=1)
    s = 2.0
    D = (P["B"].double() @ P["A"].double()) * P["mask"]
    y = kp.masked_lora_forward(P["x"], P["W"], P["A"], P["B"], P["bits"], s, P["bias"])
    close(y, P["x"].double() @ (P["W"].double() + s * D).T + P["bias"].double(), dtype)
    y0 = kp.masked_lora_forward(P["x"], P["W"], P["A"], P["B"], P["bits"], s)
    close(y0, P["x"].double() @ (P["W"].double() + s * D).T, dtype)
    dx = kp.masked_lora_input_grad(P["dy"], P["W"], P["A"], P["B"], P["bits"], s)
    close(dx, P["dy"].double() @ (P["W"].double() + s * D), dtype)
    dx_lora = kp.masked_lora_input_grad(P["dy"], None, P["A"], P["B"], P["bits"], s)
    close(dx_lora, s * P["dy"].double() @ D, dtype)


@CASES
def test_masked_lora_backward(dtype, shape, tiles):
    T, o, i, r = shape
    P = problem(T, o, i, r, dtype, seed=2)
    s = 0.5
    G = (P["dy"].double().T @ P["x"].double()) * P["mask"]
    dA, dB, dW = kp.masked_lora_backward(P["dy"], P["x"], P["A"], P["B"], P["bits"], s, weight_grad=True)
    assert dA.dtype == dtype
    assert dB.dtype == dtype
    assert dA.shape == (r, i)
    assert dB.shape == (o, r)
    close(dA, s * P["B"].double().T @ G, dtype)
    close(dB, s * G @ P["A"].double().T, dtype)
    close(dW, G, dtype)
    assert (dW[~P["mask"]] == 0).all()
    _, _, none = kp.masked_lora_backward(P["dy"], P["x"], P["A"], P["B"], P["bits"], s)
    assert none is None


def test_strided_inputs_and_fully_pruned_tiles(tiles):
    P = problem(9, 40, 48, 3, torch.float32, seed=3)
    mask = P["mask"].clone()
    mask[:16] = False  # whole 16-row tiles with nothing kept: skipped, still written as zeros
    mask[:, 32:] = False
    bits = pack_mask(mask)
    xt = P["x"].T.contiguous().T  # column-major views
    dyt = P["dy"].T.contiguous().T
    dw = kp.masked_weight_grad(dyt, xt, bits)
    want = (P["dy"].double().T @ P["x"].double()) * mask
    assert (dw[~mask] == 0).all()
    close(dw, want, torch.float32)
    A, B = P["A"].T.contiguous().T, P["B"].T.contiguous().T
    dA, dB, _ = kp.masked_lora_backward(dyt, xt, A, B, bits, 1.5)
    close(dA, 1.5 * P["B"].double().T @ want, torch.float32)
    close(dB, 1.5 * want @ P["A"].double().T, torch.float32)
    Wt = P["W"].T.contiguous().T
    D = (P["B"].double() @ P["A"].double()) * mask
    close(kp.masked_lora_forward(xt, Wt, A, B, bits, 1.5), P["x"].double() @ (P["W"].double() + 1.5 * D).T,
          torch.float32)


def test_inf_products_on_pruned_entries_are_exactly_zero():
    if kp._interpreted():
        pytest.skip("the interpreter raises numpy's inf * 0 warning as an error (the reference is tested on CPU)")
    P = problem(6, 16, 24, 2, torch.float32, seed=4)
    x = P["x"].clone()
    x[:, 5] = float("inf")
    dw = kp.masked_weight_grad(P["dy"], x, P["bits"])
    assert (dw[~P["mask"]] == 0).all()
    assert torch.isinf(dw[P["mask"][:, 5], 5]).all()


def test_empty_token_batch():
    P = problem(0, 16, 24, 2, torch.float32)
    assert (kp.masked_weight_grad(P["dy"], P["x"], P["bits"]) == 0).all()
    assert kp.masked_lora_forward(P["x"], P["W"], P["A"], P["B"], P["bits"], 1.0).shape == (0, 16)


def test_argument_checks():
    P = problem(4, 16, 24, 2, torch.float32)
    with pytest.raises(ValueError, match="shape"):
        kp.masked_weight_grad(P["dy"], P["x"][:3], P["bits"])
    with pytest.raises(ValueError, match="bits"):
        kp.masked_weight_grad(P["dy"], P["x"], P["bits"][:, :2])
    with pytest.raises(TypeError, match="float16, bfloat16 or float32"):
        kp.masked_weight_grad(P["dy"].double(), P["x"].double(), P["bits"])
    with pytest.raises(TypeError, match="dtype"):
        kp.masked_lora_forward(P["x"], P["W"].half(), P["A"], P["B"], P["bits"], 1.0)
    with pytest.raises(TypeError, match="float"):
        kp.masked_lora_forward(P["x"], P["W"], P["A"], P["B"], P["bits"], torch.tensor(1.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layers_triton_backend_matches_reference(dtype):
    """The layers' autograd on backend="triton" against backend="reference", same dtype."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(24, 20, dtype=dtype, device=DEV)
    mask = (torch.rand(20, 24, device=DEV) >= 0.5)
    out = {}

    def masked(b):
        ml = mm.MaskedLinear.from_linear(torch.nn.Linear(24, 20, dtype=dtype, device=DEV), mask, backend=b)
        with torch.no_grad():
            ml.weight.copy_(lin.weight * mask)
            ml.bias.copy_(lin.bias)
        return ml

    for b in ("reference", "triton"):
        lo = mm.MaskedLoRALinear(masked(b), mm.LoRA(4, 8), generator=torch.Generator(DEV).manual_seed(0))
        with torch.no_grad():
            lo.lora_B.normal_(generator=torch.Generator(DEV).manual_seed(1))
        lo.weight.requires_grad_(True)
        x = torch.randn(2, 3, 24, generator=torch.Generator(DEV).manual_seed(2), device=DEV).to(dtype)
        x.requires_grad_(True)
        y = lo(x)
        y.float().pow(2).sum().backward()
        ml2 = masked(b)
        x2 = x.detach().clone()
        ml2(x2).float().pow(2).sum().backward()
        out[b] = [t.detach().double() for t in (y, x.grad, lo.lora_A.grad, lo.lora_B.grad, lo.weight.grad,
                                                  ml2.weight.grad)]
    for name, ref, got in zip(("y", "dx", "dA", "dB", "dW (LoRA)", "dW"), out["reference"], out["triton"]):
        scale = float(ref.abs().max()) or 1.0
        assert float((got - ref).abs().max()) / scale <= 2 * TOL[dtype], name
    assert (out["triton"][4][~mask] == 0).all()
    assert (out["triton"][5][~mask] == 0).all()
