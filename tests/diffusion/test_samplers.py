"""Samplers and schedules of fastnips.diffusion (issue 6 item 2).

The oracle is an exact denoiser written here (a Gaussian mixture, checked against Tweedie's formula), not
fastnips.diffusion.targets. Exactness is asserted in float64. Until fastnips.diffusion.drivers exists, the FDS
tests use the small stand-in drivers below (same contract); the tests marked ``real_drivers`` also run the real
module when it is importable.
"""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from fastnips.diffusion import loop as L
from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch

F64 = torch.float64


# ----------------------------------------------------------------------------------------------- oracles


class GMM:
    """p0 = sum_k pi_k N(mu_k, s_k^2 I) in d dims; exact denoiser D(x, t) = E[x0 | x0 + t eps = x]."""

    def __init__(self, mu, s, pi):
        self.mu = torch.as_tensor(mu, dtype=F64)          # (K, d)
        self.s = torch.as_tensor(s, dtype=F64)            # (K,)
        self.pi = torch.as_tensor(pi, dtype=F64)          # (K,)
        self.calls = 0

    def log_weights(self, x, t):
        """log w_k(x) (B, K), w_k ∝ pi_k N(x; mu_k, (s_k^2 + t^2) I)."""
        d = x.shape[-1]
        var = self.s**2 + t[:, None] ** 2                 # (B, K)
        sq = ((x[:, None, :] - self.mu[None]) ** 2).sum(-1)
        logp = self.pi.log() - 0.5 * d * torch.log(2 * math.pi * var) - 0.5 * sq / var
        return logp

    def __call__(self, x, t):
        self.calls += 1
        var = self.s**2 + t[:, None] ** 2
        w = torch.softmax(self.log_weights(x, t), dim=-1)                                   # (B, K)
        shrink = (self.s**2 / var)[..., None]                                               # (B, K, 1)
        comp = self.mu[None] + shrink * (x[:, None, :] - self.mu[None])                     # (B, K, d)
        return (w[..., None] * comp).sum(1)

    def sample(self, n, gen):
        k = torch.multinomial(self.pi, n, replacement=True, generator=gen)
        z = torch.randn(n, self.mu.shape[1], generator=gen, dtype=F64)
        return self.mu[k] + self.s[k, None] * z, k


def gauss_model(s):
    """Single Gaussian target N(0, s^2 I): D(x, t) = s^2/(s^2+t^2) x."""
    def model(x, t):
        return (s * s / (s * s + t * t)).view(-1, *([1] * (x.ndim - 1))) * x
    return model


def edm_algorithm2(denoise, x, t, eps, s_churn, s_tmin, s_tmax, s_noise):
    """Karras et al. 2022, Algorithm 2, transcribed line by line (eps: the noise of each churned step)."""
    n = len(t) - 1
    k = 0
    for i in range(n):
        gamma = min(s_churn / n, math.sqrt(2) - 1) if s_tmin <= t[i] <= s_tmax else 0.0
        t_hat = t[i] + gamma * t[i]
        if gamma > 0:
            x_hat = x + math.sqrt(t_hat**2 - t[i] ** 2) * s_noise * eps[k]
            k += 1
        else:
            x_hat = x
        ones = x.new_ones(x.shape[0])
        d = (x_hat - denoise(x_hat, t_hat * ones)) / t_hat
        x_next = x_hat + (t[i + 1] - t_hat) * d
        if t[i + 1] != 0:
            d2 = (x_next - denoise(x_next, t[i + 1] * ones)) / t[i + 1]
            x_next = x_hat + (t[i + 1] - t_hat) * (0.5 * d + 0.5 * d2)
        x = x_next
    return x, k


# ----------------------------------------------------------------------------------------------- drivers


class GaussianStandIn:
    """Contract of drivers.Gaussian: draw(n) = n consecutive randn(shape) of torch.Generator().manual_seed(seed)."""

    Q = 1.0
    bound = math.inf

    def __init__(self, shape, seed=0):
        self.shape, self.seed = tuple(shape), seed
        self.draws = 0
        self.reset()

    def reset(self):
        self.gen = torch.Generator().manual_seed(self.seed)

    def draw(self, n=1, *, device=None, dtype=torch.float32):
        self.draws += 1
        out = torch.stack([torch.randn(self.shape, generator=self.gen, dtype=dtype) for _ in range(n)])
        return out if device is None else out.to(device)


