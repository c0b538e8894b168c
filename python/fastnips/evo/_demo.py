"""``fastnips demo`` row of the evo package: on LOTZ under the distortion 2^v (the hole table's worst case), the
self-adjusting MOEA/D covers the whole front while classic Tchebycheff MOEA/D's population holds the two
extremes; budgets in evaluations, so a seed gives the same row on any load."""

from __future__ import annotations

import time

__all__ = ["demo_moead"]

N_BITS = 20
CLASSIC_BUDGET = 20 * N_BITS**3  # 160,000 evaluations


def demo_moead(seed: int) -> list[dict]:
    """One row: Pareto points covered by the self-adjusting vs the classic MOEA/D (population and archive)."""
    from .. import _backend
    from . import EVO_BACKENDS, MOEAD, SelfAdjustingMOEAD, fixed_weight_optima, lotz, run

    p = lotz(N_BITS, h1="exp2")
    backend = _backend.resolve("auto", op="evo.run", supported=EVO_BACKENDS)
    t0 = time.perf_counter()
    sa = run(p, SelfAdjustingMOEAD(), 10 * N_BITS**4, seed, backend=backend)
    t_sa = time.perf_counter() - t0
    t0 = time.perf_counter()
    cl = run(p, MOEAD(archive=True), CLASSIC_BUDGET, seed, stop_on_full=False, backend=backend)
    t_cl = time.perf_counter() - t0
    pts, holes = N_BITS + 1, N_BITS + 1 - len(fixed_weight_optima(p))
    return [{"task": "moead", "backend": backend, "measure": "Pareto points covered ↑",
             "result": f"self-adjusting {sa.population_coverage}/{pts}, classic {cl.population_coverage}/{pts} "
                       f"(archive {cl.archive_coverage}/{pts})",
             "detail": f"LOTZ n = {N_BITS}, h1 = 2^v (fixed Tchebycheff weights leave {holes} holes): the "
                       f"self-adjusting MOEA/D covers the front in {sa.evaluations:,} evaluations ({t_sa:.2f} s); "
                       f"classic MOEA/D (N = {N_BITS}) after {cl.evaluations:,} evaluations ({t_cl:.2f} s)",
             "values": {"self_adjusting_covered": sa.population_coverage, "self_adjusting_evaluations": sa.evaluations,
                        "classic_population": cl.population_coverage, "classic_archive": cl.archive_coverage,
                        "classic_evaluations": cl.evaluations, "points": pts, "seconds_self_adjusting": t_sa,
                        "seconds_classic": t_cl}}]
