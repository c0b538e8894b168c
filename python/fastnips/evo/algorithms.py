"""The two algorithms of :func:`fastnips.evo.run` (their settings, validated) and the result of a run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MOEAD", "RunResult", "SelfAdjustingMOEAD"]

DECOMPOSITIONS = ("tchebycheff", "weighted_sum")
MAX_CELLS = 1 << 27  # (N + 1) * max(T, ceil(n / 64)): the neighbourhood table and the population words
# N + 1 subproblems also cost 48 bytes each natively (weights, raw and distorted objectives) and a few hundred
# in the reference: 2^27 of them (what MAX_CELLS alone allows at T = 1) meant 8 GiB before the first evaluation.
MAX_SUBPROBLEMS = 1 << 22


def flag(name: str, v: object) -> bool:
    """A bool argument: True/False or numpy's bool_ (as Python bool); anything else is a TypeError naming it."""
    if not isinstance(v, bool | np.bool_):
        raise TypeError(f"{name} must be a bool (True or False), got {type(v).__name__} {v!r}")
    return bool(v)


@dataclass(frozen=True)
class MOEAD:
    """Classic MOEA/D (Zhang & Li 2007) with fixed uniform weights, mutation only, as in its runtime analyses.

    N+1 subproblems with weights lambda_j = (j/N, 1 - j/N) and neighbourhoods B(j) of the T nearest weights
    (ties to the smaller index). One generation visits j = 0..N in order: a parent is drawn uniformly from the
    solutions of B(j), mutated by standard bit mutation (each bit flips with probability 1/n), evaluated; the
    reference point z* (the best value seen of each objective) is updated; then every k in B(j) takes the
    offspring when g(y | lambda_k, z*) <= g(x_k | lambda_k, z*) (ties accepted, as in the runtime analyses;
    pymoo replaces only on strict improvement). Subproblems:

    * Tchebycheff: g = max_i lambda_i (z*_i - f_i);
    * weighted sum: g = -(lambda_1 f_1 + lambda_2 f_2).

    The initial population is N+1 uniform random strings. No crossover: the theory of the paper (and of
    LOTZ runtime analyses) is about mutation; pymoo's default adds crossover.

    Parameters
    ----------
    decomposition : {"tchebycheff", "weighted_sum"}
    n_weights : int, optional
        N (N+1 subproblems); default the string length n.
    n_neighbors : int, optional
        T, the neighbourhood size (1 <= T <= N+1); default min(20, N+1) (pymoo's default 20).
    archive : bool
        Keep an external archive (EP) of the non-dominated points seen and report its coverage separately.
        EP does not steer the search, so the trajectory is the same with and without it.
    """

    decomposition: str = "tchebycheff"
    n_weights: int | None = None
    n_neighbors: int | None = None
    archive: bool = False

    def __post_init__(self):
        if self.decomposition not in DECOMPOSITIONS:
            raise ValueError(f"decomposition must be one of {DECOMPOSITIONS}, got {self.decomposition!r}")
        for name in ("n_weights", "n_neighbors"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1):
                raise ValueError(f"{name} must be None or an int >= 1, got {v!r}")
        object.__setattr__(self, "archive", flag("archive", self.archive))

    def sizes(self, n: int) -> tuple[int, int]:
        """(N, T) for strings of length n; a ValueError when T > N+1, the tables would pass 2^27 entries or N+1
        would pass 2^22 subproblems."""
        N = n if self.n_weights is None else int(self.n_weights)
        T = min(20, N + 1) if self.n_neighbors is None else int(self.n_neighbors)
        if T > N + 1:
            raise ValueError(f"n_neighbors = {T} exceeds the number of subproblems N+1 = {N + 1}")
        if (N + 1) * max(T, -(-n // 64)) > MAX_CELLS:
            raise ValueError(f"(n_weights + 1) * max(n_neighbors, n / 64) = {(N + 1) * max(T, -(-n // 64)):,} exceeds "
                             f"{MAX_CELLS:,} (the neighbourhood table and the population)")
        if N + 1 > MAX_SUBPROBLEMS:
            raise ValueError(f"n_weights + 1 = {N + 1:,} subproblems exceeds {MAX_SUBPROBLEMS:,}")
        return N, T


@dataclass(frozen=True)
class SelfAdjustingMOEAD:
    """Self-adjusting MOEA/D: subproblems rebuilt from the front found so far.

    The paper's own rule is not public; this is the rule fastnips uses, and why. Let F be the non-dominated
    points found so far, sorted by f1 (so f2 decreases), z* the ideal point and d(p) = z* - f(p) > 0 (z* taken
    just above the ideal). The subproblems are Tchebycheff with

    * one *point* subproblem per p in F, lambda = (1/d1(p), 1/d2(p)): its optima are exactly the vectors that
      weakly dominate p, so it keeps p;
    * one *gap* subproblem per consecutive pair p_a, p_b of F, lambda = (1/d1(p_a), 1/d2(p_b)): every point
      strictly between them in both objectives has g < 1 = g(p_a) = g(p_b), whatever the distortion, so the
      gap is attractive until something fills it (the proof sketch: for p inside, d1(p) < d1(p_a) and
      d2(p) < d2(p_b));
    * two *boundary* subproblems lambda = (1, 0) and (0, 1) that push the extremes (ties accepted).

    Because each weight is set from the points it separates, every acceptance reduces to an order comparison of
    objective values: a point subproblem takes y on a tie or better (g(y) <= 1: y weakly dominates p), a gap
    subproblem on a strict improvement (g(y) < 1: y strictly inside the box of p_a, p_b), a boundary subproblem
    when y passes the extreme of F; together they take exactly the y that no member of F dominates (checked in
    exact arithmetic by tests/evo/test_rule.py). So the population is the non-dominated set F, plus the two
    boundary solutions (ties accepted) that serve as parents. The loop decides those comparisons on the raw
    values (the same decisions, without rounding z* - f: in doubles 2^100 - 2^3 and 2^100 - 2^4 are equal),
    so a run is *invariant under every monotone distortion*, which is the point: the decomposition adapts to
    the instance. Each step draws one of the 2|F| + 1 subproblems uniformly; its solution is the parent (a gap
    takes one of its two endpoints at random); standard bit mutation; the offspring is offered to all
    subproblems. A gap whose endpoints are adjacent on the front stays (a black-box algorithm cannot know that
    the gap is empty); it costs at most a factor 2.

    Parameters
    ----------
    archive : bool
        Also report the coverage of an external archive of non-dominated points; here it equals the
        population's (a Pareto point, once found, is never dominated and stays in F).
    """

    archive: bool = False

    def __post_init__(self):
        object.__setattr__(self, "archive", flag("archive", self.archive))


@dataclass(frozen=True, eq=False)
class RunResult:
    """Coverage of the Pareto front over one run of :func:`fastnips.evo.run`.

    Pareto point i is the one with raw objectives (i, n-i). Evaluations count from 1 (the first initial
    string); -1 means never.

    Attributes
    ----------
    evaluations : int
        Evaluations used (the budget, or fewer when the run stopped at full coverage).
    first_population : numpy.ndarray
        int64 (n+1,): the evaluation at which a solution of each Pareto point first entered the population.
    final_population : numpy.ndarray
        bool (n+1,): the Pareto points the population holds at the end.
    full_population : int
        The first evaluation at which the population held all n+1 points at once (-1: never).
    first_archive, final_archive, full_archive
        The same for the external archive; None when the algorithm ran without one.
    digest : int or None
        A 64-bit digest of every evaluation's raw objectives, in order, and of the final RNG state (FNV-1a
        style: ``d = (d ^ (r1 (n + 1) + r2)) * 0x100000001B3`` per evaluation, then ``d ^ next draw``): equal
        on both backends for the same run; it tells apart trajectories whose coverage records agree.
    backend : str
        The backend that ran.
    """

    evaluations: int
    first_population: np.ndarray
    final_population: np.ndarray
    full_population: int
    first_archive: np.ndarray | None = None
    final_archive: np.ndarray | None = None
    full_archive: int | None = None
    digest: int | None = None
    backend: str = field(default="reference", compare=False)

    @property
    def population_coverage(self) -> int:
        """The number of Pareto points the population holds at the end."""
        return int(self.final_population.sum())

    @property
    def archive_coverage(self) -> int | None:
        """The number of Pareto points the archive holds at the end (None without an archive)."""
        return None if self.final_archive is None else int(self.final_archive.sum())

    def coverage_curve(self, archive: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(evaluations, points ever covered so far): the step curve of the first coverage times, sorted.

        For the population this counts the Pareto points that have been held *at some time*: classic MOEA/D
        loses points again (on 2^v its population passes through interior points and ends on the two
        extremes), so the curve can end above ``population_coverage``. For the self-adjusting MOEA/D and for
        the archive a covered point is never lost, and the curve is the coverage at each time."""
        first = self.first_archive if archive else self.first_population
        if first is None:
            raise ValueError("this run kept no archive (archive=False)")
        t = np.sort(first[first >= 0])
        return t, np.arange(1, t.size + 1)

    def same_trajectory(self, other: RunResult) -> bool:
        """Whether two runs agree on every count, every coverage time and the digest (backend aside)."""
        def eq(a, b):
            return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
        return (self.evaluations == other.evaluations and self.full_population == other.full_population
                and self.full_archive == other.full_archive and self.digest == other.digest
                and all(eq(getattr(self, k), getattr(other, k)) for k in
                        ("first_population", "final_population", "first_archive", "final_archive")))