class RademacherStandIn(GaussianStandIn):
    """i.i.d. +-a with P = 1/2: variance a^2, Q = a^2, bound a."""

    def __init__(self, shape, seed=0, a=1.0):
        super().__init__(shape, seed)
        self.a = a
        self.Q = a * a
        self.bound = a

    def draw(self, n=1, *, device=None, dtype=torch.float32):
        self.draws += 1
        bits = torch.randint(0, 2, (n, *self.shape), generator=self.gen)
        out = (2 * bits - 1).to(dtype) * self.a
        return out if device is None else out.to(device)


def real_drivers():
    try:
        return importlib.import_module("fastnips.diffusion.drivers")
    except ImportError:
        return None


def gaussian_driver(kind, shape, seed):
    if kind == "standin":
        return GaussianStandIn(shape, seed=seed)
    mod = real_drivers()
    if mod is None:
        pytest.skip("fastnips.diffusion.drivers is not there yet")
    return mod.Gaussian(shape, seed=seed)


def torch_noise_sampler(shape, seed, dtype):
    """EDM's noise from torch.Generator().manual_seed(seed), drawn in float32 and cast (as FDS casts)."""
    gen = torch.Generator().manual_seed(seed)
    return lambda sigma, sigma_next: torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def gmm2():
    return GMM(mu=[[-4.0, 0.0], [3.0, 2.0], [0.5, -3.5]], s=[0.6, 0.9, 0.4], pi=[0.5, 0.3, 0.2])


def start(n, d, sigma_max, seed=0, s=1.0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=gen, dtype=F64) * math.sqrt(sigma_max**2 + s**2)


DETERMINISTIC = {
    "euler": (S.sample_euler, {}),
    "heun": (S.sample_heun, {}),
    "ddim": (S.sample_ddim, {}),
    "dpmpp_2m": (S.sample_dpmpp_2m, {}),
    "dpmpp_2m_sde_eta0": (S.sample_dpmpp_2m_sde, {"eta": 0.0}),
    "fds_gamma0": (S.sample_fds, {"gamma": 0.0, "driver": GaussianStandIn((1,))}),
}

STOCHASTIC = {
    "euler_churn": (S.sample_euler, {"s_churn": 10.0, "seed": 1}),
    "heun_churn": (S.sample_heun, {"s_churn": 10.0, "seed": 1}),
    "edm": (S.sample_edm, {"seed": 1}),
    "euler_ancestral": (S.sample_euler_ancestral, {"seed": 1}),
    "ddim_eta": (S.sample_ddim, {"eta": 0.7, "seed": 1}),
    "dpmpp_2m_sde": (S.sample_dpmpp_2m_sde, {"seed": 1}),
    "dpmpp_2m_sde_heun": (S.sample_dpmpp_2m_sde, {"seed": 1, "solver_type": "heun"}),
}


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
    with pytest.raises(ValueError, match=rf"non-finite.*step {bad - 1 if name in ('heun', 'edm', 'fds') else bad}"):
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


# ----------------------------------------------------------------------------------------------- FDS reductions


@pytest.mark.parametrize("solver", ["heun", "euler"])
@pytest.mark.parametrize("zero", [{"gamma": 0.0}, {"s_churn": 0.0}])
def test_fds_without_churn_is_the_base_solver_bitwise(gmm2, solver, zero):
    x = start(64, 2, 80.0)
    sig = sch.edm_sigmas(12)
    drv = RademacherStandIn(x.shape)
    out = S.sample_fds(gmm2, x, sig, driver=drv, solver=solver, **zero)
    base = (S.sample_heun if solver == "heun" else S.sample_euler)(gmm2, x, sig)
    assert torch.equal(out, base)
    assert drv.draws == 0                                   # no churn, no driver values consumed


