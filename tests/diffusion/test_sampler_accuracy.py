"""Equivalences between samplers and their accuracy on exact-score targets (issue 6 item 2)."""

from __future__ import annotations

import math

import pytest
import torch

from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch

from .sampler_oracles import (
    DETERMINISTIC,
    F64,
    FIRST_ORDER,
    STOCHASTIC,
    GaussianStandIn,
    RademacherStandIn,
    edm_algorithm2,
    gauss_model,
    start,
)

# ----------------------------------------------------------------------------------------------- equivalences


def test_ddim_and_ancestral_eta0_are_euler_bitwise(gmm2):
    x = start(64, 2, 80.0)
    sig = sch.edm_sigmas(9)
    euler = S.sample_euler(gmm2, x, sig)
    assert torch.equal(S.sample_ddim(gmm2, x, sig), euler)
    assert torch.equal(S.sample_euler_ancestral(gmm2, x, sig, eta=0.0), euler)
    a = S.sample_ddim(gmm2, x, sig, eta=0.6, seed=4)
    assert torch.equal(a, S.sample_euler_ancestral(gmm2, x, sig, eta=0.6, seed=4))


def test_dpmpp_2m_sde_eta0_midpoint_is_dpmpp_2m(gmm2):
    x = start(64, 2, 80.0)
    sig = sch.edm_sigmas(9)
    torch.testing.assert_close(S.sample_dpmpp_2m_sde(gmm2, x, sig, eta=0.0), S.sample_dpmpp_2m(gmm2, x, sig),
                               rtol=1e-12, atol=1e-12)


def test_heun_churn_is_edm(gmm2):
    x = start(16, 2, 80.0)
    sig = sch.edm_sigmas(8)
    a = S.sample_heun(gmm2, x, sig, s_churn=40.0, s_tmin=0.05, s_tmax=50.0, s_noise=1.003, seed=2)
    assert torch.equal(a, S.sample_edm(gmm2, x, sig, seed=2))


def test_heun_without_churn_matches_algorithm1(gmm2):
    x = start(16, 2, 80.0)
    sig = sch.edm_sigmas(8)
    paper, _ = edm_algorithm2(gmm2, x, sig.tolist(), [], 0.0, 0.0, math.inf, 1.0)
    torch.testing.assert_close(S.sample_heun(gmm2, x, sig), paper, rtol=0, atol=1e-12)


def test_get_ancestral_step():
    for s_from, s_to in [(2.0, 1.0), (10.0, 9.5), (0.3, 0.01), (1.0, 0.0)]:
        for eta in (0.0, 0.3, 1.0):
            down, up = S.get_ancestral_step(s_from, s_to, eta)
            assert down**2 + up**2 == pytest.approx(s_to**2, rel=1e-14, abs=1e-300)
            assert up == pytest.approx(eta * s_to * math.sqrt(1 - s_to**2 / s_from**2), rel=1e-14)
    assert S.get_ancestral_step(2.0, 1.0, 0.0) == (1.0, 0.0)
    # eta > 1 is capped at sigma_up = sigma_to (sigma_down = 0)
    assert S.get_ancestral_step(2.0, 1.9, 10.0) == (0.0, 1.9)
    # = DDIM's sigma_t / sqrt(abar_{t-1}) with sigma^2 = (1 - abar) / abar
    s_from, s_to, eta = 1.7, 0.6, 0.8
    ab_t, ab_prev = 1 / (1 + s_from**2), 1 / (1 + s_to**2)
    ddim_sigma = eta * math.sqrt((1 - ab_prev) / (1 - ab_t)) * math.sqrt(1 - ab_t / ab_prev)
    assert S.get_ancestral_step(s_from, s_to, eta)[1] == pytest.approx(ddim_sigma / math.sqrt(ab_prev), rel=1e-13)
    for bad in [(0.0, 0.0, 1.0), (1.0, 2.0, 1.0), (1.0, 0.5, -1.0), (1.0, -0.1, 1.0)]:
        with pytest.raises(ValueError):
            S.get_ancestral_step(*bad)


def test_euler_ancestral_step_by_hand():
    """One step from x with a constant denoiser: x' = D + (sigma_down/sigma)(x - D) + sigma_up z."""
    shape = (6, 2)
    x = torch.linspace(-2, 2, 12, dtype=F64).view(shape)
    dval = 0.25
    gen = torch.Generator().manual_seed(9)
    z = torch.randn(shape, generator=gen, dtype=F64)
    out = S.sample_euler_ancestral(lambda x, t: torch.full_like(x, dval), x, torch.tensor([2.0, 1.2], dtype=F64),
                                   eta=0.9, s_noise=1.1, noise_sampler=lambda a, b: z)
    down, up = S.get_ancestral_step(2.0, 1.2, 0.9)
    torch.testing.assert_close(out, dval + down / 2.0 * (x - dval) + 1.1 * up * z, rtol=1e-14, atol=1e-14)



