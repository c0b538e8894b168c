"""Oracles shared by the sampler tests: an exact Gaussian-mixture denoiser (checked against Tweedie's formula in
test_sampler_checks.py), EDM's Algorithm 2 transcribed from the paper, stand-in drivers with the Driver contract,
and the sampler tables. Not fastnips.diffusion.targets: the oracle is written here."""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from fastnips.diffusion import samplers as S

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
    """EDM's noise from torch.Generator().manual_seed(seed), drawn in ``dtype`` (as FDS draws in x's dtype)."""
    gen = torch.Generator().manual_seed(seed)
    return lambda sigma, sigma_next: torch.randn(shape, generator=gen, dtype=dtype)


# ----------------------------------------------------------------------------------------------- fixtures


def make_gmm2():
    """The 2-D, 3-component mixture most sampler tests run on."""
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
    "dpm_2": (S.sample_dpm_2, {}),
    "lms": (S.sample_lms, {}),
    "dpmpp_2s_ancestral_eta0": (S.sample_dpmpp_2s_ancestral, {"eta": 0.0}),
    "dpmpp_sde_eta0": (S.sample_dpmpp_sde, {"eta": 0.0}),
    "dpmpp_3m_sde_eta0": (S.sample_dpmpp_3m_sde, {"eta": 0.0}),
}

STOCHASTIC = {
    "euler_churn": (S.sample_euler, {"s_churn": 10.0, "seed": 1}),
    "heun_churn": (S.sample_heun, {"s_churn": 10.0, "seed": 1}),
    "edm": (S.sample_edm, {"seed": 1}),
    "euler_ancestral": (S.sample_euler_ancestral, {"seed": 1}),
    "ddim_eta": (S.sample_ddim, {"eta": 0.7, "seed": 1}),
    "dpmpp_2m_sde": (S.sample_dpmpp_2m_sde, {"seed": 1}),
    "dpmpp_2m_sde_heun": (S.sample_dpmpp_2m_sde, {"seed": 1, "solver_type": "heun"}),
    "dpm_2_churn": (S.sample_dpm_2, {"s_churn": 10.0, "seed": 1}),
    "dpm_2_ancestral": (S.sample_dpm_2_ancestral, {"seed": 1}),
    "dpmpp_2s_ancestral": (S.sample_dpmpp_2s_ancestral, {"seed": 1}),
    "dpmpp_sde": (S.sample_dpmpp_sde, {"seed": 1}),
    "dpmpp_3m_sde": (S.sample_dpmpp_3m_sde, {"seed": 1}),
}



FIRST_ORDER = {"euler", "ddim", "euler_churn", "euler_ancestral", "ddim_eta"}
