"""``run``: one evolutionary run on the backend of choice (the native loop of ``csrc/evo/`` or the reference)."""

from __future__ import annotations

import numpy as np

from .. import _backend
from .algorithms import MOEAD, RunResult, SelfAdjustingMOEAD, flag
from .problems import Problem
from .reference import run_moead_reference, run_self_adjusting_reference

__all__ = ["EVO_BACKENDS", "run"]

EVO_BACKENDS = ("reference", "cpp")
MAX_BUDGET = 1 << 62


def _check(problem, algorithm, budget, seed) -> None:
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastnips.evo Problem (lotz(...), one_min_max(...)), got "
                        f"{type(problem).__name__}")
    if not isinstance(algorithm, MOEAD | SelfAdjustingMOEAD):
        raise TypeError(f"algorithm must be MOEAD(...) or SelfAdjustingMOEAD(...), got {type(algorithm).__name__}")
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer):
        raise TypeError(f"budget must be an int (evaluations), got {type(budget).__name__}")
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"budget must be >= 1 evaluation (and <= 2^62), got {budget}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be an int in [0, 2^64), got {seed!r}")
    if isinstance(algorithm, MOEAD):
        algorithm.sizes(problem.n)  # T <= N + 1


def run(problem: Problem, algorithm: MOEAD | SelfAdjustingMOEAD, budget: int, seed: int = 0, *,
        stop_on_full: bool = True, backend: str = "auto") -> RunResult:
    """Run MOEA/D on a (distorted) LOTZ or OneMinMax problem and record the coverage of its Pareto front.

    Coverage: Pareto point i (raw objectives (i, n-i)) is covered by the population when some subproblem's
    solution sits on it, and by the external archive when it was ever evaluated (a non-dominated archive
    never drops a Pareto point). The run stops after ``budget`` evaluations, or earlier, when
    ``stop_on_full``, at the first evaluation at which the population covers all n+1 points (the runtime of
    the theory: the paper proves O(n^4) expected evaluations for its self-adjusting MOEA/D on every monotone
    distortion of LOTZ).

    Parameters
    ----------
    problem : Problem
        :func:`~fastnips.evo.lotz` or :func:`~fastnips.evo.one_min_max`, with its distortion.
    algorithm : MOEAD or SelfAdjustingMOEAD
    budget : int
        The most evaluations (>= 1), initial strings included.
    seed : int
        In [0, 2^64); the whole run is a function of it (xoshiro256**, see :mod:`fastnips.evo.reference`), the
        same on every backend.
    stop_on_full : bool
        Stop at full population coverage.
    backend : {"auto", "cpp", "reference"}
        ``cpp``: the whole loop in C++ (``fastnips._C.evo_run``); ``reference``: the readable Python loop.
        Both give the same :class:`RunResult` for a seed.

    Returns
    -------
    RunResult

    Examples
    --------
    >>> from fastnips.evo import lotz, run, SelfAdjustingMOEAD
    >>> res = run(lotz(10, h1="exp2"), SelfAdjustingMOEAD(), budget=10**6, seed=1)
    >>> res.population_coverage
    11
    """
    _check(problem, algorithm, budget, seed)
    stop_on_full = flag("stop_on_full", stop_on_full)
    chosen = _backend.resolve(backend, op="evo.run", supported=EVO_BACKENDS)
    if chosen == "reference":
        fn = run_moead_reference if isinstance(algorithm, MOEAD) else run_self_adjusting_reference
        return fn(problem, algorithm, int(budget), int(seed), stop_on_full)
    return _run_native(problem, algorithm, int(budget), int(seed), stop_on_full)


def _run_native(problem: Problem, algorithm, budget: int, seed: int, stop_on_full: bool) -> RunResult:
    C = _backend.native()
    if isinstance(algorithm, MOEAD):
        N, T = algorithm.sizes(problem.n)
        kind, decomposition, archive = "moead", algorithm.decomposition, algorithm.archive
    else:
        N, T, kind, decomposition, archive = 0, 0, "self_adjusting", "tchebycheff", algorithm.archive
    out = C.evo_run(problem.kind, problem.n, np.ascontiguousarray(problem.h1), np.ascontiguousarray(problem.h2),
                    kind, decomposition, N, T, archive, budget, seed, stop_on_full)
    return RunResult(evaluations=int(out["evaluations"]), first_population=out["first_population"],
                     final_population=out["final_population"].astype(bool),
                     full_population=int(out["full_population"]),
                     first_archive=out["first_archive"] if archive else None,
                     final_archive=out["final_archive"].astype(bool) if archive else None,
                     full_archive=int(out["full_archive"]) if archive else None, digest=int(out["digest"]),
                     backend="cpp")
