"""Bi-objective pseudo-Boolean benchmarks (LOTZ, OneMinMax), their monotone distortions, and which Pareto points
fixed decomposition weights can reach (the "hole table").

LOTZ(x) = (LO(x), TZ(x)) counts the leading ones and the trailing zeros of a bit string x in {0,1}^n; both are
maximised. Its Pareto set is {1^i 0^(n-i) : i = 0..n}, the n+1 points (i, n-i) of the front. OneMinMax(x) =
(|x|_0, |x|_1) (zeros, ones): every string is Pareto optimal and the front is again (i, n-i). A monotone
distortion maps the two raw objective values through strictly increasing functions h1, h2: f(x) = (h1(r1(x)),
h2(r2(x))). The Pareto set does not change, but the shape of the front in objective space does, and fixed
Tchebycheff or weighted-sum weights then miss most of it.

A distortion is stored as its table of values on the raw range 0..n, which is all any algorithm ever reads;
that makes the native and the reference loops read the very same doubles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DISTORTIONS", "Problem", "distortion_table", "fixed_weight_optima", "lotz", "one_min_max",
           "uniform_weights"]

KINDS = ("lotz", "oneminmax")
MAX_ABS_VALUE = 2.0**1020  # |h| bound: differences and convex combinations of two values stay below 2^1022
MAX_TABLE_CELLS = 1 << 28  # subproblem values of fixed_weight_optima ((N + 1) * (n + 1)): seconds, 8 MiB blocks

# The distortions of the planning study of the paper (monotone maps of the raw values 0..n).
DISTORTIONS: dict[str, Callable[[int], float]] = {
    "id": lambda v: float(v),
    "square": lambda v: float(v) ** 2,
    "exp2": lambda v: 2.0 ** v,
    "exp3": lambda v: math.exp(v / 3.0),
}

Distortion = str | Callable[[int], float] | Sequence[float] | np.ndarray | None


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"n must be an int (the string length), got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1 (the string length), got {n}")
    if n > 100_000:
        raise ValueError(f"n must be <= 100000, got {n}")
    return int(n)


def distortion_table(h: Distortion, n: int, *, name: str = "h") -> np.ndarray:
    """The values ``h(0), ..., h(n)`` of a monotone distortion, checked strictly increasing and finite.

    Parameters
    ----------
    h : str, callable, array-like or None
        A name of :data:`DISTORTIONS` (``"id"``, ``"square"`` = v^2, ``"exp2"`` = 2^v, ``"exp3"`` =
        exp(v/3)), a callable ``h(v) -> float`` evaluated at the integers 0..n, or the n+1 values themselves.
        None is the identity.
    n : int
        The string length: the raw objective values are 0..n.
    name : str
        The argument's name in error messages.

    Returns
    -------
    numpy.ndarray
        float64, shape (n+1,), strictly increasing.

    Raises
    ------
    ValueError
        When a value is not finite or the map is not strictly increasing on 0..n (the first offending pair is
        named): such a map changes the Pareto set, so the problem would not be a distortion of LOTZ. Also when
        a value exceeds 2^1020 in magnitude: z* - f or a weighted sum would overflow to infinity.

    Examples
    --------
    >>> distortion_table("square", 3).tolist()
    [0.0, 1.0, 4.0, 9.0]
    """
    n = _check_n(n)
    if h is None:
        h = "id"
    if isinstance(h, str):
        if h not in DISTORTIONS:
            raise ValueError(f"{name}: unknown distortion {h!r}; choose one of {', '.join(DISTORTIONS)}, "
                             "a callable or an array of n+1 values")
        h = DISTORTIONS[h]
    if callable(h):
        try:
            vals = [float(h(v)) for v in range(n + 1)]
        except (TypeError, ValueError, ArithmeticError) as exc:  # ZeroDivisionError, OverflowError included
            raise ValueError(f"{name} must map the integers 0..{n} to real numbers: {exc}") from exc
        t = np.asarray(vals, dtype=np.float64)
    else:
        try:
            t = np.asarray(h)
            if t.dtype.kind in "cmMSUV":  # complex, dates, strings, records; objects (Fractions ...) may convert
                raise TypeError(f"dtype {t.dtype}")
            t = t.astype(np.float64)  # a copy: the table is frozen below
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name} must be a callable, a name or an array of n+1 real numbers (the values at "
                            f"0..{n}): {exc}") from exc
        if t.shape != (n + 1,):
            raise ValueError(f"{name} as values must have shape ({n + 1},) (the values at 0..n), got {t.shape}")
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise ValueError(f"{name} must be finite on 0..{n}; {name}({bad[0]}) = {float(t[bad[0]])}")
    big = np.flatnonzero(np.abs(t) > MAX_ABS_VALUE)
    if big.size:  # z* - f or a weighted sum would overflow to inf, and 0 * inf = NaN rejects every offspring
        raise ValueError(f"{name} must lie within +-2^1020 (about 1.1e307) on 0..{n}, so that z* - f and weighted "
                         f"sums stay finite; {name}({big[0]}) = {float(t[big[0]])!r}")
    down = np.flatnonzero(np.diff(t) <= 0)
    if down.size:
        v = int(down[0])
        raise ValueError(f"{name} must be strictly increasing on 0..{n} (a monotone distortion), but "
                         f"{name}({v}) = {float(t[v])!r} >= {name}({v + 1}) = {float(t[v + 1])!r}")
    t.setflags(write=False)
    return t


@dataclass(frozen=True, eq=False)
class Problem:
    """A bi-objective pseudo-Boolean problem: LOTZ or OneMinMax under the distortion (h1, h2), maximised.

    Build it with :func:`lotz` or :func:`one_min_max`. ``h1`` and ``h2`` are the distortion tables (values at
    0..n). Pareto point ``i`` is the front point whose raw objectives are (i, n-i).
    """

    kind: str
    n: int
    h1: np.ndarray
    h2: np.ndarray
    label: str = ""

    def __post_init__(self):
        # Problem is public: one built by hand (or by dataclasses.replace) is checked like lotz(...) checks it.
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        n = _check_n(self.n)
        object.__setattr__(self, "n", n)
        for name in ("h1", "h2"):
            object.__setattr__(self, name, distortion_table(getattr(self, name), n, name=name))
        if not self.label:  # repr() of a hand-built problem was the empty string
            object.__setattr__(self, "label", f"{self.kind}(n={n}, h1=custom, h2=custom)")

    def __repr__(self) -> str:
        return self.label

    @property
    def n_points(self) -> int:
        """The size of the Pareto front, n + 1."""
        return self.n + 1

    def raw(self, x: Sequence[int] | np.ndarray) -> tuple[int, int]:
        """The undistorted objectives of a bit string ``x`` (a sequence of 0/1 of length n)."""
        bits = [int(b) for b in x]
        if len(bits) != self.n or any(b not in (0, 1) for b in bits):
            raise ValueError(f"x must be {self.n} bits of 0/1, got length {len(bits)}")
        if self.kind == "lotz":
            lo = next((i for i, b in enumerate(bits) if b == 0), self.n)
            tz = next((i for i, b in enumerate(reversed(bits)) if b == 1), self.n)
            return lo, tz
        ones = sum(bits)
        return self.n - ones, ones

    def evaluate(self, x: Sequence[int] | np.ndarray) -> tuple[float, float]:
        """The (distorted) objective vector f(x) = (h1(r1), h2(r2)), to be maximised."""
        r1, r2 = self.raw(x)
        return float(self.h1[r1]), float(self.h2[r2])

    def front(self) -> np.ndarray:
        """The Pareto front in objective space, shape (n+1, 2): row i = (h1(i), h2(n-i))."""
        i = np.arange(self.n + 1)
        return np.stack([self.h1[i], self.h2[self.n - i]], axis=1)


    def front_points(self, F: np.ndarray) -> list[int]:
        """The sorted distinct Pareto points i among the objective vectors ``F`` (shape (m, 2), maximised):
        rows equal to (h1(i), h2(n-i)); rows off the front are ignored."""
        F = np.asarray(F, dtype=np.float64).reshape(-1, 2)
        hit = (F[:, None, :] == self.front()[None, :, :]).all(axis=2)
        return np.flatnonzero(hit.any(axis=0)).tolist()


def _make(kind: str, n, h1: Distortion, h2: Distortion) -> Problem:
    n = _check_n(n)
    t1, t2 = distortion_table(h1, n, name="h1"), distortion_table(h2, n, name="h2")
    lab = lambda h: h if isinstance(h, str) else ("id" if h is None else "custom")
    return Problem(kind, n, t1, t2, f"{kind}(n={n}, h1={lab(h1)}, h2={lab(h2)})")


def lotz(n: int, h1: Distortion = None, h2: Distortion = None) -> Problem:
    """LOTZ (leading ones, trailing zeros) on n bits under the monotone distortion (h1, h2).

    Parameters
    ----------
    n : int
        String length (>= 1); the front has n + 1 points.
    h1, h2 : str, callable, array-like or None
        Strictly increasing maps of the raw values 0..n (see :func:`distortion_table`); None is the identity.

    Returns
    -------
    Problem

    Examples
    --------
    >>> p = lotz(4, h1="exp2")
    >>> p.evaluate([1, 1, 0, 0])
    (4.0, 2.0)
    """
    return _make("lotz", n, h1, h2)


def one_min_max(n: int, h1: Distortion = None, h2: Distortion = None) -> Problem:
    """OneMinMax(x) = (number of zeros, number of ones) on n bits under the monotone distortion (h1, h2).

    Parameters
    ----------
    n : int
        String length (>= 1); every string is Pareto optimal, the front has n + 1 points.
    h1, h2 : str, callable, array-like or None
        Strictly increasing maps of the raw values 0..n (see :func:`distortion_table`).

    Returns
    -------
    Problem

    Examples
    --------
    >>> one_min_max(3).evaluate([1, 0, 1])
    (1.0, 2.0)
    """
    return _make("oneminmax", n, h1, h2)


def uniform_weights(n_weights: int) -> np.ndarray:
    """The N+1 uniform weight vectors lambda_j = (j/N, 1 - j/N), j = 0..N, shape (N+1, 2).

    Computed as ``j / N`` and ``1.0 - j / N`` in float64, exactly as the native loop does.
    """
    if isinstance(n_weights, bool) or not isinstance(n_weights, int | np.integer) or n_weights < 1:
        raise ValueError(f"n_weights must be an int >= 1 (N: the number of weight vectors is N+1), got {n_weights!r}")
    w1 = [j / int(n_weights) for j in range(int(n_weights) + 1)]
    return np.array([(a, 1.0 - a) for a in w1], dtype=np.float64)


def subproblem_value(decomposition: str, lam: Sequence[float], z: Sequence[float], f: Sequence[float]) -> float:
    """g(f | lambda, z*): Tchebycheff max_i lambda_i (z*_i - f_i) or weighted sum -(lambda . f); minimised.

    The one formula both reference loops and the hole table use; the native loop evaluates it with the same
    operations in the same order (bit-identical doubles).
    """
    if decomposition == "tchebycheff":
        return max(lam[0] * (z[0] - f[0]), lam[1] * (z[1] - f[1]))
    return -(lam[0] * f[0] + lam[1] * f[1])


def fixed_weight_optima(problem: Problem, n_weights: int | None = None,
                        decomposition: str = "tchebycheff") -> np.ndarray:
    """The Pareto points that are optimal for at least one of N+1 uniform fixed weights (the rest are holes).

    For every weight lambda_j = (j/N, 1 - j/N) the subproblem g(f | lambda_j, z*) is minimised over the front,
    with z* = (h1(n), h2(n)) the ideal point (what classic MOEA/D's reference point converges to); a point
    counts when it attains the minimum of some subproblem (ties included). Dominated strings never attain it,
    so this is exactly the set of points classic MOEA/D's population can hold at its subproblems' optima.

    Parameters
    ----------
    problem : Problem
    n_weights : int, optional
        N (N+1 weights); default n.
    decomposition : {"tchebycheff", "weighted_sum"}

    Returns
    -------
    numpy.ndarray
        Sorted int64 indices i of the reachable Pareto points (raw objectives (i, n-i)).

    Raises
    ------
    ValueError
        For an unknown decomposition, n_weights < 1, or (n_weights + 1) * (n + 1) above 2^28 values (refused
        before any work).

    Examples
    --------
    >>> fixed_weight_optima(lotz(30, h1="exp2")).tolist()
    [0, 30]
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastnips.evo Problem (lotz(...), one_min_max(...)), got {type(problem)}")
    if decomposition not in ("tchebycheff", "weighted_sum"):
        raise ValueError(f"decomposition must be 'tchebycheff' or 'weighted_sum', got {decomposition!r}")
    N = problem.n if n_weights is None else n_weights
    if isinstance(N, bool) or not isinstance(N, int | np.integer) or N < 1:
        raise ValueError(f"n_weights must be an int >= 1 (N: the number of weight vectors is N+1), got {N!r}")
    if (int(N) + 1) * (problem.n + 1) > MAX_TABLE_CELLS:
        raise ValueError(f"n_weights = {N}: too many (n_weights + 1) * (n + 1) = {(int(N) + 1) * (problem.n + 1):,} "
                         f"subproblem values; at most {MAX_TABLE_CELLS:,}")
    lam = uniform_weights(int(N))
    front = problem.front()
    z = (float(problem.h1[-1]), float(problem.h2[-1]))
    hit = np.zeros(problem.n + 1, dtype=bool)
    step = max(1, (1 << 20) // (problem.n + 1))  # weights per block: about 2^20 values at a time
    for s in range(0, lam.shape[0], step):
        w = lam[s:s + step]
        # subproblem_value, elementwise: the same IEEE operations in the same order, so the same doubles and ties
        if decomposition == "tchebycheff":
            g = np.maximum(w[:, :1] * (z[0] - front[None, :, 0]), w[:, 1:] * (z[1] - front[None, :, 1]))
        else:
            g = -(w[:, :1] * front[None, :, 0] + w[:, 1:] * front[None, :, 1])
        hit |= (g == g.min(axis=1, keepdims=True)).any(axis=0)
    return np.flatnonzero(hit).astype(np.int64)
