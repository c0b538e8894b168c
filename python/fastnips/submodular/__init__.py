r"""Neural monotone submodular functions with pairwise interactions (paper 15, NeurIPS 2026), greedy
maximisation and an exhaustive certificate.

* :class:`PairwiseSubmodular` -- :math:`f = \langle v, \text{layers}(\varphi_c(g_c(S)))\rangle` with a
  pairwise (supermodular) score :math:`g_c` and a rate-controlled concave :math:`\varphi_c`
  (:math:`-\varphi''/\varphi' \ge \kappa`, interactions :math:`\le \kappa m_a m_b`): monotone submodular by
  construction; :math:`\alpha`-submodular with :math:`\rho > 1` (:func:`alpha_for_rho`, :func:`rho_for_alpha`).
* :class:`FeatureBased`, :class:`FacilityLocation` -- the hand-set functions of data summarisation.
* :func:`greedy` -- naive or lazy greedy, cardinality and/or knapsack budget (backends ``reference``, ``cpp``).
* :func:`certify` -- monotonicity and (:math:`\alpha`-)diminishing returns on all :math:`2^n` subsets,
  first violation reported (``reference``: n <= 12; ``cpp``: n <= 24).
* :class:`PairwiseSubmodularNet`, :func:`fit_values`, :func:`fit_preferences` -- the torch model and its
  training from (set, value) pairs and (set, set) preferences (torch, loaded on first use).
* :mod:`fastnips.submodular.reference` -- the readable oracles.
"""

from __future__ import annotations

from ._certify import CERTIFY_BACKENDS, CERTIFY_MAX_N, Certificate, certify
from ._greedy import GREEDY_BACKENDS, GreedyResult, greedy
from .functions import FacilityLocation, FeatureBased, PairwiseSubmodular, alpha_for_rho, rho_for_alpha
from .reference import brute_force_max, set_table

__all__ = ["CERTIFY_BACKENDS", "CERTIFY_MAX_N", "GREEDY_BACKENDS", "Certificate", "FacilityLocation", "FeatureBased",
           "GreedyResult", "PairwiseSubmodular", "alpha_for_rho", "brute_force_max", "certify", "greedy",
           "rho_for_alpha", "set_table"]

# torch parts, loaded on first use so that `import fastnips.submodular` does not import torch
_LAZY = {"PairwiseSubmodularNet": ".network", "fit_values": ".training", "fit_preferences": ".training"}
__all__ += list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
