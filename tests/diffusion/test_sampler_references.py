"""The k-diffusion samplers added for issue 14 item 1d against readable references written from the papers
(sampler_references.py), without k-diffusion: equal to 1e-12 in float64 on the exact GMM denoiser, with one
deterministic noise function shared by sampler and reference; and their convergence orders on a Gaussian target
(exact flow known)."""

from __future__ import annotations

import math

import pytest
import torch

from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch
from fastnips.diffusion.multistep import lms_coefficients

from . import sampler_references as R
from .sampler_oracles import F64, gauss_model, start

TOL = dict(rtol=1e-12, atol=1e-12)


def _setup(n=10, batch=32):
    return start(batch, 2, 80.0, seed=2), sch.get_sigmas_karras(n, 0.002, 80.0)


def test_dpm_2_matches_reference(gmm2):
    x, sig = _setup()
    torch.testing.assert_close(S.sample_dpm_2(gmm2, x, sig), R.ref_dpm_2(gmm2, x, sig.tolist()), **TOL)


def test_dpm_2_churn_matches_reference(gmm2):
    x, sig = _setup()
    noise = R.keyed_noise(x.shape, 1)
    s_churn, s_noise, n = 3.0, 1.01, len(sig) - 1
    out = S.sample_dpm_2(gmm2, x, sig, s_churn=s_churn, s_noise=s_noise, noise_sampler=noise)
    ref, t = x, sig.tolist()
    for i in range(n):
        hat = t[i] * (1 + min(s_churn / n, math.sqrt(2) - 1))
        ref = ref + math.sqrt(hat**2 - t[i] ** 2) * s_noise * noise(t[i], hat)
        ref = R.dpm_solver_2(gmm2, ref, hat, t[i + 1])
    torch.testing.assert_close(out, ref, **TOL)


@pytest.mark.parametrize("eta", [0.0, 0.6, 1.0])
def test_dpm_2_ancestral_matches_reference(gmm2, eta):
    x, sig = _setup()
    noise = R.keyed_noise(x.shape, 2)
    out = S.sample_dpm_2_ancestral(gmm2, x, sig, eta=eta, s_noise=1.1, noise_sampler=noise)
    torch.testing.assert_close(out, R.ref_dpm_2_ancestral(gmm2, x, sig.tolist(), eta, 1.1, noise), **TOL)


@pytest.mark.parametrize("eta", [0.0, 1.0])
def test_dpmpp_2s_ancestral_matches_reference(gmm2, eta):
    x, sig = _setup()
    noise = R.keyed_noise(x.shape, 3)
    out = S.sample_dpmpp_2s_ancestral(gmm2, x, sig, eta=eta, s_noise=0.9, noise_sampler=noise)
    torch.testing.assert_close(out, R.ref_dpmpp_2s_ancestral(gmm2, x, sig.tolist(), eta, 0.9, noise), **TOL)


@pytest.mark.parametrize(("eta", "r"), [(0.0, 0.5), (1.0, 0.5), (0.5, 0.3)])
def test_dpmpp_sde_matches_reference(gmm2, eta, r):
    x, sig = _setup()
    noise = R.keyed_noise(x.shape, 4)
    out = S.sample_dpmpp_sde(gmm2, x, sig, eta=eta, r=r, s_noise=1.05, noise_sampler=noise)
    torch.testing.assert_close(out, R.ref_dpmpp_sde(gmm2, x, sig.tolist(), eta, 1.05, r, noise), **TOL)


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("eta", [0.0, 1.0, 0.4])
def test_dpmpp_3m_sde_matches_reference(gmm2, eta, exact):
    """k-diffusion's weight of the quadratic term is half the exact integral (module docstring of multistep)."""
    x, sig = _setup(12)
    noise = R.keyed_noise(x.shape, 5)
    out = S.sample_dpmpp_3m_sde(gmm2, x, sig, eta=eta, noise_sampler=noise, exact_quadratic=exact)
    ref = R.ref_dpmpp_3m_sde(gmm2, x, sig.tolist(), eta, 1.0, noise, quad_weight=1.0 if exact else 0.5)
    torch.testing.assert_close(out, ref, **TOL)


@pytest.mark.parametrize("order", [1, 2, 4])
def test_lms_matches_quadrature_reference(gmm2, order):
    x, sig = _setup(12)
    torch.testing.assert_close(S.sample_lms(gmm2, x, sig, order=order), R.ref_lms(gmm2, x, sig.tolist(), order),
                               rtol=1e-11, atol=1e-11)


def test_lms_order_1_is_euler_and_coefficients_sum_to_the_step(gmm2):
    x, sig = _setup()
    torch.testing.assert_close(S.sample_lms(gmm2, x, sig, order=1), S.sample_euler(gmm2, x, sig), **TOL)
    t = sig.tolist()
    for i in range(3, len(t) - 1):
        assert sum(lms_coefficients(t, i, 4)) == pytest.approx(t[i + 1] - t[i], rel=1e-12, abs=1e-12)
    with pytest.raises(ValueError, match="order"):
        lms_coefficients(t, 1, 3)


ORDERS = [  # (name, kwargs, lower bound of the error ratio per halving of the step)
    ("dpm_2", {}, 3.6), ("dpmpp_2s_ancestral", {"eta": 0.0}, 3.6), ("dpmpp_sde", {"eta": 0.0}, 3.6),
    ("dpm_2_ancestral", {"eta": 0.0}, 3.6), ("lms", {}, 3.6), ("dpmpp_3m_sde", {"eta": 0.0}, 2.8),
    ("dpmpp_3m_sde", {"eta": 0.0, "exact_quadratic": True}, 7.0),
]


@pytest.mark.parametrize(("name", "kw", "ratio"), ORDERS)
def test_convergence_order(name, kw, ratio):
    """Error against the exact flow of N(0, 1) over 40 -> 80 -> 160 steps: second order (ratio ~4; LMS with its
    low-order start also ~4 or more), third order for the exact quadratic of DPM-Solver++(3M) (~8)."""
    s, lo, hi = 1.0, 0.05, 20.0
    x = torch.tensor([[1.0], [-2.0], [3.0]], dtype=F64) * hi
    exact = x * math.sqrt(s * s + lo * lo) / math.sqrt(s * s + hi * hi)
    errs = []
    for n in (40, 80, 160):
        sig = sch.get_sigmas_karras(n + 1, lo, hi)[:-1]
        errs.append(float((S.SAMPLERS[name](gauss_model(s), x, sig, **kw) - exact).abs().max()))
    assert all(errs[i] / errs[i + 1] > ratio for i in range(2)), errs
