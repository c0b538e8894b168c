r"""Scaling laws of data-recipe search (datascale, NeurIPS 2026) and the shared exponent fitter.

Paper 19: the best data recipe found after N ablation runs improves as a power law
:math:`\mathrm{best}(N) = a - bN^{-c}`; under a fixed compute budget this gives a quality-quantity frontier.

* :func:`fit_loglog` -- :math:`y = p\,x^e` by log-log least squares with a replicate-aware bootstrap-t interval
  (shared with the runtime exponents of :mod:`fastnips.evo`).
* :func:`fit_power_law` -- :math:`a - bN^{-c}` with the asymptote profiled above the best observation, log-gap
  lines, bootstrap intervals; :func:`extrapolate` scores a fit on small N against held-out larger N.
* :func:`expected_best`, :func:`quadratic_tail` -- the extreme-value argument: :math:`c = 1/k`, :math:`c = 2/d`
  for a smooth optimum in d recipe dimensions.
* :func:`random_search_curves` -- synthetic d-dimensional recipe spaces with a known exponent.
* :func:`allocate_compute`, :func:`quality_quantity_frontier` -- ablation runs vs final-run compute.
* :mod:`fastnips.datacuration.testbed` -- real small ablations: scikit-learn on bundled data with injected label
  noise and duplicates (needs scikit-learn, imported on use).

numpy and scipy only: there is no hot path, so there is no backend choice.
"""

from __future__ import annotations

from .budget import ComputeSplit, Frontier, allocate_compute, quality_quantity_frontier
from .fitting import ExponentFit, fit_loglog
from .powerlaw import Extrapolation, PowerLawFit, extrapolate, fit_power_law
from .synthetic import random_search_curves
from .theory import expected_best, quadratic_tail

__all__ = ["ComputeSplit", "ExponentFit", "Extrapolation", "Frontier", "PowerLawFit", "allocate_compute",
           "expected_best", "extrapolate", "fit_loglog", "fit_power_law", "quadratic_tail",
           "quality_quantity_frontier", "random_search_curves"]