@pytest.mark.parametrize("kind", ["standin", "real"])
@pytest.mark.parametrize("solver", ["heun", "euler"])
@pytest.mark.parametrize("window", [(0.0, math.inf), (0.05, 5.0)])
def test_fds_gaussian_driver_is_edm_stochastic(gmm2, kind, solver, window):
    """Gaussian driver, n_fast=1, Q=1: exactly EDM's churn on the same stream (bitwise), and Algorithm 2 as
    written in the paper to 1e-12 in float64."""
    seed, s_churn, s_noise = 7, 6.0, 1.003
    x = start(32, 2, 80.0, seed=3)
    sig = sch.edm_sigmas(10)
    s_tmin, s_tmax = window
    drv = gaussian_driver(kind, x.shape, seed)
    out = S.sample_fds(gmm2, x, sig, driver=drv, s_churn=s_churn, s_tmin=s_tmin, s_tmax=s_tmax, s_noise=s_noise,
                       solver=solver, n_fast=1, normalize_q=True)
    base = S.sample_heun if solver == "heun" else S.sample_euler
    ref = base(gmm2, x, sig, s_churn=s_churn, s_tmin=s_tmin, s_tmax=s_tmax, s_noise=s_noise,
               noise_sampler=torch_noise_sampler(x.shape, seed, F64))
    assert torch.equal(out, ref)
    if solver == "heun":
        edm = S.sample_edm(gmm2, x, sig, s_churn=s_churn, s_tmin=s_tmin, s_tmax=s_tmax, s_noise=s_noise,
                           noise_sampler=torch_noise_sampler(x.shape, seed, F64))
        assert torch.equal(out, edm)
        gen = torch.Generator().manual_seed(seed)
        eps = [torch.randn(x.shape, generator=gen, dtype=torch.float32).to(F64) for _ in range(len(sig))]
        paper, used = edm_algorithm2(gmm2, x, sig.tolist(), eps, s_churn, s_tmin, s_tmax, s_noise)
        assert used == sum(s_tmin <= s <= s_tmax for s in sig.tolist()[:-1])
        torch.testing.assert_close(out, paper, rtol=0, atol=1e-12)


def test_fds_by_name_matches_instance():
    mod = real_drivers()
    if mod is None:
        pytest.skip("fastnips.diffusion.drivers is not there yet")
    x = start(8, 2, 10.0)
    sig = sch.get_sigmas_karras(5, 0.05, 10.0)
    model = gauss_model(1.0)
    for name in ("gaussian", "rademacher", "uniform"):
        a = S.sample_fds(model, x, sig, driver=name, seed=3, gamma=0.3)
        b = S.sample_fds(model, x, sig, driver=mod.make_driver(name, x.shape, seed=3), gamma=0.3)
        assert torch.equal(a, b)


