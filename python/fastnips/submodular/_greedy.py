"""The public greedy: :func:`greedy` over the set functions of :mod:`fastnips.submodular.functions`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import _backend
from .functions import FacilityLocation, FeatureBased, PairwiseSubmodular, SetFunction
from .reference import greedy_reference

__all__ = ["GREEDY_BACKENDS", "GreedyResult", "greedy"]

GREEDY_BACKENDS = ("reference", "cpp")
_PHI = {"sqrt": 0, "log": 1, "sigmoid": 2}


@dataclass(frozen=True)
class GreedyResult:
    """What :func:`greedy` returns.

    Attributes
    ----------
    selected : numpy.ndarray of int64
        The chosen elements in the order they were taken.
    gains : numpy.ndarray of float64
        :math:`f(S_i) - f(S_{i-1})` at each step.
    value : float
        :math:`f(S) - f(\\emptyset)` of the selection (the sum of the gains).
    backend : str
        The backend that ran.
    evaluations : int
        Gain evaluations (the cpp backend counts them; the reference reports -1).
    singleton : bool
        Knapsack only: the best feasible singleton beat the ratio greedy and is returned.
    """

    selected: np.ndarray
    gains: np.ndarray
    value: float
    backend: str
    evaluations: int = -1
    singleton: bool = False


def _budget(n: int, k, costs, budget):
    if k is None and costs is None:
        raise ValueError("give k (a cardinality budget) or costs and budget (a knapsack)")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0):
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    if (costs is None) != (budget is None):
        raise ValueError("costs and budget go together (a knapsack); give both or neither")
    if costs is not None:
        costs = np.ascontiguousarray(np.asarray(costs, dtype=np.float64))
        if costs.shape != (n,):
            raise ValueError(f"costs must have shape ({n},), got {costs.shape}")
        if not np.all(np.isfinite(costs)) or np.any(costs <= 0):
            raise ValueError("costs must be finite and > 0")
        budget = float(budget)
        if not np.isfinite(budget) or budget < 0:
            raise ValueError(f"budget must be finite and >= 0, got {budget}")
    return (None if k is None else int(k)), costs, budget


def _native(fn, k, costs, budget, lazy: bool, n_threads: int):
    C = _backend.native()
    kk = -1 if k is None else k
    tail = dict(costs=costs, budget=0.0 if budget is None else budget, lazy=lazy, n_threads=n_threads)
    if isinstance(fn, PairwiseSubmodular):
        scale = fn.rho * fn.kappa
        return C.submodular_greedy_pairwise(fn.m, fn.U, scale, fn.a, fn.beta, list(fn.Ws), list(fn.bs), fn.v, kk,
                                            **tail)
    if isinstance(fn, FeatureBased):
        return C.submodular_greedy_feature(fn.X, fn.weights, _PHI[fn.concave], kk, **tail)
    return C.submodular_greedy_facility(fn.similarity, kk, **tail)


def greedy(fn: SetFunction, k: int | None = None, *, costs: ArrayLike | None = None, budget: float | None = None,
           lazy: bool | None = None, backend: str = "auto", n_threads: int = 0) -> GreedyResult:
    r"""Greedy maximisation of a monotone (:math:`\alpha`-)submodular function under a cardinality and/or
    knapsack budget.

    Each step adds :math:`\arg\max_a \, [f(S + a) - f(S)] / c_a` (:math:`c_a = 1` without costs) over the
    candidates that still fit, ties to the smaller index. Guarantees (Nemhauser, Wolsey & Fisher 1978):
    :math:`f(S_k) \ge (1 - 1/e)\,\max_{|S| \le k} f(S)` for submodular :math:`f`, :math:`1 - e^{-\alpha}` for
    :math:`\alpha`-submodular :math:`f`; under a knapsack the better of the ratio greedy and the best single
    element keeps :math:`\tfrac12(1 - 1/e)` (Leskovec et al. 2007).

    The lazy greedy (Minoux 1978) keeps the stale gains in a max-heap and re-evaluates only the top; on a
    submodular function it makes exactly the naive choices (up to the order of gains equal to rounding, once
    a saturated function's gains fall to the last bits of float64). On the pairwise network the cpp backend keeps
    per-candidate channel increments and folds in only the elements selected since the candidate was last
    evaluated (incremental pairwise gains).

    Parameters
    ----------
    fn : PairwiseSubmodular, FeatureBased or FacilityLocation
        The function (the reference backend takes any object with ``n`` and ``values(masks)``).
    k : int, optional
        At most ``k`` elements.
    costs : array of shape (n,), optional
        Positive element costs; with ``budget`` a knapsack :math:`\sum_{a \in S} c_a \le B`.
    budget : float, optional
        :math:`B \ge 0`.
    lazy : bool, optional
        Lazy (default when ``fn.alpha == 1``) or naive greedy (default for :math:`\alpha < 1`, where stale
        gains are not upper bounds).
    backend : {"auto", "reference", "cpp"}
        ``auto`` takes cpp when built.
    n_threads : int
        OpenMP threads for the gain scans (0: OpenMP's default).

    Returns
    -------
    GreedyResult

    Examples
    --------
    >>> from fastnips.submodular import FeatureBased
    >>> r = greedy(FeatureBased(np.eye(4) + 0.1), k=2)
    >>> r.selected.tolist()
    [0, 1]
    """
    n = getattr(fn, "n", None)
    if n is None or not hasattr(fn, "values"):
        raise TypeError(f"fn must be a set function (PairwiseSubmodular, FeatureBased, FacilityLocation), got "
                        f"{type(fn).__name__}")
    k, costs, budget = _budget(n, k, costs, budget)
    alpha = getattr(fn, "alpha", 1.0)
    lazy = alpha == 1.0 if lazy is None else bool(lazy)
    known = isinstance(fn, (PairwiseSubmodular, FeatureBased, FacilityLocation))
    b = _backend.resolve(backend, op="greedy", supported=GREEDY_BACKENDS,
                         check=lambda name: "" if name != "cpp" or known else
                         f"the cpp greedy takes PairwiseSubmodular, FeatureBased or FacilityLocation, not "
                         f"{type(fn).__name__}")
    if b == "cpp":
        sel, gains, evals, single = _native(fn, k, costs, budget, lazy, n_threads)
    else:
        sel, gains, single = greedy_reference(fn, k, costs=costs, budget=budget, lazy=lazy)
        evals = -1
    sel = np.asarray(sel, dtype=np.int64)
    gains = np.asarray(gains, dtype=np.float64)
    return GreedyResult(sel, gains, float(gains.sum()), b, int(evals), bool(single))
