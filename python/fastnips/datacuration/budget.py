r"""Spending a compute budget between recipe ablations and the final training run.

With N ablation runs of cost :math:`r` each, a total budget :math:`C` leaves :math:`F = C - Nr` for the final
run. The predicted final quality combines the recipe power law with the final run's compute scaling law:

.. math::
    S(N) = \underbrace{a - bN^{-c}}_{\text{best recipe after N runs}}
           \;-\; \underbrace{B\,(C - Nr)^{-\beta}}_{\text{shortfall of a finite final run}},
    \qquad N^*(C) = \arg\max_{1 \le N < C/r} S(N).

At the interior optimum the marginal gains balance, :math:`b c N^{-c-1} = B\beta r F^{-\beta-1}`. Tracing
:math:`N^*(C)` over budgets gives the quality-quantity frontier of paper 19 (datascale: "a principled approach
to data quality-quantity tradeoff under a fixed compute budget, yielding a Pareto frontier"): how much of each
budget to spend finding a better recipe versus training longer on it. Any other split lies below the frontier
under the model.

Choices the paper leaves open: the final-run law is an additive power-law shortfall
:math:`B F^{-\beta}` (the form of compute scaling laws; fit it with
:func:`~fastnips.datacuration.fit_loglog` on a few final-scale runs, ``prefactor`` = B, ``exponent`` =
:math:`-\beta`), and the two terms add (the recipe's gain does not change the final law's exponent). The
optimum is found by scanning N on a log grid and then the integers between the best grid point's neighbours
(a ternary search where that bracket is wide): exact because :math:`S` is concave in N (both terms are, for
:math:`b, B \ge 0`), and memory stays bounded for any budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .fitting import ExponentFit
from .powerlaw import PowerLawFit

__all__ = ["ComputeSplit", "Frontier", "allocate_compute", "quality_quantity_frontier"]


@dataclass(frozen=True, eq=False)
class ComputeSplit:
    """The best split of one budget (:func:`allocate_compute`).

    Attributes
    ----------
    budget, run_cost : float
        Total compute and the cost of one ablation run.
    n_runs : int
        :math:`N^*`, the number of ablation runs to do.
    final_compute : float
        :math:`C - N^* r`, left for the final run.
    predicted : float
        :math:`S(N^*)`.
    N, scores : numpy.ndarray
        The scanned N and :math:`S(N)` (for plots of the trade-off at this budget).
    """

    budget: float
    run_cost: float
    n_runs: int
    final_compute: float
    predicted: float
    N: np.ndarray
    scores: np.ndarray


def _law(final_law) -> tuple[float, float]:
    """(B, beta) from an ExponentFit (prefactor, exponent = -beta) or a (B, beta) pair."""
    if isinstance(final_law, ExponentFit):
        B, beta = final_law.prefactor, -final_law.exponent
    else:
        try:
            B, beta = (float(v) for v in final_law)
        except (TypeError, ValueError):
            raise ValueError(f"final_law must be an ExponentFit or a (B, beta) pair, got {final_law!r}") from None
    if not (math.isfinite(B) and B >= 0 and math.isfinite(beta) and beta > 0):
        raise ValueError(f"final_law needs B >= 0 and beta > 0 (a shortfall B * F**-beta), got B={B!r}, beta={beta!r}")
    return B, beta


def _curve(curve) -> tuple[float, float, float]:
    if isinstance(curve, PowerLawFit):
        return curve.a, curve.b, curve.c
    try:
        a, b, c = (float(v) for v in curve)
    except (TypeError, ValueError):
        raise ValueError(f"curve must be a PowerLawFit or an (a, b, c) triple, got {curve!r}") from None
    if not all(math.isfinite(v) for v in (a, b, c)) or b < 0 or c <= 0:
        raise ValueError(f"curve needs finite a, b >= 0 and c > 0, got {(a, b, c)!r}")
    return a, b, c


def _positive(name: str, v) -> float:
    f = float(v)
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return f


def allocate_compute(curve: PowerLawFit | tuple, budget: float, run_cost: float,
                     final_law: ExponentFit | tuple) -> ComputeSplit:
    r"""The number of ablation runs that maximises the predicted final quality under a budget.

    .. math::
        N^* = \arg\max_{1 \le N < C/r}\; a - bN^{-c} - B\,(C - Nr)^{-\beta}

    Parameters
    ----------
    curve : PowerLawFit or (a, b, c)
        The recipe power law (:func:`~fastnips.datacuration.fit_power_law`).
    budget : float
        Total compute :math:`C` (> run_cost: at least one ablation and a final run).
    run_cost : float
        Compute of one ablation run :math:`r` (> 0), in the units of ``budget``.
    final_law : ExponentFit or (B, beta)
        The final run's shortfall :math:`B F^{-\beta}` at final compute F (``ExponentFit``: prefactor B,
        exponent :math:`-\beta`).

    Returns
    -------
    ComputeSplit

    Raises
    ------
    ValueError
        ``budget <= 0``, ``run_cost <= 0``, a budget that cannot pay one ablation run and a final run, a bad
        curve or law.

    Examples
    --------
    >>> from fastnips.datacuration import allocate_compute
    >>> s = allocate_compute((0.9, 0.3, 0.5), budget=1e4, run_cost=1.0, final_law=(50.0, 0.5))
    >>> 1 <= s.n_runs < 1e4 and s.final_compute == 1e4 - s.n_runs
    True
    """
    C, r = _positive("budget", budget), _positive("run_cost", run_cost)
    a, b, c = _curve(curve)
    B, beta = _law(final_law)
    n_max = math.ceil(C / r) - 1  # N r < C
    if n_max < 1:
        raise ValueError(f"budget={budget!r} cannot pay one ablation run (run_cost={run_cost!r}) and a final run")

    def score(N: np.ndarray) -> np.ndarray:
        return a - b * N ** -c - B * (C - N * r) ** -beta

    N = np.unique(np.round(np.geomspace(1, n_max, min(n_max, 400))).astype(np.int64))
    s = score(N.astype(np.float64))
    j = int(np.argmax(s))
    lo, hi = int(N[max(j - 1, 0)]), int(N[min(j + 1, N.size - 1)])
    while hi - lo > 64:  # S is concave in N: a ternary search keeps the bracket's maximum in O(log) steps
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        s1, s2 = score(np.array([float(m1), float(m2)]))
        lo, hi = (m1 + 1, hi) if s1 < s2 else (lo, m2)
    near = np.arange(lo, hi + 1, dtype=np.int64)
    sn = score(near.astype(np.float64))
    n_star = int(near[int(np.argmax(sn))])
    return ComputeSplit(budget=C, run_cost=r, n_runs=n_star, final_compute=C - n_star * r,
                        predicted=float(score(np.array([float(n_star)]))[0]), N=N, scores=s)


@dataclass(frozen=True, eq=False)
class Frontier:
    """The quality-quantity frontier over budgets (:func:`quality_quantity_frontier`).

    Attributes
    ----------
    budgets, n_runs, ablation_share, predicted : numpy.ndarray
        Per budget: the optimal number of ablation runs, the share :math:`N^* r / C` of the budget they take,
        and the predicted final quality.
    """

    budgets: np.ndarray
    n_runs: np.ndarray
    ablation_share: np.ndarray
    predicted: np.ndarray


def quality_quantity_frontier(curve: PowerLawFit | tuple, budgets: ArrayLike, run_cost: float,
                              final_law: ExponentFit | tuple) -> Frontier:
    r"""The optimal split :math:`N^*(C)` of :func:`allocate_compute` for each budget C.

    Parameters
    ----------
    curve, run_cost, final_law
        As for :func:`allocate_compute`.
    budgets : array_like of float
        Total budgets (each > run_cost).

    Returns
    -------
    Frontier
    """
    Cs = np.atleast_1d(np.asarray(budgets, dtype=np.float64))
    if Cs.ndim != 1 or Cs.size == 0:
        raise ValueError(f"budgets must be a non-empty 1-D array, got shape {np.shape(budgets)}")
    splits = [allocate_compute(curve, float(C), run_cost, final_law) for C in Cs]
    n = np.array([s.n_runs for s in splits])
    return Frontier(budgets=Cs, n_runs=n, ablation_share=n * float(run_cost) / Cs,
                    predicted=np.array([s.predicted for s in splits]))
