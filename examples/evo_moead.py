"""Classic vs self-adjusting MOEA/D on monotone distortions of LOTZ (``fastnips.evo``).

1. The holes of fixed weights: for n = 30 and each distortion (h1, h2), how many of the 31 Pareto points are
   optimal for at least one of 31 uniform Tchebycheff weights (the rest can never be held by classic MOEA/D's
   population).
2. Runs on n = 24: the self-adjusting MOEA/D covers the whole front under every distortion (in the same
   number of evaluations: its decisions are order comparisons), classic MOEA/D's population covers the
   fixed-weight optima only, its external archive more (reported separately).
3. The same run on the native loop and on the readable Python reference: identical coverage times.
4. With pymoo installed: the problem as a pymoo ``Problem`` (pymoo minimises, so F = -f).

Run: ``python examples/evo_moead.py`` (numpy; a few seconds). Seeded: the numbers repeat.
"""

from __future__ import annotations

import time

import numpy as np

from fastnips import _backend
from fastnips.evo import MOEAD, SelfAdjustingMOEAD, fixed_weight_optima, lotz, run, to_pymoo

DISTORTIONS = [("id", "id"), ("square", "id"), ("exp2", "id"), ("exp3", "exp3")]

print("1. Pareto points reachable by 31 fixed Tchebycheff weights, n = 30")
for h in DISTORTIONS:
    print(f"   h1 = {h[0]:6s} h2 = {h[1]:4s}: {len(fixed_weight_optima(lotz(30, *h))):2d} / 31")

n = 24
print(f"\n2. n = {n}, seed 0: covered Pareto points (of {n + 1})")
for h in DISTORTIONS:
    p = lotz(n, *h)
    sa = run(p, SelfAdjustingMOEAD(), 10 * n**4, seed=0)
    cl = run(p, MOEAD(archive=True), 40 * n**3, seed=0, stop_on_full=False)
    print(f"   {h[0]:6s}/{h[1]:4s}: self-adjusting {sa.population_coverage} after {sa.evaluations:,} evaluations; "
          f"classic population {cl.population_coverage}, archive {cl.archive_coverage} after {cl.evaluations:,}")

print("\n3. native loop vs Python reference (n = 12, classic MOEA/D, 5,000 evaluations)")
if _backend.why_unavailable("cpp"):
    print(f"   skipped: {_backend.why_unavailable('cpp')}")
else:
    times = {}
    for b in ("cpp", "reference"):
        t0 = time.perf_counter()
        times[b] = (run(lotz(12, "square"), MOEAD(archive=True), 5000, seed=7, stop_on_full=False, backend=b),
                    time.perf_counter() - t0)
    same = times["cpp"][0].same_trajectory(times["reference"][0])
    print(f"   identical trajectories: {same}; cpp {times['cpp'][1] * 1e3:.1f} ms, "
          f"reference {times['reference'][1] * 1e3:.0f} ms")

print("\n4. pymoo adapter")
try:
    pp = to_pymoo(lotz(6, "exp2"))
except ImportError as exc:
    print(f"   skipped: {exc}")
else:
    print("   F(111000) =", pp.evaluate(np.array([[1, 1, 1, 0, 0, 0]], dtype=bool)).tolist())