# ----------------------------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize(("name", "order"), [("euler", 1), ("heun", 2), ("dpmpp_2m", 2), ("dpmpp_2m_sde_eta0", 2)])
def test_convergence_order_on_gaussian_target(name, order):
    """Error against the exact flow x_T sqrt(s^2+sigma_end^2)/sqrt(s^2+sigma_T^2) shrinks by 2^order per doubling."""
    s, lo, hi = 1.0, 0.05, 20.0
    model = gauss_model(s)
    fn, kw = DETERMINISTIC[name]
    x = torch.tensor([[1.0], [-2.0], [3.0]], dtype=F64) * hi
    exact = x * math.sqrt(s * s + lo * lo) / math.sqrt(s * s + hi * hi)
    errs = []
    for n in (20, 40, 80):
        sig = sch.get_sigmas_karras(n + 1, lo, hi)[:-1]       # n steps, ending at sigma_min (no final Euler step)
        errs.append(float((fn(model, x, sig, **kw) - exact).abs().max()))
    ratios = [errs[i] / errs[i + 1] for i in range(2)]
    for r in ratios:
        assert 2**order * 0.85 < r < 2**order * 1.15, (errs, ratios)


def test_dpmpp_2m_sde_heun_variant_is_second_order():
    s, lo, hi = 1.0, 0.05, 20.0
    model = gauss_model(s)
    x = torch.tensor([[1.0], [-2.0]], dtype=F64) * hi
    exact = x * math.sqrt(s * s + lo * lo) / math.sqrt(s * s + hi * hi)
    errs = [float((S.sample_dpmpp_2m_sde(model, x, sch.get_sigmas_karras(n + 1, lo, hi)[:-1], eta=0.0,
                                         solver_type="heun") - exact).abs().max()) for n in (40, 80)]
    assert 3.4 < errs[0] / errs[1] < 4.6




BROWNIAN = {"dpmpp_sde", "dpmpp_3m_sde"}   # stochastic, with the default Brownian-tree noise


@pytest.mark.parametrize("name", sorted(DETERMINISTIC) + sorted(STOCHASTIC) + ["fds"])
def test_high_nfe_sample_variance_on_gaussian_target(name):
    """N(0, s^2): at high NFE every sampler's output variance is s^2 within a few percent (first-order
    samplers: 400 steps, where stochastic Euler is still ~3 % low; the others: 100 steps)."""
    s, hi, n = 1.5, 80.0, 40000
    if name in BROWNIAN:       # a Brownian tree costs ~25 normal draws of x's size per step: fewer samples
        n = 10000
    x = start(n, 1, hi, seed=21, s=s)
    steps = 400 if name in FIRST_ORDER else 100
    sig = sch.get_sigmas_karras(steps, 0.002, hi)
    if name == "fds":
        fn, kw = S.sample_fds, {"driver": RademacherStandIn(x.shape, seed=2), "gamma": 0.2}
    else:
        fn, kw = (DETERMINISTIC | STOCHASTIC)[name]
        if name == "fds_gamma0":
            kw = dict(kw, driver=GaussianStandIn(x.shape))
    out = fn(gauss_model(s), x, sig, **kw)
    assert abs(float(out.var()) / s**2 - 1) < (0.05 if name in FIRST_ORDER or name in BROWNIAN else 0.03)
    assert abs(float(out.mean())) < 4 * s / math.sqrt(n)


@pytest.mark.parametrize("name", ["heun", "dpmpp_2m", "euler", "edm", "fds"])
def test_gmm_modes_at_high_nfe(gmm2, name):
    """2-D mixture: mode weights, means and spreads of the samples match p0."""
    n = 6000
    x = start(n, 2, 80.0, seed=5)
    steps = 200 if name == "euler" else 60
    sig = sch.edm_sigmas(steps)
    kw = {"driver": GaussianStandIn(x.shape, seed=1), "gamma": 0.2} if name == "fds" else {}
    if name == "edm":
        kw = {"seed": 1}
    out = S.SAMPLERS[name](gmm2, x, sig, **kw)
    k = gmm2.log_weights(out, torch.zeros(n, dtype=F64)).argmax(-1)
    for j in range(3):
        frac = float((k == j).double().mean())
        pj = float(gmm2.pi[j])
        assert abs(frac - pj) < 4 * math.sqrt(pj * (1 - pj) / n) + 0.01, (j, frac)
        pts = out[k == j]
        assert float((pts.mean(0) - gmm2.mu[j]).abs().max()) < 0.1
        assert abs(float(pts.std(0).mean()) / float(gmm2.s[j]) - 1) < 0.1
