"""DPM-Solver-fast and DPM-Solver-12/23 adaptive (issue 14 item 1d, "if they fit"): against k-diffusion's own
code where installed (its times are float32, so 1e-5), their convergence on a Gaussian target with an exact
flow, and the argument checks."""

from __future__ import annotations

import math

import pytest
import torch

from fastnips.diffusion.dpm_solver import sample_dpm_adaptive, sample_dpm_fast

from .kdiffusion_peer import kdiffusion_sampling
from .sampler_oracles import F64, gauss_model, start

TOL = dict(rtol=1e-4, atol=1e-4)      # k-diffusion's float32 times: measured up to 5e-5 on this GMM


def _bank(shape):
    """Noise by call order (k-diffusion's sigmas here are float32, so a noise keyed by sigma would differ)."""
    gen = torch.Generator().manual_seed(3)
    return lambda a, b: torch.randn(shape, generator=gen, dtype=F64)


@pytest.mark.parametrize("n", [9, 10, 11])
@pytest.mark.parametrize("eta", [0.0, 0.5])
def test_dpm_fast_equals_kdiffusion(gmm2, n, eta):
    kd = kdiffusion_sampling()
    x = start(32, 2, 80.0, seed=1)
    ours = sample_dpm_fast(gmm2, x, 0.02, 80.0, n, eta=eta, noise_sampler=_bank(x.shape))
    theirs = kd.sample_dpm_fast(gmm2, x, 0.02, 80.0, n, disable=True, eta=eta, noise_sampler=_bank(x.shape))
    torch.testing.assert_close(ours, theirs, **TOL)


@pytest.mark.parametrize("order", [2, 3])
def test_dpm_adaptive_equals_kdiffusion(gmm2, order):
    kd = kdiffusion_sampling()
    x = start(32, 2, 80.0, seed=2)
    ours, info = sample_dpm_adaptive(gmm2, x, 0.02, 80.0, order=order, rtol=0.01, return_info=True)
    theirs, kinfo = kd.sample_dpm_adaptive(gmm2, x, 0.02, 80.0, disable=True, order=order, rtol=0.01,
                                           return_info=True)
    assert info == kinfo
    torch.testing.assert_close(ours, theirs, **TOL)


def _gauss_error(fn, **kw):
    s, lo, hi = 1.0, 0.05, 20.0
    x = torch.tensor([[1.0], [-2.0], [3.0]], dtype=F64) * hi
    exact = x * math.sqrt(s * s + lo * lo) / math.sqrt(s * s + hi * hi)
    return float((fn(gauss_model(s), x, lo, hi, **kw) - exact).abs().max())


def test_dpm_fast_is_third_order():
    """n = 3k + 2 evaluations: k third-order steps and one second-order step; doubling the steps divides the
    error by about 8."""
    errs = [_gauss_error(sample_dpm_fast, n=n) for n in (11, 23, 47)]
    assert all(errs[i] / errs[i + 1] > 6.0 for i in range(2)), errs


def test_dpm_adaptive_tolerance_controls_error_and_cost():
    """On N(0, 1) from sigma 20 to 0.05: measured errors 0.035 (rtol 0.05, 30 evaluations) and 2.1e-5 (rtol 1e-5,
    135 evaluations)."""
    runs = {}
    for rtol in (0.05, 1e-5):
        x = torch.full((4, 1), 20.0, dtype=F64)
        out, info = sample_dpm_adaptive(gauss_model(1.0), x, 0.05, 20.0, rtol=rtol, atol=rtol / 100, return_info=True)
        runs[rtol] = (abs(float(out[0, 0]) - 20.0 * math.sqrt(1 + 0.05**2) / math.sqrt(401.0)), info)
    (err_loose, loose), (err_tight, tight) = runs[0.05], runs[1e-5]
    assert err_tight < 1e-4
    assert err_loose > 100 * err_tight
    assert tight["nfe"] > loose["nfe"]
    assert tight["nfe"] == 3 * tight["steps"]
    assert tight["n_accept"] + tight["n_reject"] == tight["steps"]


def test_dpm_solver_arguments_and_no_grad():
    x = torch.ones(2, 1, dtype=F64, requires_grad=True)
    out = sample_dpm_fast(gauss_model(1.0), x, 0.1, 10.0, 4)
    assert not out.requires_grad
    for bad, match in [((0.0, 1.0, 3), "sigma_min"), ((2.0, 1.0, 3), "sigma_min"), ((0.1, 1.0, 0), "n must")]:
        with pytest.raises(ValueError, match=match):
            sample_dpm_fast(gauss_model(1.0), x, *bad)
    with pytest.raises(ValueError, match="order"):
        sample_dpm_adaptive(gauss_model(1.0), x, 0.1, 1.0, order=4)
    with pytest.raises(ValueError, match="max_evals"):
        sample_dpm_adaptive(gauss_model(1.0), x, 0.1, 1.0, rtol=1e-12, atol=1e-14, max_evals=30)
    with pytest.raises(ValueError, match="non-finite"):
        sample_dpm_fast(lambda x, t: x * torch.nan, x, 0.1, 10.0, 4)
