r"""The closed-form collapse threshold of a symmetric Dirichlet beta-VAE with a linear Gaussian decoder, and the
exact Hessian of the closed-form loss at the collapsed point that it predicts the sign change of.

Model and loss convention (per datum, averaged over the data):

.. math::
    \ell(x) = c\Big(\tfrac{1}{2\sigma^2} E_{q}\|x - Wz - b\|^2 + \tfrac D2 \log 2\pi\sigma^2\Big)
              + \beta\,\mathrm{KL}(\mathrm{Dir}(\alpha(x))\,\|\,\mathrm{Dir}(\alpha_0 1_K)),

:math:`c = 1` when the likelihood is summed over the D coordinates (``likelihood="sum"``, the default) and
:math:`c = 1/D` when it is averaged (``"mean"``). At the collapsed point (:math:`\alpha(x) \equiv \alpha_0 1`,
:math:`W P = 0` with :math:`P = I - 11^\top/K`) a second-order expansion in the coupled (decoder, encoder)
direction along the top eigenvector of the data covariance gives the stability condition

.. math::
    \beta \ge \beta_c = c\,\frac{\lambda_{\max}\,(K\alpha_0 + 1)}{\sigma^2\,K\,\alpha_0^2\,\psi_1(\alpha_0)},

with :math:`\psi_1` the trigamma function and :math:`\lambda_{\max}` the top eigenvalue of the centred
covariance of the data (divided by N, as the loss averages over the N data). Since
:math:`\alpha_0^2\psi_1(\alpha_0) = \alpha_0 + \tfrac12 + O(1/\alpha_0)`, :math:`\beta_c \to
c\,\lambda_{\max}/\sigma^2` as :math:`\alpha_0 \to \infty`: the Gaussian linear-VAE threshold (Lucas et al.
2019). The threshold does not depend on how the encoder parametrises :math:`\alpha` (log-linear, softplus):
a smooth reparametrisation does not move the sign change of the Hessian at a critical point.

Paper: "a closed-form local stability threshold beta_c for collapse in symmetric Dirichlet beta-VAEs with linear
Gaussian decoders" (NeurIPS 2026, dirvae). The abstract gives no formula; the one above is derived for this
library (see the field notes) and checked against the Hessian in the tests.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import polygamma

from .reference import negative_elbo_linear

__all__ = ["beta_c", "hessian_at_collapse", "top_eigenvalue"]

_LIKELIHOODS = ("sum", "mean")


def _check_data(X, name: str = "X") -> np.ndarray:
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (n_samples >= 2, n_features >= 1), got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or inf")
    return X


def _check_params(K, alpha0, sigma2, likelihood, *, allow_inf: bool = True) -> None:
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 2:
        raise ValueError(f"K (the simplex dimension) must be an integer >= 2, got {K!r}")
    a = float(alpha0)
    if not (a > 0) or (math.isinf(a) and not allow_inf) or math.isnan(a):
        raise ValueError(f"alpha0 (the prior concentration) must be positive{' and finite' if not allow_inf else ''}"
                         f", got {alpha0!r}")
    s = float(sigma2)
    if not (s > 0) or not math.isfinite(s):
        raise ValueError(f"sigma2 (the decoder noise variance) must be positive and finite, got {sigma2!r}")
    if likelihood not in _LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {_LIKELIHOODS}, got {likelihood!r}")


def top_eigenvalue(X: np.ndarray | torch.Tensor) -> float:
    """The largest eigenvalue of the centred covariance ``Xc.T @ Xc / N`` of the rows of ``X`` (N, D)."""
    X = _check_data(X)
    Xc = X - X.mean(0)
    return float(np.linalg.eigvalsh(Xc.T @ Xc / X.shape[0])[-1])


def trigamma_factor(K: int, alpha0: float) -> float:
    r""":math:`(K\alpha_0 + 1)/(K\alpha_0^2\psi_1(\alpha_0))`; 1 at :math:`\alpha_0 = \infty`."""
    if math.isinf(alpha0):
        return 1.0
    return (K * alpha0 + 1.0) / (K * alpha0 * alpha0 * float(polygamma(1, alpha0)))


def beta_c(X: np.ndarray | torch.Tensor, K: int, alpha0: float, sigma2: float, *, likelihood: str = "sum") -> float:
    r"""Closed-form collapse threshold :math:`\beta_c` of a Dirichlet beta-VAE with a linear Gaussian decoder.

    .. math::
        \beta_c = c\,\frac{\lambda_{\max}(K\alpha_0 + 1)}{\sigma^2 K \alpha_0^2 \psi_1(\alpha_0)}

    The collapsed solution (encoder output :math:`\alpha_0 1` for every x) is a local minimum of the loss iff
    :math:`\beta \ge \beta_c`. Module docstring: the loss convention and the derivation.

    Parameters
    ----------
    X : array (N, D)
        The data (centred here; the decoder bias absorbs the mean).
    K : int
        Simplex dimension (number of latents), >= 2.
    alpha0 : float
        Concentration of the symmetric prior ``Dir(alpha0 1_K)``, > 0; ``math.inf`` gives the Gaussian limit
        :math:`c\lambda_{\max}/\sigma^2`.
    sigma2 : float
        Decoder noise variance (fixed, not learned), > 0.
    likelihood : {"sum", "mean"}
        The reconstruction term summed over the D coordinates (c = 1) or averaged (c = 1/D).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((500, 4)) * [2.0, 1.0, 1.0, 1.0]
    >>> round(beta_c(X, K=3, alpha0=1e12, sigma2=1.0) / top_eigenvalue(X), 6)   # the Gaussian limit
    1.0
    """
    _check_params(K, alpha0, sigma2, likelihood)
    lam = top_eigenvalue(X)
    c = 1.0 if likelihood == "sum" else 1.0 / np.asarray(X).shape[1]
    return c * lam / float(sigma2) * trigamma_factor(int(K), float(alpha0))


def _inverse_link(alpha0: float, encoder: str) -> float:
    if encoder == "log":
        return math.log(alpha0)
    if encoder == "softplus":
        return alpha0 + math.log(-math.expm1(-alpha0))  # softplus^{-1}
    raise ValueError(f"encoder must be 'log' or 'softplus', got {encoder!r}")


def link(h: torch.Tensor, encoder: str) -> torch.Tensor:
    """alpha from the encoder output h: ``exp`` (``"log"``) or ``softplus`` (``"softplus"``)."""
    return torch.exp(h) if encoder == "log" else torch.nn.functional.softplus(h)


def hessian_at_collapse(X: np.ndarray | torch.Tensor, K: int, alpha0: float, sigma2: float, beta: float, *,
                        encoder: str = "log", likelihood: str = "sum") -> np.ndarray:
    r"""The exact Hessian (autograd, float64) of the mean closed-form loss at the collapsed point, over all
    parameters of a linear decoder ``(W, b)`` and a linear encoder ``h = A x + c`` with
    ``alpha = link(h)`` (``"log"``: exp, ``"softplus"``).

    Collapsed point: ``W = 0``, ``b = mean(X)``, ``A = 0``, ``link(c) = alpha0``. Its smallest eigenvalue is
    negative for :math:`\beta < \beta_c` and zero (the gauge directions ``W 1``) for :math:`\beta \ge \beta_c`.

    Returns
    -------
    ndarray (P, P)
        P = 2 D K + D + K parameters, in the order W, b, A, c.
    """
    X = _check_data(X)
    _check_params(K, alpha0, sigma2, likelihood, allow_inf=False)
    D = X.shape[1]
    x = torch.as_tensor(X, dtype=torch.float64)
    sizes = (D * K, D, K * D, K)

    def loss(theta):
        W, b, A, c = torch.split(theta, sizes)
        alpha = link(x @ A.reshape(K, D).T + c, encoder)
        return negative_elbo_linear(x, W.reshape(D, K), b, alpha, alpha0=alpha0, sigma2=sigma2, beta=beta,
                                    likelihood=likelihood).mean()

    theta0 = torch.cat([torch.zeros(D * K, dtype=torch.float64), x.mean(0), torch.zeros(K * D, dtype=torch.float64),
                        torch.full((K,), _inverse_link(float(alpha0), encoder), dtype=torch.float64)])
    H = torch.autograd.functional.hessian(loss, theta0, vectorize=True)
    return H.numpy()
