"""Attention with a relative position bias: fastnips vs SDPA and FlexAttention, D = 32.

Groups ``attention N=<N> H=<H>`` for windows 7x7, 14x14, 28x28 (N = 49, 196, 784) and H = 3, 6, 12, batch 8,
the bias a :class:`~fastnips.vision.FreqRelPosBias` on the alias-free grid. Rows:

* ``sdpa-nobias``: ``scaled_dot_product_attention`` without a bias (the floor; flash on a GPU);
* ``sdpa-bias``: SDPA with the materialised (H, N, N) bias as ``attn_mask`` (the bias gather is timed too);
* ``flex``: ``flex_attention`` with a table-lookup ``score_mod`` (compiled on CUDA, eager unfused on CPU);
* ``fastnips-triton``: the in-kernel bias (CUDA only; skipped otherwise).

Groups ``spectral mixer N=<N> C=<C>`` (same windows, C = 64, batch 8, float32): the DDR spectral branch
:class:`~fastnips.vision.SpectralMixer` vs a plain ``torch.fft`` function in GFNet's layout (the peer a user would
write) and vs the same circular convolution as a dense circulant matmul (``circulant``, N <= 196: the cost of
mixing the tokens through an (N, N) matrix per channel). All three checked equal (1e-4).

Forward only, no grad, float32 on CPU, bfloat16 on CUDA. Every row checks its output against ``sdpa-bias``
(``sdpa-nobias`` against SDPA with a zero bias): 1e-4 in float32, 2e-2 in bfloat16.

Smoke: ``OMP_NUM_THREADS=1 pytest bench/vision --benchmark-disable``;
GPU table: ``python bench/vision/gpu_attention.py``.
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from fastnips.vision import FreqRelPosBias, SpectralMixer  # noqa: E402
from fastnips.vision.attention import attention_with_bias, bias_spec  # noqa: E402

WINDOWS = [7, 14, 28]
HEADS = [3, 6, 12]
IMPLS = ["sdpa-nobias", "sdpa-bias", "flex", "fastnips-triton"]
BATCH, D = 8, 32


@functools.lru_cache(maxsize=4)
def _case(m: int, h: int, device: str):
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    g = torch.Generator().manual_seed(m * 100 + h)
    q, k, v = (torch.randn(BATCH, h, m * m, D, generator=g).to(device, dtype) for _ in range(3))
    mod = FreqRelPosBias(h, m, init_std=1.0).to(device)
    with torch.no_grad():
        spec = bias_spec(mod)
        spec = type(spec)(spec.kernel.detach(), spec.window, spec.grid, spec.periodic)
        ref = attention_with_bias(q, k, v, spec, backend="reference")
    return q, k, v, spec, ref


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("h", HEADS)
@pytest.mark.parametrize("m", WINDOWS)
def test_attention(machine_facts, m, h, impl):
    benchmark = machine_facts
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if impl == "fastnips-triton" and device != "cuda":
        pytest.skip("the Triton kernel needs a CUDA device (the interpreter is far too slow to time)")
    q, k, v, spec, ref = _case(m, h, device)
    n = m * m
    benchmark.group = f"attention N={n} H={h}"
    benchmark.extra_info.update(N=n, H=h, D=D, batch=BATCH, dtype=str(q.dtype), flops=4 * BATCH * h * n * n * D)
    if impl == "sdpa-nobias":
        fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
        zero = torch.zeros(h, n, n, dtype=q.dtype, device=q.device)
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=zero)
    else:
        backend = {"sdpa-bias": "reference", "flex": "flex", "fastnips-triton": "triton"}[impl]
        fn = lambda: attention_with_bias(q, k, v, spec, backend=backend)
        want = ref
    with torch.no_grad():
        out = benchmark(fn)
    tol = 1e-4 if q.dtype == torch.float32 else 2e-2
    assert (out.float() - want.float()).abs().max().item() < tol


MIXERS = ["fastnips", "torch-fft", "circulant"]
CHANNELS = 64


def _gfnet_filter(x, weight, h, w):
    """GFNet's global filter written inline with torch.fft: (B, N, C) tokens, weight (h, w//2+1, C, 2)."""
    B, N, C = x.shape
    z = torch.fft.rfft2(x.reshape(B, h, w, C), dim=(1, 2), norm="ortho")
    z = z * torch.view_as_complex(weight)
    return torch.fft.irfft2(z, s=(h, w), dim=(1, 2), norm="ortho").reshape(B, N, C)


@functools.lru_cache(maxsize=2)
def _mixer_case(m: int):
    g = torch.Generator().manual_seed(m)
    x = torch.randn(BATCH, m * m, CHANNELS, generator=g)
    mix = SpectralMixer(CHANNELS, m)
    with torch.no_grad():
        mix.complex_weight.copy_(torch.randn(mix.complex_weight.shape, generator=g))
        ref = mix(x)
    return x, mix, ref


def _circulant(mix, m):
    """(C, N, N) matrices K_c with (K_c x)[i] = sum_j k_c[(r_i - r_j) mod m, (c_i - c_j) mod m] x[j]: the mixer as
    a dense token-mixing matrix per channel (from the mixer's response to unit impulses)."""
    n = m * m
    eye = torch.eye(n).reshape(n, n, 1).expand(n, n, CHANNELS)  # impulse j at token j, every channel
    cols = mix(eye.contiguous())  # (j, i, c) = response at token i to an impulse at j
    return cols.permute(2, 1, 0).contiguous()  # (c, i, j)


@pytest.mark.parametrize("impl", MIXERS)
@pytest.mark.parametrize("m", WINDOWS)
def test_spectral_mixer(machine_facts, m, impl):
    benchmark = machine_facts
    if impl == "circulant" and m > 14:
        pytest.skip("the dense circulant (C x N x N) is only timed up to N = 196")
    x, mix, ref = _mixer_case(m)
    n = m * m
    benchmark.group = f"spectral mixer N={n} C={CHANNELS}"
    benchmark.extra_info.update(N=n, C=CHANNELS, batch=BATCH)
    if impl == "fastnips":
        fn = lambda: mix(x)
    elif impl == "torch-fft":
        w = mix.complex_weight.detach()
        fn = lambda: _gfnet_filter(x, w, m, m)
    else:
        with torch.no_grad():
            K = _circulant(mix, m)
        fn = lambda: torch.einsum("cij,bjc->bic", K, x)
    with torch.no_grad():
        out = benchmark(fn)
    assert (out - ref).abs().max().item() < 1e-4 * max(1.0, ref.abs().max().item())
