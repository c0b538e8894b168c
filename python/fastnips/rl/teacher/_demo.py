"""The ``fastnips demo`` row of paper 6 (teacher): one budgeted comparison of the four strategies, in seconds.

Budgeted in teacher calls and episodes, never in seconds, so a seed gives the same numbers on any load.
"""

from __future__ import annotations

import time

__all__ = ["demo_teacher"]

DEMO_BUDGET = 96  # teacher calls: between "nobody solves the lock" and "everybody does" on this lock
DEMO_STRATEGIES = (("bc", "BC"), ("continuation", "(i) k=1"), ("filtered", "(ii) filtered"),
                   ("failed_only", "(iii) failed-only"))


def demo_teacher(seed: int) -> list[dict]:
    """Four rows: BC and the constructions (i) k = 1, (ii), (iii) at the same teacher budget.

    A 12-dial combination lock (32 runes, 4 digits, horizon 24), 96 teacher calls in 4 rounds (the first one
    BC for all), the count-based student, 3 training seeds (``seed .. seed + 2``), 200 evaluation episodes each:
    the mean success rate (higher is better).

    Parameters
    ----------
    seed : int

    Returns
    -------
    list of dict
        ``{"task", "backend", "measure", "result", "detail", "values"}`` rows (``fastnips._demo_rows`` format).

    Examples
    --------
    >>> [r["result"] for r in demo_teacher(0)]  # doctest: +SKIP
    """
    import numpy as np

    from . import CombinationLock, ScriptedTeacher, TabularStudent, success_rate, train_on_budget

    env = CombinationLock(12, n_digits=4, n_runes=32)
    rows = []
    for construction, name in DEMO_STRATEGIES:
        t0 = time.perf_counter()
        rates, spent = [], []
        for s in range(seed, seed + 3):
            st, ds = train_on_budget(env, ScriptedTeacher(), TabularStudent(), construction, DEMO_BUDGET, k=1,
                                     rounds=4, seed=s)
            rates.append(success_rate(env, st, 200, seed=10_000 + s))
            spent.append(ds.info["spent"])
        rate = float(np.mean(rates))
        rows.append({"task": "teacher", "backend": "numpy", "measure": "success rate (higher is better)",
                     "result": f"{name}: {rate:.2f}",
                     "detail": f"12-dial rune lock, {DEMO_BUDGET} teacher calls (spent {min(spent)}-{max(spent)}), "
                               f"4 rounds, count-based student, 3 seeds x 200 episodes; "
                               f"per seed {', '.join(f'{r:.2f}' for r in rates)} ({time.perf_counter() - t0:.1f} s)",
                     "values": {"strategy": construction, "success": rate, "per_seed": rates,
                                "budget": DEMO_BUDGET, "spent": spent}})
    return rows