@pytest.mark.parametrize(("driver_cls", "a", "n_fast", "normalize_q"), [
    (RademacherStandIn, 1.0, 1, True),
    (RademacherStandIn, 1.0, 4, True),
    (RademacherStandIn, math.sqrt(2.0), 3, True),
    (RademacherStandIn, math.sqrt(2.0), 3, False),
    (GaussianStandIn, None, 2, True),
])
def test_fds_injected_variance_one_step(driver_cls, a, n_fast, normalize_q):
    """Var(x_hat - x) = (sigma_hat^2 - sigma^2) s_noise^2 Var(sum_j xi_j) / (n_fast Q^[normalize_q])."""
    shape = (4000, 50)
    drv = driver_cls(shape, seed=11) if a is None else driver_cls(shape, seed=11, a=a)
    sigma, gamma, s_noise = 2.0, 0.3, 1.2
    seen = {}

    def cb(d):
        seen.update(d)

    x = torch.zeros(shape, dtype=F64)
    S.sample_fds(lambda x, t: torch.zeros_like(x), x, torch.tensor([sigma, 0.5], dtype=F64), driver=drv,
                 gamma=gamma, s_noise=s_noise, n_fast=n_fast, normalize_q=normalize_q, callback=cb)
    sigma_hat = sigma * (1 + gamma)
    assert float(seen["sigma_hat"]) == pytest.approx(sigma_hat, rel=1e-15)
    var_driver = drv.Q                                      # i.i.d.: Var(xi) = Q
    expect = (sigma_hat**2 - sigma**2) * s_noise**2 * (1.0 if normalize_q else var_driver)
    inj = seen["x"].flatten()
    m = inj.numel()
    se = expect * math.sqrt(2.0 / m) * 1.5                 # kurtosis <= 3: SE of the variance <= this
    assert abs(float(inj.var()) - expect) < 4 * se
    assert abs(float(inj.mean())) < 4 * math.sqrt(expect / m)
    if driver_cls is RademacherStandIn and n_fast == 1:     # bounded: |eta| = a / sqrt(Q) exactly
        coef = math.sqrt(sigma_hat**2 - sigma**2) * s_noise
        torch.testing.assert_close(inj.abs(), torch.full_like(inj, coef), rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", ["rademacher", "uniform", "lorenz"])
@pytest.mark.parametrize("n_fast", [1, 2])
def test_fds_real_drivers_injected_variance_and_bound(name, n_fast):
    """The real drivers by name: one churned step injects variance (sigma_hat^2 - sigma^2) s_noise^2, and with
    n_fast = 1 no more than bound / sqrt(Q) per unit of scale; the same seed reproduces the run."""
    if real_drivers() is None:
        pytest.skip("fastnips.diffusion.drivers is not there yet")
    shape, sigma, gamma, s_noise = (2000, 50), 2.0, 0.3, 1.2
    seen = {}
    x = torch.zeros(shape, dtype=F64)
    sig = torch.tensor([sigma, 0.5], dtype=F64)
    kw = dict(driver=name, seed=4, gamma=gamma, s_noise=s_noise, n_fast=n_fast)
    S.sample_fds(lambda x, t: torch.zeros_like(x), x, sig, callback=seen.update, **kw)
    inj = seen["x"].flatten()
    expect = ((sigma * (1 + gamma)) ** 2 - sigma**2) * s_noise**2
    assert abs(float(inj.var()) - expect) < 4 * expect * math.sqrt(2.0 / inj.numel()) * 1.5
    drv = real_drivers().make_driver(name, shape, seed=4)
    if n_fast == 1:
        assert float(inj.abs().max()) <= math.sqrt(expect) * drv.bound / math.sqrt(drv.Q) * (1 + 1e-6)
    again = {}
    S.sample_fds(lambda x, t: torch.zeros_like(x), x, sig, callback=again.update, **kw)
    assert torch.equal(again["x"], seen["x"])


def test_fds_driver_instance_continues_its_stream():
    x = start(16, 2, 10.0)
    sig = sch.get_sigmas_karras(6, 0.05, 10.0)
    model = gauss_model(1.0)
    drv = GaussianStandIn(x.shape, seed=5)
    a = S.sample_fds(model, x, sig, driver=drv, gamma=0.3)
    b = S.sample_fds(model, x, sig, driver=drv, gamma=0.3)
    assert not torch.equal(a, b)
    assert drv.draws == 12                                   # one draw per churned step, never reset
    drv.reset()
    assert torch.equal(S.sample_fds(model, x, sig, driver=drv, gamma=0.3), a)


def test_fds_n_fast_sums_consecutive_values():
    """eta_i = (n Q)^(-1/2) (xi_(i,1) + ... + xi_(i,n)): one Euler step from x=0 with D=0 exposes it."""
    shape = (5, 3)
    n_fast, gamma, sigma = 3, 0.2, 1.5
    drv = GaussianStandIn(shape, seed=2)
    seen = {}
    S.sample_fds(lambda x, t: torch.zeros_like(x), torch.zeros(shape, dtype=F64),
                 torch.tensor([sigma, 0.0], dtype=F64), driver=drv, gamma=gamma, n_fast=n_fast,
                 callback=seen.update, solver="euler")
    gen = torch.Generator().manual_seed(2)
    xi = sum(torch.randn(shape, generator=gen).to(F64) for _ in range(n_fast))
    expect = math.sqrt((sigma * (1 + gamma)) ** 2 - sigma**2) / math.sqrt(n_fast) * xi
    torch.testing.assert_close(seen["x"], expect, rtol=1e-14, atol=1e-15)


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


FIRST_ORDER = {"euler", "ddim", "euler_churn", "euler_ancestral", "ddim_eta"}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC) + sorted(STOCHASTIC) + ["fds"])
def test_high_nfe_sample_variance_on_gaussian_target(name):
    """N(0, s^2): at high NFE every sampler's output variance is s^2 within a few percent (first-order
    samplers: 400 steps, where stochastic Euler is still ~3 % low; the others: 100 steps)."""
    s, hi, n = 1.5, 80.0, 40000
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
    assert abs(float(out.var()) / s**2 - 1) < (0.05 if name in FIRST_ORDER else 0.03)
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


# ----------------------------------------------------------------------------------------------- conventions


