r"""Readable torch formulas of the Dirichlet beta-VAE: the oracle of the tests and the building blocks of
:class:`fastnips.vae.DirichletVAE`.

All functions take float tensors and return per-datum values (no reduction over the batch).

* :func:`dirichlet_kl` -- :math:`\mathrm{KL}(\mathrm{Dir}(\alpha)\,\|\,\mathrm{Dir}(\alpha_0 1_K))`.
* :func:`marginal_beta_kl` -- the KL of each coordinate's Beta marginal to the prior's marginal.
* :func:`expected_sq_error_linear` -- :math:`E_{z\sim\mathrm{Dir}(\alpha)}\|x - Wz - b\|^2` in closed form.
* :func:`negative_elbo_linear` -- the closed-form per-datum loss of the linear-decoder beta-VAE.
"""

from __future__ import annotations

import math

import torch

__all__ = ["dirichlet_kl", "expected_sq_error_linear", "gaussian_nll_const", "marginal_beta_kl",
           "negative_elbo_linear"]


def dirichlet_kl(alpha: torch.Tensor, alpha0: float) -> torch.Tensor:
    r"""KL of ``Dir(alpha)`` (rows of ``alpha``, shape (N, K)) to the symmetric prior ``Dir(alpha0 1_K)``:

    .. math::
        \ln\Gamma(S) - \sum_k \ln\Gamma(\alpha_k) - \ln\Gamma(K\alpha_0) + K\ln\Gamma(\alpha_0)
        + \sum_k (\alpha_k - \alpha_0)(\psi(\alpha_k) - \psi(S)),\quad S = \sum_k \alpha_k .
    """
    K = alpha.shape[-1]
    S = alpha.sum(-1)
    a0 = torch.as_tensor(float(alpha0), dtype=alpha.dtype, device=alpha.device)
    return (torch.lgamma(S) - torch.lgamma(alpha).sum(-1) - torch.lgamma(K * a0) + K * torch.lgamma(a0)
            + ((alpha - a0) * (torch.digamma(alpha) - torch.digamma(S)[..., None])).sum(-1))


def _beta_kl(a: torch.Tensor, b: torch.Tensor, a0: torch.Tensor, b0: torch.Tensor) -> torch.Tensor:
    """KL(Beta(a, b) || Beta(a0, b0)), elementwise."""
    s, s0 = a + b, a0 + b0
    return (torch.lgamma(s) - torch.lgamma(a) - torch.lgamma(b) - torch.lgamma(s0) + torch.lgamma(a0)
            + torch.lgamma(b0) + (a - a0) * (torch.digamma(a) - torch.digamma(s))
            + (b - b0) * (torch.digamma(b) - torch.digamma(s)))


def marginal_beta_kl(alpha: torch.Tensor, alpha0: float) -> torch.Tensor:
    r"""Per-latent KL, shape (N, K): coordinate k of ``Dir(alpha)`` is ``Beta(alpha_k, S - alpha_k)``, of the
    prior ``Beta(alpha0, (K-1) alpha0)``. Zero for every k exactly when ``alpha = alpha0 1`` (collapse)."""
    K = alpha.shape[-1]
    S = alpha.sum(-1, keepdim=True)
    a0 = torch.full_like(alpha, float(alpha0))
    return _beta_kl(alpha, S - alpha, a0, (K - 1) * a0)


def expected_sq_error_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    r""":math:`E\|x - Wz - b\|^2 = \|x - Wm - b\|^2 + \mathrm{tr}(W\,\mathrm{Cov}\,W^\top)` for
    :math:`z \sim \mathrm{Dir}(\alpha)`, with :math:`m = \alpha / S` and
    :math:`\mathrm{Cov} = (\mathrm{diag}\,m - m m^\top)/(S + 1)`; ``x`` (N, D), ``W`` (D, K), ``b`` (D,),
    ``alpha`` (N, K)."""
    S = alpha.sum(-1, keepdim=True)
    m = alpha / S
    Wm = m @ W.T
    col = (W * W).sum(0)  # ||W_:k||^2
    trace = ((m * col).sum(-1) - (Wm * Wm).sum(-1)) / (S[:, 0] + 1.0)
    return ((x - Wm - b) ** 2).sum(-1) + trace


def gaussian_nll_const(D: int, sigma2: float) -> float:
    """The constant ``D/2 log(2 pi sigma2)`` of the Gaussian likelihood summed over ``D`` coordinates."""
    return 0.5 * D * math.log(2.0 * math.pi * sigma2)


def negative_elbo_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, alpha: torch.Tensor, *, alpha0: float,
                         sigma2: float, beta: float, likelihood: str = "sum") -> torch.Tensor:
    r"""Per-datum loss :math:`c\,(E\|x - Wz - b\|^2/(2\sigma^2) + \tfrac D2\log 2\pi\sigma^2) + \beta\,\mathrm{KL}`,
    with :math:`c = 1` for ``likelihood="sum"`` (over the D coordinates) and :math:`c = 1/D` for ``"mean"``."""
    D = x.shape[-1]
    c = 1.0 if likelihood == "sum" else 1.0 / D
    rec = expected_sq_error_linear(x, W, b, alpha) / (2.0 * sigma2) + gaussian_nll_const(D, sigma2)
    return c * rec + beta * dirichlet_kl(alpha, alpha0)
