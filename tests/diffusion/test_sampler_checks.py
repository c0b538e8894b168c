"""Schedules, the exact oracle, and the argument / input checks of every sampler (issue 6 item 2)."""

from __future__ import annotations

import math

import pytest
import torch

from fastnips.diffusion import loop as L
from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch

from .sampler_oracles import (
    F64,
    GaussianStandIn,
    real_drivers,
)

# ----------------------------------------------------------------------------------------------- schedules


def test_karras_schedule_formula_and_shape():
    n, lo, hi, rho = 7, 0.002, 80.0, 7.0
    sig = sch.get_sigmas_karras(n, lo, hi, rho)
    assert sig.shape == (n + 1,)
    assert sig.dtype == F64
    assert sig[-1] == 0
    expect = [(hi ** (1 / rho) + i / (n - 1) * (lo ** (1 / rho) - hi ** (1 / rho))) ** rho for i in range(n)]
    torch.testing.assert_close(sig[:-1], torch.tensor(expect, dtype=F64), rtol=1e-14, atol=0)
    assert torch.all(sig[:-1] > sig[1:])
    torch.testing.assert_close(sch.edm_sigmas(n), sig, rtol=0, atol=0)


def test_exponential_polyexponential_vp():
    sig = sch.get_sigmas_exponential(6, 0.01, 10.0)
    logs = sig[:-1].log()
    torch.testing.assert_close(logs.diff(), torch.full((5,), (math.log(0.01) - math.log(10.0)) / 5, dtype=F64))
    torch.testing.assert_close(sig[0], torch.tensor(10.0, dtype=F64))
    torch.testing.assert_close(sig[-2], torch.tensor(0.01, dtype=F64))
    torch.testing.assert_close(sch.get_sigmas_polyexponential(6, 0.01, 10.0, rho=1.0), sig)
    poly = sch.get_sigmas_polyexponential(6, 0.01, 10.0, rho=2.0)
    assert torch.all(poly[:-1] > poly[1:])
    assert poly[-1] == 0
    assert torch.all(poly[1:-2] < sig[1:-2])              # rho > 1 spends more steps at low noise
    vp = sch.get_sigmas_vp(5)
    t = torch.linspace(1, 1e-3, 5, dtype=F64)
    torch.testing.assert_close(vp[:-1], torch.sqrt(torch.exp(19.9 * t**2 / 2 + 0.1 * t) - 1))
    assert torch.all(vp[:-1] > vp[1:])
    assert vp[-1] == 0


def test_schedule_dtype_device_and_one_step():
    sig = sch.get_sigmas_karras(1, 0.1, 5.0, dtype=torch.float32)
    assert sig.dtype == torch.float32
    assert sig.tolist() == [5.0, 0.0]
    assert sch.get_sigmas_exponential(1, 0.1, 5.0).tolist() == [5.0, 0.0]


@pytest.mark.parametrize(("fn", "args", "match"), [
    (sch.get_sigmas_karras, (0, 0.1, 1.0), "n"),
    (sch.get_sigmas_karras, (2.5, 0.1, 1.0), "n"),
    (sch.get_sigmas_karras, (True, 0.1, 1.0), "n"),
    (sch.get_sigmas_karras, (5, 1.0, 0.1), "sigma_min must be < sigma_max"),
    (sch.get_sigmas_karras, (5, 1.0, 1.0), "sigma_min must be < sigma_max"),
    (sch.get_sigmas_karras, (5, -0.1, 1.0), "sigma_min"),
    (sch.get_sigmas_karras, (5, 0.1, math.inf), "sigma_max"),
    (sch.get_sigmas_karras, (5, 0.1, 1.0, 0.0), "rho"),
    (sch.get_sigmas_exponential, (5, 0.0, 1.0), "sigma_min"),
    (sch.get_sigmas_polyexponential, (5, 0.1, 1.0, -1.0), "rho"),
    (sch.get_sigmas_vp, (5, 19.9, 0.1, 1.5), "eps_s"),
    (sch.get_sigmas_vp, (5, -1.0), "beta_d"),
])
def test_schedule_errors(fn, args, match):
    with pytest.raises(ValueError, match=match):
        fn(*args)


