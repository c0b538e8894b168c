r"""Readable references of the submodular field: the oracles of the tests and the ``reference`` backend.

* :func:`all_masks`, :func:`set_table` -- :math:`f` on all :math:`2^n` subsets (row ``mask`` = the subset
  whose bit ``i`` is set iff ``i`` in S).
* :func:`greedy_reference` -- naive and lazy greedy (Minoux 1978) evaluating :math:`f(S + a) - f(S)` from
  ``values``; cardinality and/or knapsack (ratio greedy and the best singleton, Leskovec et al. 2007).
* :func:`certify_reference` -- monotonicity and :math:`\alpha`-diminishing returns by enumerating every pair
  :math:`S \subseteq T` (:math:`O(3^n n)`: n <= 12).
* :func:`brute_force_max` -- :math:`\max_{|S| \le k} f(S)` from the table.
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import ArrayLike

from .functions import SetFunction

__all__ = ["all_masks", "brute_force_max", "certify_reference", "greedy_reference", "set_table"]

REFERENCE_CERTIFY_MAX_N = 12


def all_masks(n: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Boolean rows of the subsets ``start .. stop - 1`` of ``{0..n-1}`` (bit i of the index: i in S)."""
    idx = np.arange(start, 1 << n if stop is None else stop, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n)) & 1).astype(bool)


def set_table(fn: SetFunction, chunk: int = 1 << 14) -> np.ndarray:
    """``table[mask] = fn.values(subset of mask)`` for all ``2^n`` masks (float64)."""
    n = fn.n
    out = np.empty(1 << n)
    for s in range(0, 1 << n, chunk):
        e = min(s + chunk, 1 << n)
        out[s:e] = fn.values(all_masks(n, s, e))
    return out


def _fits(a: int, taken: np.ndarray, costs, left: float) -> bool:
    return not taken[a] and (costs is None or costs[a] <= left)


def greedy_reference(fn: SetFunction, k: int | None = None, *, costs: ArrayLike | None = None,
                     budget: float | None = None, lazy: bool = False) -> tuple[list[int], list[float], bool]:
    """Greedy on ``fn`` (an object with ``n`` and ``values``); returns (selected, gains, singleton).

    Each step takes the candidate of the largest key (gain, or gain / cost with ``costs``), ties to the
    smaller index, among those not taken that fit the remaining budget; ``k`` caps the size. With costs the
    best feasible singleton replaces the result when it is worth more.
    """
    n = fn.n
    kmax = n if k is None else min(k, n)
    taken = np.zeros(n, bool)
    left = budget if costs is not None else 0.0

    def key(a, gain):
        return gain / costs[a] if costs is not None else gain

    def gains_of(cands, fS):
        masks = np.repeat(taken[None], len(cands), axis=0)
        masks[np.arange(len(cands)), cands] = True
        return fn.values(masks) - fS

    g0 = gains_of(np.arange(n), 0.0)
    selected, gains, fS = [], [], 0.0
    fresh: dict[int, float] = {}  # the lazy greedy's gains evaluated at their stamp's step
    heap = [(-key(a, g0[a]), a, 0) for a in range(n)] if lazy else None
    if lazy:
        heapq.heapify(heap)  # (-key, index): the smallest tuple is the largest key, ties to the smaller index
    for step in range(kmax):
        best, gain = -1, 0.0
        if lazy:
            while heap:
                _negkey, a, stamp = heapq.heappop(heap)
                if not _fits(a, taken, costs, left):
                    continue
                if stamp == step:
                    best, gain = a, (g0[a] if step == 0 else fresh[a])
                    break
                fresh[a] = float(gains_of(np.array([a]), fS)[0])
                heapq.heappush(heap, (-key(a, fresh[a]), a, step))
        else:
            cands = np.array([a for a in range(n) if _fits(a, taken, costs, left)], dtype=np.int64)
            if len(cands):
                gs = g0[cands] if step == 0 else gains_of(cands, fS)
                keys = [key(a, g) for a, g in zip(cands, gs, strict=True)]
                j = max(range(len(cands)), key=lambda i: (keys[i], -cands[i]))
                best, gain = int(cands[j]), float(gs[j])
        if best < 0:
            break
        taken[best] = True
        selected.append(best)
        gains.append(gain)
        fS = float(fn.values(taken[None])[0])
        if costs is not None:
            left -= costs[best]
    if costs is not None:
        feasible = [a for a in range(n) if costs[a] <= budget and kmax > 0]
        if feasible:
            a = max(feasible, key=lambda i: (g0[i], -i))
            if g0[a] > sum(gains):
                return [a], [float(g0[a])], True
    return selected, gains, False


def certify_reference(table: np.ndarray, alpha: float = 1.0, tol: float = 0.0) -> dict:
    """Monotonicity and alpha-DR of a ``2^n`` table by enumeration, in the result format of :func:`certify`."""
    size = len(table)
    n = size.bit_length() - 1
    if n > REFERENCE_CERTIFY_MAX_N:
        raise ValueError(f"the reference certificate enumerates 3^n pairs: n <= {REFERENCE_CERTIFY_MAX_N}, got {n}")
    none = {"a": -1, "S": 0, "T": 0, "dS": 0.0, "dT": 0.0}
    out = {"n": n, "monotone_violations": 0, "dr_violations": 0, "first_monotone": dict(none),
           "first_dr": dict(none), "alpha_observed": 1.0}
    for a in range(n):
        bit = 1 << a
        others = [t for t in range(size) if not t & bit]
        d = {t: table[t | bit] - table[t] for t in others}
        for s in others:
            if d[s] < -tol:
                if out["monotone_violations"] == 0:
                    out["first_monotone"] = {"a": a, "S": s, "T": 0, "dS": d[s], "dT": 0.0}
                out["monotone_violations"] += 1
        for t in others:
            s, best = t, (d[t], t)
            while True:  # every submask of t
                best = min(best, (d[s], s))
                if s == 0:
                    break
                s = (s - 1) & t
            if best[0] < alpha * d[t] - tol:
                if out["dr_violations"] == 0:
                    out["first_dr"] = {"a": a, "S": best[1], "T": t, "dS": best[0], "dT": d[t]}
                out["dr_violations"] += 1
            if d[t] > tol:
                out["alpha_observed"] = min(out["alpha_observed"], best[0] / d[t])
    return out


def brute_force_max(table: np.ndarray, k: int) -> tuple[float, int]:
    """(max f(S) over |S| <= k, the smallest maximising mask) from a ``2^n`` table."""
    size = len(table)
    n = size.bit_length() - 1
    sizes = ((np.arange(size)[:, None] >> np.arange(n)) & 1).sum(axis=1)
    vals = np.where(sizes <= k, table, -np.inf)
    best = int(np.argmax(vals))
    return float(vals[best]), best
