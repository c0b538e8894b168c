r"""Dirichlet beta-VAEs and their closed-form collapse threshold (dirvae, NeurIPS 2026).

* :func:`beta_c` -- :math:`\beta_c = c\,\lambda_{\max}(K\alpha_0+1)/(\sigma^2 K\alpha_0^2\psi_1(\alpha_0))` from
  the data; ``alpha0 = inf`` gives the Gaussian limit :math:`c\,\lambda_{\max}/\sigma^2`.
* :func:`hessian_at_collapse` -- the exact Hessian of the closed-form loss at the collapsed point (its smallest
  eigenvalue changes sign at beta_c).
* :class:`DirichletVAE` -- linear or deep Gaussian decoder; closed-form and reparameterised-sample ELBOs.
* :func:`collapse_report`, :func:`collapse_sweep` -- KL per latent, predicted vs observed collapse, the
  observed onset over a beta / beta_c sweep.
* :func:`linear_mixture`, :func:`archetypal_toy`, :func:`standardized` -- data with simplex structure.
* :mod:`fastnips.vae.reference` -- the plain formulas (Dirichlet KL, closed-form reconstruction).

There is no hot path here: torch on CPU suffices, so there is no backend choice.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .model import DirichletVAE
from .report import CollapseReport, SweepResult, collapse_report, collapse_sweep
from .synthetic import archetypal_toy, linear_mixture, standardized
from .threshold import beta_c, hessian_at_collapse, top_eigenvalue

__all__ = ["CollapseReport", "DirichletVAE", "SweepResult", "archetypal_toy", "beta_c", "collapse_report",
           "collapse_sweep", "hessian_at_collapse", "linear_mixture", "standardized", "top_eigenvalue"]
