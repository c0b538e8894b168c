"""Sampler overhead: the sampler's own work (driver + updates, no model) per model call, against one forward of the
small U-Net on a 64x3x32x32 batch (issue 6, item 6: target < 1 %).

Group ``sampler overhead 64x3x32x32``, rows:

* ``unet-forward``: one call of ``EDMDenoiser(SmallUNet(**CIFAR_CONFIG))`` on the batch (the yardstick);
* ``fds-lorenz-time``, ``fds-gaussian``, ``edm``, ``heun``: our samplers, 10 Heun steps (19 evaluations) with a
  *null model* that returns a fixed tensor (no work), so the time is the sampler's own: driver draws, churn,
  Euler/Heun updates, finiteness checks;
* ``kdiff-style-edm``: the same EDM Algorithm 2 loop written plainly with torch ops, k-diffusion's way
  (``torch.randn_like`` per step), as the peer.

``extra_info["per_call_ms"]`` is the median divided by the evaluations; ``bench/README.md`` quotes it as a
fraction of ``unet-forward``. Every sampler row checks its output: ``edm`` and ``fds-gaussian`` equal the peer
loop fed with the same Gaussian stream (1e-6 relative), ``heun`` equals FDS with gamma 0 bit for bit, and
``fds-lorenz-time`` is finite and differs from ``heun``.

    OMP_NUM_THREADS=2 pytest bench/diffusion/bench_overhead.py
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from fastnips.diffusion import samplers as S  # noqa: E402
from fastnips.diffusion.drivers import Gaussian  # noqa: E402
from fastnips.diffusion.models import CIFAR_CONFIG, EDMDenoiser, SmallUNet  # noqa: E402
from fastnips.diffusion.schedules import get_sigmas_karras  # noqa: E402

SHAPE = (64, 3, 32, 32)
STEPS = 10
GAMMA = 0.2
ROWS = ["unet-forward", "fds-lorenz-time", "fds-gaussian", "edm", "heun", "kdiff-style-edm"]


@functools.lru_cache(maxsize=1)
def _setup():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=g) * 80.0
    D = torch.randn(SHAPE, generator=g) * 0.5
    sigmas = get_sigmas_karras(STEPS, 0.002, 80.0, 7.0).float()
    torch.manual_seed(0)
    unet = EDMDenoiser(SmallUNet(**CIFAR_CONFIG)).eval()
    return x, D, sigmas, unet


def _null(D):
    def model(x, sigma, **kw):
        return D
    return model


def kdiff_style_edm(model, x, sigmas, gamma, noise):
    """EDM Algorithm 2 with a fixed gamma, written as k-diffusion's sample_heun loop (the peer)."""
    s_in = x.new_ones([x.shape[0]])
    for i in range(len(sigmas) - 1):
        sigma_hat = sigmas[i] * (gamma + 1)
        eps = noise()
        x = x + eps * (sigma_hat ** 2 - sigmas[i] ** 2) ** 0.5
        denoised = model(x, sigma_hat * s_in)
        d = (x - denoised) / sigma_hat
        dt = sigmas[i + 1] - sigma_hat
        if sigmas[i + 1] == 0:
            x = x + d * dt
        else:
            x_2 = x + d * dt
            denoised_2 = model(x_2, sigmas[i + 1] * s_in)
            d_2 = (x_2 - denoised_2) / sigmas[i + 1]
            x = x + (d + d_2) / 2 * dt
    return x


def _gauss_stream(seed):
    g = torch.Generator().manual_seed(seed)
    return lambda: torch.randn(SHAPE, generator=g)


@pytest.mark.parametrize("row", ROWS)
def test_overhead(machine_facts, row):
    benchmark = machine_facts
    x, D, sigmas, unet = _setup()
    benchmark.group = "sampler overhead 64x3x32x32"
    nfe = 2 * STEPS - 1
    model = _null(D)
    if row == "unet-forward":
        s = torch.full((SHAPE[0],), 1.0)
        with torch.no_grad():
            out = benchmark(lambda: unet(x / 80.0, s))
        assert out.shape == SHAPE
        assert torch.isfinite(out).all()
        benchmark.extra_info.update(per_call_ms=benchmark.stats.stats.median * 1e3 if benchmark.stats else None,
                                    params=sum(p.numel() for p in unet.parameters()))
        return
    def make(model):
        if row == "fds-lorenz-time":
            return lambda: S.sample_fds(model, x, sigmas, disable=True, driver="lorenz", seed=1, gamma=GAMMA)
        if row == "fds-gaussian":
            return lambda: S.sample_fds(model, x, sigmas, disable=True, driver=Gaussian(SHAPE, seed=1), gamma=GAMMA)
        if row == "edm":
            st = _gauss_stream(1)
            return lambda: S.sample_heun(model, x, sigmas, disable=True, s_churn=GAMMA * STEPS,
                                         noise_sampler=lambda a, b: st())
        if row == "heun":
            return lambda: S.sample_heun(model, x, sigmas, disable=True)
        return lambda: kdiff_style_edm(model, x, sigmas, GAMMA, _gauss_stream(1))

    with torch.no_grad():
        out = benchmark(make(model))  # timed with the null model: the sampler's own work only
    if benchmark.stats:
        benchmark.extra_info.update(per_call_ms=benchmark.stats.stats.median * 1e3 / nfe, evaluations=nfe)
    assert torch.isfinite(out).all()
    # checked with a model whose output depends on x (the null model's last step returns D whatever the noise)
    lin = lambda x, sigma, **kw: 0.5 * x
    with torch.no_grad():
        got = make(lin)()
        peer = kdiff_style_edm(lin, x, sigmas, GAMMA, _gauss_stream(1))
        heun = S.sample_heun(lin, x, sigmas, disable=True)
    assert torch.isfinite(got).all()
    if row in ("fds-gaussian", "edm", "kdiff-style-edm"):
        assert (got - peer).abs().max().item() <= 1e-6 * max(1.0, peer.abs().max().item())
    elif row == "heun":
        assert torch.equal(got, S.sample_fds(lin, x, sigmas, disable=True, gamma=0.0))
    else:
        assert (got - heun).abs().max().item() > 1e-3 * heun.abs().max().item()  # the driver did inject noise