# ----------------------------------------------------------------------------------------------- oracle check


def test_gmm_denoiser_is_tweedie(gmm2):
    """D(x, t) = x + t^2 grad log p_t(x), and the limits t -> 0 (identity) and t -> inf (the mean)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 2, generator=gen, dtype=F64) * 3
    t = torch.full((16,), 1.3, dtype=F64)
    xr = x.clone().requires_grad_(True)
    logp = torch.logsumexp(gmm2.log_weights(xr, t), dim=-1).sum()
    (grad,) = torch.autograd.grad(logp, xr)
    torch.testing.assert_close(gmm2(x, t), x + t[:, None] ** 2 * grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gmm2(x, torch.full((16,), 1e-9, dtype=F64)), x, rtol=0, atol=1e-8)
    mean = (gmm2.pi[:, None] * gmm2.mu).sum(0).expand(16, 2)
    torch.testing.assert_close(gmm2(x, torch.full((16,), 1e7, dtype=F64)), mean, rtol=0, atol=1e-5)


# ----------------------------------------------------------------------------------------------- input checks


def _model(x, t):
    return 0.5 * x


@pytest.mark.parametrize(("sigmas", "match"), [
    (torch.ones(2, 2, dtype=F64), "1-D"),
    (torch.tensor([1.0], dtype=F64), "at least 2"),
    (torch.tensor([1.0, 2.0, 0.0], dtype=F64), "strictly decreasing"),
    (torch.tensor([2.0, 1.0, 1.0, 0.0], dtype=F64), "strictly decreasing"),
    (torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=F64), "non-negative"),
    (torch.tensor([1.0, -0.5], dtype=F64), "non-negative"),
    (torch.tensor([math.nan, 0.0], dtype=F64), "finite"),
    (torch.tensor([math.inf, 0.0], dtype=F64), "finite"),
])
@pytest.mark.parametrize("name", sorted(S.SAMPLERS))
def test_bad_sigmas(name, sigmas, match):
    x = torch.zeros(3, 2, dtype=F64)
    kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
    with pytest.raises(ValueError, match=match):
        S.SAMPLERS[name](_model, x, sigmas, **kw)


# samplers whose second evaluation of a step lies below that step's sigma (Heun / midpoint / 2S / SDE)
TWO_EVALS = ("heun", "edm", "fds", "dpm_2", "dpm_2_ancestral", "dpmpp_2s_ancestral", "dpmpp_sde")


@pytest.mark.parametrize("name", sorted(S.SAMPLERS))
def test_model_shape_mismatch_and_nonfinite(name):
    x = torch.ones(3, 2, dtype=F64)
    sig = sch.get_sigmas_karras(5, 0.1, 10.0)
    kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        S.SAMPLERS[name](lambda x, t: x[:, :1], x, sig, **kw)
    if name == "fds":
        kw = {"driver": GaussianStandIn(x.shape)}

    def nan_below_1(x, t):
        return torch.where(t[:, None] < 1.0, torch.nan, 0.5 * x)

    bad = next(i for i, s in enumerate(sig.tolist()) if s < 1.0)
    with pytest.raises(ValueError, match=rf"non-finite.*step {bad - 1 if name in TWO_EVALS else bad}"):
        S.SAMPLERS[name](nan_below_1, x, sig, **kw)
    with pytest.raises(ValueError, match="NaN or inf"):
        S.SAMPLERS[name](_model, torch.full((3, 2), math.inf, dtype=F64), sig, **kw)


def test_nonfinite_message_names_sigma():
    x = torch.ones(3, 2, dtype=F64)
    sig = torch.tensor([4.0, 2.0, 1.0, 0.0], dtype=F64)
    with pytest.raises(ValueError, match=r"step 2 \(sigma=1\)"):
        S.sample_euler(lambda x, t: torch.where(t[:, None] < 1.5, torch.inf, x), x, sig)


def test_deferred_finite_guard():
    """The device path: flags stay on the device, read once; the first bad evaluation is reported."""
    x = torch.zeros(4)
    guard = L._FiniteGuard(x, 3, deferred=True)
    guard.check(torch.zeros(4), 0, 2.0)
    guard.check(torch.tensor([0.0, math.nan, 0, 0]), 1, 1.0)
    guard.check(torch.full((4,), math.inf), 2, 0.5)
    with pytest.raises(ValueError, match=r"step 1 \(sigma=1\)"):
        guard.finish()
    ok = L._FiniteGuard(x, 2, deferred=True)
    ok.check(torch.zeros(4), 0, 2.0)
    ok.finish()


def test_fds_argument_errors():
    x = torch.zeros(3, 2, dtype=F64)
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    drv = GaussianStandIn(x.shape)
    with pytest.raises(ValueError, match="n_fast"):
        S.sample_fds(_model, x, sig, driver=drv, n_fast=0)
    with pytest.raises(ValueError, match="n_fast"):
        S.sample_fds(_model, x, sig, driver=drv, n_fast=1.5)
    with pytest.raises(ValueError, match="solver"):
        S.sample_fds(_model, x, sig, driver=drv, solver="rk4")
    with pytest.raises(ValueError, match="s_noise"):
        S.sample_fds(_model, x, sig, driver=drv, s_noise=-1.0)
    with pytest.raises(ValueError, match="either s_churn or gamma"):
        S.sample_fds(_model, x, sig, driver=drv, gamma=0.1, s_churn=1.0)
    with pytest.raises(ValueError, match="gamma"):
        S.sample_fds(_model, x, sig, driver=drv, gamma=0.5)
    with pytest.raises(ValueError, match="gamma"):
        S.sample_fds(_model, x, sig, driver=drv, gamma=-0.1)
    with pytest.raises(ValueError, match=r"driver\.shape"):
        S.sample_fds(_model, x, sig, driver=GaussianStandIn((3, 3)))
    with pytest.raises(ValueError, match="driver must be"):
        S.sample_fds(_model, x, sig, driver=object())
    with pytest.raises(ValueError, match="s_tmin"):
        S.sample_fds(_model, x, sig, driver=drv, s_tmin=2.0, s_tmax=1.0)
    bad_q = GaussianStandIn(x.shape)
    bad_q.Q = 0.0
    with pytest.raises(ValueError, match="Q"):
        S.sample_fds(_model, x, sig, driver=bad_q)
    S.sample_fds(_model, x, sig, driver=bad_q, normalize_q=False)      # Q is not used then


def test_unknown_driver_name():
    mod = real_drivers()
    if mod is None:
        pytest.skip("fastnips.diffusion.drivers is not there yet")
    with pytest.raises(ValueError, match="driver"):
        S.sample_fds(_model, torch.zeros(2, 2), sch.get_sigmas_karras(3, 0.1, 1.0), driver="brownian-tree")


def test_other_argument_errors():
    x = torch.zeros(3, 2, dtype=F64)
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    with pytest.raises(ValueError, match="s_noise"):
        S.sample_heun(_model, x, sig, s_churn=1.0, s_noise=-0.5)
    with pytest.raises(ValueError, match="s_churn"):
        S.sample_euler(_model, x, sig, s_churn=-1.0)
    with pytest.raises(ValueError, match="eta"):
        S.sample_euler_ancestral(_model, x, sig, eta=-1.0)
    with pytest.raises(ValueError, match="solver_type"):
        S.sample_dpmpp_2m_sde(_model, x, sig, solver_type="euler")
    with pytest.raises(ValueError, match="noise_sampler or seed"):
        S.sample_edm(_model, x, sig, seed=0, noise_sampler=lambda a, b: torch.zeros_like(x))
    with pytest.raises(ValueError, match="seed"):
        S.sample_edm(_model, x, sig, seed=1.5)
    with pytest.raises(ValueError, match="noise_sampler returned shape"):
        S.sample_edm(_model, x, sig, noise_sampler=lambda a, b: torch.zeros(3))
    with pytest.raises(ValueError, match="model must be callable"):
        S.sample_euler(None, x, sig)
    with pytest.raises(ValueError, match="x must be"):
        S.sample_euler(_model, x.long(), sig)
    with pytest.raises(ValueError, match="extra_args"):
        S.sample_euler(_model, x, sig, extra_args=[1])
