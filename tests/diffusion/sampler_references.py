"""Readable references for the k-diffusion samplers, transcribed from the papers' equations in their own
variables (lambda = -log sigma for DPM-Solver / DPM-Solver++, sigma for DPM-Solver-2 and LMS), one step at a
time in Python floats. ``noise(a, b)`` is a deterministic function of the two noise levels (floats), so a
reference and a sampler given the same function see the same noise."""

from __future__ import annotations

import math

import torch
from scipy import integrate


def _d(model, x, sigma):
    ones = x.new_ones(x.shape[0])
    return model(x, sigma * ones)


def ancestral(s_from, s_to, eta):
    """DDPM posterior split: sigma_up^2 = eta^2 s_to^2 (s_from^2 - s_to^2) / s_from^2 (capped at s_to)."""
    up = min(s_to, eta * s_to * math.sqrt(s_from**2 - s_to**2) / s_from)
    return math.sqrt(s_to**2 - up**2), up


def dpm_solver_2(model, x, sigma, target):
    """Lu et al. 2022, Algorithm 1 (r = 1/2) for the eps-model eps = (x - D)/sigma in the variable sigma."""
    eps = (x - _d(model, x, sigma)) / sigma
    if target == 0:
        return x - sigma * eps
    s_mid = math.exp(0.5 * (math.log(sigma) + math.log(target)))
    u = x + (s_mid - sigma) * eps
    return x + (target - sigma) * (u - _d(model, u, s_mid)) / s_mid


def ref_dpm_2(model, x, sigmas):
    for i in range(len(sigmas) - 1):
        x = dpm_solver_2(model, x, sigmas[i], sigmas[i + 1])
    return x


def ref_dpm_2_ancestral(model, x, sigmas, eta, s_noise, noise):
    for i in range(len(sigmas) - 1):
        down, up = ancestral(sigmas[i], sigmas[i + 1], eta)
        x = dpm_solver_2(model, x, sigmas[i], down)
        if sigmas[i + 1] > 0:
            x = x + s_noise * up * noise(sigmas[i], sigmas[i + 1])
    return x


def ref_dpmpp_2s_ancestral(model, x, sigmas, eta, s_noise, noise):
    """DPM-Solver++(2S), Lu et al. 2022b Algorithm 1: u = (sigma_s/sigma) x - alpha (e^{-r h} - 1) D."""
    for i in range(len(sigmas) - 1):
        den = _d(model, x, sigmas[i])
        down, up = ancestral(sigmas[i], sigmas[i + 1], eta)
        if down == 0:
            x = den
        else:
            lam, lam_next = -math.log(sigmas[i]), -math.log(down)
            h = lam_next - lam
            s = math.exp(-(lam + 0.5 * h))
            u = (s / sigmas[i]) * x - math.expm1(-0.5 * h) * den
            x = (down / sigmas[i]) * x - math.expm1(-h) * _d(model, u, s)
        if sigmas[i + 1] > 0:
            x = x + s_noise * up * noise(sigmas[i], sigmas[i + 1])
    return x


def ref_dpmpp_sde(model, x, sigmas, eta, s_noise, r, noise):
    for i in range(len(sigmas) - 1):
        sigma, nxt = sigmas[i], sigmas[i + 1]
        den = _d(model, x, sigma)
        if nxt == 0:
            x = den
            continue
        lam, lam_next = -math.log(sigma), -math.log(nxt)
        s = math.exp(-(lam + r * (lam_next - lam)))
        down, up = ancestral(sigma, s, eta)
        u = (down / sigma) * x - math.expm1(lam + math.log(down)) * den + s_noise * up * noise(sigma, s)
        den_s = _d(model, u, s)
        down, up = ancestral(sigma, nxt, eta)
        mix = (1 - 1 / (2 * r)) * den + (1 / (2 * r)) * den_s
        x = (down / sigma) * x - math.expm1(lam + math.log(down)) * mix + s_noise * up * noise(sigma, nxt)
    return x


def ref_dpmpp_3m_sde(model, x, sigmas, eta, s_noise, noise, quad_weight=1.0):
    """D(lambda) interpolated through the last three evaluations (Newton form in lambda), the linear part solved
    exactly: x' = e^{-H} x + int_0^H e^{-(H - u)} D(lambda_i + u/(1+eta)) du, H = (1+eta) h. ``quad_weight``
    scales the integral of the v^2 part of the quadratic term (1: exact; 0.5: k-diffusion's weight)."""
    hist = []                                    # (lambda, D)
    for i in range(len(sigmas) - 1):
        sigma, nxt = sigmas[i], sigmas[i + 1]
        den = _d(model, x, sigma)
        if nxt == 0:
            return den
        lam, h = -math.log(sigma), math.log(sigma / nxt)
        big = (1 + eta) * h
        x = math.exp(-big) * x - math.expm1(-big) * den
        pts = [*hist[-2:], (lam, den)]
        if len(pts) >= 2:
            # divided differences in lambda; D(lam + v) = D_i + f1 v + f2 v (v + lam - lam_{i-1}) (Newton)
            (l1, d1_), (l0, d0) = pts[-2], pts[-1]
            f1 = (d0 - d1_) / (l0 - l1)
            f2 = None
            if len(pts) == 3:
                l2, d2_ = pts[0]
                f2 = (f1 - (d1_ - d2_) / (l1 - l2)) / (l0 - l2)
            # int_0^H e^{-(H-u)} v^k du with v = u h / H:
            #   k=1: (h/H)(H - 1 + e^{-H});  k=2: (h/H)^2 (H^2 - 2H + 2 - 2e^{-H})
            i1 = (h / big) * (big - 1 + math.exp(-big))
            i2 = (h / big) ** 2 * (big**2 - 2 * big + 2 - 2 * math.exp(-big))
            x = x + i1 * f1
            if f2 is not None:
                x = x + f2 * (quad_weight * i2 + (l0 - l1) * i1)
        if eta > 0:
            x = x + s_noise * nxt * math.sqrt(-math.expm1(-2 * eta * h)) * noise(sigma, nxt)
        hist.append((lam, den))
    return x


def ref_lms(model, x, sigmas, order):
    """Adams-Bashforth in sigma with scipy.integrate.quad of the Lagrange basis polynomials."""
    ds = []
    for i in range(len(sigmas) - 1):
        ds.append((x - _d(model, x, sigmas[i])) / sigmas[i])
        k = min(i + 1, order)
        nodes = [sigmas[i - m] for m in range(k)]
        for j in range(k):
            def basis(t, j=j, nodes=nodes, k=k):
                return math.prod((t - nodes[m]) / (nodes[j] - nodes[m]) for m in range(k) if m != j)
            x = x + integrate.quad(basis, sigmas[i], sigmas[i + 1])[0] * ds[-1 - j]
    return x


def keyed_noise(shape, seed=0):
    """noise(a, b): standard normal from a generator seeded by (seed, a, b) rounded to 9 significant digits."""
    def noise(a, b):
        key = hash((seed, float(f"{float(a):.9g}"), float(f"{float(b):.9g}"))) % (2**62)
        return torch.randn(shape, generator=torch.Generator().manual_seed(key), dtype=torch.float64)
    return noise