@pytest.mark.parametrize("name", sorted(S.SAMPLERS))
def test_callback_once_per_step(name):
    x = start(4, 2, 10.0)
    sig = sch.get_sigmas_karras(6, 0.05, 10.0)
    calls = []
    kw = {"driver": GaussianStandIn(x.shape), "gamma": 0.25} if name == "fds" else {}
    if name in ("euler", "heun"):
        kw = {"s_churn": 1.5, "s_tmin": 0.5}
    model = gauss_model(1.0)
    S.SAMPLERS[name](model, x, sig, callback=calls.append, **kw)
    assert [c["i"] for c in calls] == list(range(len(sig) - 1))
    for c in calls:
        assert set(c) == {"x", "i", "sigma", "sigma_hat", "denoised"}
        i = c["i"]
        assert isinstance(c["sigma"], torch.Tensor)
        assert float(c["sigma"]) == float(sig[i])
        assert c["x"].shape == x.shape
        assert c["denoised"].shape == x.shape
        ratio = float(c["sigma_hat"]) / float(c["sigma"])
        if name == "fds":
            assert ratio == pytest.approx(1.25)
        elif name in ("euler", "heun"):
            assert ratio == pytest.approx(1 + 1.5 / 6 if float(sig[i]) >= 0.5 else 1.0)
        elif name == "edm":
            assert ratio >= 1.0
        else:
            assert ratio == 1.0
        torch.testing.assert_close(c["denoised"], model(c["x"], c["sigma_hat"] * x.new_ones(4)))


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_seed_reproducible(name):
    fn, kw = STOCHASTIC[name]
    x = start(8, 3, 20.0)
    sig = sch.get_sigmas_karras(6, 0.05, 20.0)
    model = gauss_model(1.0)
    a, b = fn(model, x, sig, **kw), fn(model, x, sig, **kw)
    assert torch.equal(a, b)
    assert not torch.equal(a, fn(model, x, sig, **dict(kw, seed=kw["seed"] + 1)))


def test_model_calls_and_extra_args():
    x = start(4, 2, 10.0)
    seen = []

    def model(x, sigma, *, cond):
        seen.append(cond)
        assert sigma.shape == (4,)
        assert sigma.dtype == x.dtype
        return 0.5 * x

    sig = sch.get_sigmas_karras(5, 0.1, 10.0)
    S.sample_heun(model, x, sig, extra_args={"cond": 3})
    assert len(seen) == 2 * 5 - 1
    assert set(seen) == {3}
    seen.clear()
    S.sample_heun(model, x, sig[:-1], extra_args={"cond": 3})
    assert len(seen) == 2 * 4                                    # no final 0: every step is a Heun step
    seen.clear()
    S.sample_dpmpp_2m(model, x, sig, extra_args={"cond": 3})
    assert len(seen) == 5


def test_dtype_float32_and_progress_bar():
    x = start(4, 2, 10.0).float()
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    for name in sorted(S.SAMPLERS):
        kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
        out = S.SAMPLERS[name](gauss_model(1.0), x, sig, disable=False, **kw)
        assert out.dtype == torch.float32
        assert out.shape == x.shape


def test_gradients_flow_through_heun():
    x = start(4, 2, 10.0).requires_grad_(True)
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    out = S.sample_heun(gauss_model(1.0), x, sig, s_churn=1.0, seed=0)
    out.sum().backward()
    assert x.grad is not None
    assert torch.isfinite(x.grad).all()


def test_input_not_modified(gmm2):
    x = start(16, 2, 80.0)
    x0 = x.clone()
    for name in sorted(S.SAMPLERS):
        kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
        S.SAMPLERS[name](gmm2, x, sch.edm_sigmas(5), **kw)
    assert torch.equal(x, x0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(gmm2):
    x = start(256, 2, 80.0)
    sig = sch.edm_sigmas(10)

    g = GMM(gmm2.mu.cuda(), gmm2.s.cuda(), gmm2.pi.cuda())
    for name in ("euler", "heun", "dpmpp_2m", "ddim"):
        cpu = S.SAMPLERS[name](gmm2, x, sig)
        gpu = S.SAMPLERS[name](g, x.cuda(), sig.cuda())
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-10, atol=1e-10)
    drv = GaussianStandIn(x.shape, seed=3)
    cpu = S.sample_fds(gmm2, x, sig, driver=drv, gamma=0.3)
    drv.reset()
    gpu = S.sample_fds(g, x.cuda(), sig, driver=drv, gamma=0.3)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-10, atol=1e-10)
    for name in ("edm", "euler_ancestral", "dpmpp_2m_sde"):
        out = S.SAMPLERS[name](g, x.cuda(), sig, seed=0)
        assert out.device.type == "cuda"
        assert torch.isfinite(out).all()
    with pytest.raises(ValueError, match="non-finite"):
        S.sample_euler(lambda x, t: x * torch.nan, x.cuda(), sig)
