r"""Reading collapse off a trained model, and sweeping beta / beta_c to find the observed onset.

* :func:`collapse_report` -- KL per latent (the Beta marginals of q against the prior's), the activity of each
  latent (variance of its posterior mean over the data), and the predicted (``beta >= beta_c``) vs observed
  (mean KL below ``tol``) collapse of one model.
* :func:`collapse_sweep` -- train one model per ``beta = ratio * beta_c`` and seed; the observed onset is the
  smallest ratio from which every larger ratio's mean KL stays below ``tol``.

The Dirichlet KL does not split over latents; the per-latent reading uses the marginal
:math:`\mathrm{Beta}(\alpha_k, S - \alpha_k)` of each coordinate (zero for all k exactly at collapse), the
choice that keeps "which latents are alive" readable when only some collapse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .model import DirichletVAE
from .reference import marginal_beta_kl
from .threshold import _check_data, beta_c

__all__ = ["CollapseReport", "SweepResult", "collapse_report", "collapse_sweep"]


@dataclass
class CollapseReport:
    """What :func:`collapse_report` reads off a model (KL in nats per datum, means over the data)."""

    beta: float
    beta_c: float
    ratio: float
    kl: float
    kl_per_latent: np.ndarray
    activity: np.ndarray
    predicted_collapsed: bool
    observed_collapsed: bool

    @property
    def agrees(self) -> bool:
        """Whether the linear theory's prediction matches what the model shows."""
        return self.predicted_collapsed == self.observed_collapsed

    def __str__(self) -> str:
        state = "collapsed" if self.observed_collapsed else "active"
        return (f"beta/beta_c = {self.ratio:.3f} (beta_c = {self.beta_c:.4g}): KL = {self.kl:.3g} nats, {state}; "
                f"predicted {'collapsed' if self.predicted_collapsed else 'active'}")


def collapse_report(model: DirichletVAE, X: np.ndarray | torch.Tensor, *, tol: float = 1e-4) -> CollapseReport:
    r"""KL per latent and the predicted vs observed collapse of a trained :class:`DirichletVAE`.

    The prediction uses :func:`fastnips.vae.beta_c` with the model's K, alpha0, sigma2 and likelihood on ``X``
    (exact for a linear decoder; for a deep decoder it is the linear theory's guess).

    Parameters
    ----------
    model : DirichletVAE
    X : array (N, D)
    tol : float
        Mean KL (nats) below which the model counts as collapsed.

    Returns
    -------
    CollapseReport
    """
    if not isinstance(model, DirichletVAE):
        raise TypeError(f"model must be a DirichletVAE, got {type(model).__name__}")
    if not (float(tol) > 0):
        raise ValueError(f"tol must be positive, got {tol!r}")
    X = _check_data(X)
    with torch.no_grad():
        alpha = model.encode(X)
        kl = float(model.kl(X).mean())
        per = marginal_beta_kl(alpha, model.alpha0).mean(0).cpu().numpy()
        act = (alpha / alpha.sum(-1, keepdim=True)).var(0).cpu().numpy()
    bc = beta_c(X, model.K, model.alpha0, model.sigma2, likelihood=model.likelihood)
    return CollapseReport(beta=model.beta, beta_c=bc, ratio=model.beta / bc, kl=kl, kl_per_latent=per,
                          activity=act, predicted_collapsed=model.beta >= bc, observed_collapsed=kl < tol)


@dataclass
class SweepResult:
    """Mean KL per ``beta / beta_c`` ratio (rows) and seed (columns) and the observed onset."""

    ratios: np.ndarray
    kl: np.ndarray
    beta_c: float
    tol: float
    onset: float = field(default=float("nan"))

    @property
    def kl_mean(self) -> np.ndarray:
        """Mean KL over seeds, per ratio."""
        return self.kl.mean(1)


def _onset(ratios: np.ndarray, kl_mean: np.ndarray, tol: float) -> float:
    dead = kl_mean < tol
    for i in range(len(ratios)):
        if dead[i:].all():
            return float(ratios[i])
    return float("nan")


def collapse_sweep(X: np.ndarray | torch.Tensor, K: int, *, alpha0: float = 1.0, sigma2: float = 1.0,
                   ratios: np.ndarray | list[float] = (0.5, 0.8, 0.9, 0.95, 1.05, 1.1, 1.5), seeds: int = 1,
                   decoder: str = "linear", steps: int = 300, tol: float = 1e-4, first_seed: int = 0,
                   n_samples: int = 4, lr: float = 1e-2, **model_kw: object) -> SweepResult:
    """Train a :class:`DirichletVAE` for each ``beta = ratio * beta_c(X, K, alpha0, sigma2)`` and seed.

    Linear decoders use the closed-form loss with L-BFGS (deterministic); deep decoders the sampled loss with
    Adam (``lr``, ``n_samples`` draws per datum, seeded). Seeds ``first_seed .. first_seed + seeds - 1``
    initialise the models. ``onset`` is the smallest ratio from which all larger ratios have mean KL < ``tol``
    (NaN if none); the linear theory predicts 1.

    Returns
    -------
    SweepResult
    """
    X = _check_data(X)
    r = np.asarray(ratios, dtype=np.float64)
    if r.ndim != 1 or r.size == 0 or not (r > 0).all() or not (np.diff(r) > 0).all():
        raise ValueError(f"ratios must be a non-empty increasing sequence of positive numbers, got {ratios!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    likelihood = str(model_kw.get("likelihood", "sum"))
    bc = beta_c(X, K, alpha0, sigma2, likelihood=likelihood)
    method = "closed" if decoder == "linear" else "sample"
    kl = np.zeros((r.size, seeds))
    for i, ratio in enumerate(r):
        for j, s in enumerate(range(first_seed, first_seed + seeds)):
            m = DirichletVAE(X.shape[1], K, alpha0=alpha0, sigma2=sigma2, beta=float(ratio * bc), decoder=decoder,
                             seed=s, **model_kw)
            m.fit(X, steps=steps, method=method, seed=s, n_samples=n_samples, lr=lr)
            with torch.no_grad():
                kl[i, j] = float(m.kl(X).mean())
    out = SweepResult(ratios=r, kl=kl, beta_c=bc, tol=float(tol))
    out.onset = _onset(r, out.kl_mean, float(tol))
    return out
