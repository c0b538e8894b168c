"""Evaluations per second: fastnips' classic MOEA/D (the whole loop in C++, and the Python reference) vs pymoo's
MOEAD on the same problem, the same weights and the same budget.

Problem: LOTZ, n = 10, h1 = exp(v/3), h2 = exp(v/3) (a front where fixed Tchebycheff weights leave holes);
N = n (11 subproblems), T = 3, mutation only (pymoo: two-point crossover with probability 0, bit-flip
mutation 1/n, prob_neighbor_mating = 1). Every run checks that the final population sits on exactly the
fixed-weight Tchebycheff optima (fastnips.evo.fixed_weight_optima), for ours and pymoo's alike. The native
loop is also timed on a long run (10^6 evaluations), where the per-call overhead vanishes; the ratio of
evaluations per second is the number to read (extra_info["evals_per_s"]).
"""

from __future__ import annotations

import numpy as np
import pytest

from fastnips import _backend
from fastnips.evo import MOEAD, fixed_weight_optima, lotz, pymoo_moead, run

N_BITS, T, BUDGET, LONG = 10, 3, 3000, 1_000_000
PROBLEM = lotz(N_BITS, "exp3", "exp3")
EXPECTED = fixed_weight_optima(PROBLEM).tolist()


def _pymoo(seed: int) -> list[int]:
    return PROBLEM.front_points(pymoo_moead(PROBLEM, BUDGET, seed, n_neighbors=T))


def _ours(backend: str, budget: int, seed: int) -> list[int]:
    res = run(PROBLEM, MOEAD(n_neighbors=T), budget, seed, stop_on_full=False, backend=backend)
    assert res.evaluations == budget
    return np.flatnonzero(res.final_population).tolist()


@pytest.mark.parametrize(("impl", "budget"), [("cpp", LONG), ("cpp", BUDGET), ("reference", BUDGET),
                                              ("pymoo", BUDGET)])
def test_moead_evaluations_per_second(machine_facts, impl, budget):
    benchmark = machine_facts
    benchmark.group = f"moead lotz n={N_BITS} exp3/exp3, N={N_BITS}, T={T}"
    if impl == "pymoo":
        pytest.importorskip("pymoo", reason="pymoo is not installed (pip install pymoo)")
        fn = lambda: _pymoo(1)
    else:
        if _backend.why_unavailable(impl):
            pytest.skip(_backend.why_unavailable(impl))
        fn = lambda: _ours(impl, budget, 1)
    rounds = 3
    points = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)
    assert points == EXPECTED  # ours and pymoo's populations end on the fixed-weight optima
    benchmark.extra_info.update(evaluations=budget)
    if benchmark.stats is not None:
        benchmark.extra_info["evals_per_s"] = budget / benchmark.stats.stats.median
