"""Runtime study of the self-adjusting MOEA/D (issue 20, item 3): evaluations to full coverage of the LOTZ front
vs the string length n, the fitted exponent with a bootstrap interval, against the paper's O(n^4) bound.

    OMP_NUM_THREADS=1 python bench/evo/eval_runtime.py                  # n = 8 ... 320, 10 seeds (minutes)
    OMP_NUM_THREADS=1 python bench/evo/eval_runtime.py --n-max 128      # shorter
    python bench/evo/eval_runtime.py --quick --out /tmp/evo             # seconds; what tests/evo runs
    python bench/evo/eval_runtime.py --fit-only bench/evo/results/runtime.json   # refit and replot

Protocol. For each n and seed, one run of fastnips.evo.run(lotz(n, h1="exp2"), SelfAdjustingMOEAD(), ...) on
the native backend until the population covers all n + 1 Pareto points (a cap of 10 n^4 evaluations is never
reached; a capped run would be reported as such). The self-adjusting MOEA/D decides every acceptance by an
order comparison, so its runs are the same under every monotone distortion (tests/evo checks this); 2^v is
the distortion of the hole table where classic weights reach only the two extremes. The exponent e of
evaluations ~ c n^e is fitted by least squares in log-log space over all runs with
fastnips.datacuration.fit_loglog (bootstrap over the seeds at each n), once over all n and once over the
larger half of the n values (the local exponent). A second table runs classic MOEA/D (N = n, T = min(20,
n + 1), Tchebycheff, external archive) for 40 n^3 evaluations on each distortion of the hole table and
reports population and archive coverage separately, next to the fixed-weight optima of the hole table.

Writes runtime.json (every run), runtime.png (log-log plot) and runtime.md (the tables) to --out.
This file is a script, not a pytest-benchmark file (bench/ collects bench_*.py only).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from fastnips.evo import MOEAD, SelfAdjustingMOEAD, fixed_weight_optima, lotz, run

DEFAULT_NS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 320)
QUICK_NS = (6, 8, 12, 16)
DISTORTIONS = (("id", "id"), ("square", "id"), ("exp2", "id"), ("exp3", "exp3"))
OUT = Path(__file__).resolve().parent / "results"


def study(ns, seeds: int, quiet: bool) -> list[dict]:
    """One self-adjusting run per (n, seed): evaluations to full coverage and seconds."""
    rows = []
    for n in ns:
        t_n = time.perf_counter()
        for s in range(seeds):
            t0 = time.perf_counter()
            res = run(lotz(n, "exp2"), SelfAdjustingMOEAD(), 10 * n**4, 1000 * n + s, backend="cpp")
            rows.append({"n": n, "seed": 1000 * n + s, "evaluations": res.evaluations,
                         "full": res.full_population >= 0, "seconds": time.perf_counter() - t0})
        if not quiet:
            ev = [r["evaluations"] for r in rows if r["n"] == n]
            print(f"n={n:4d}: median {np.median(ev):,.0f} evaluations ({time.perf_counter() - t_n:.1f} s)",
                  file=sys.stderr)
    return rows


def classic(ns, seeds: int) -> list[dict]:
    """Classic MOEA/D with an archive, 40 n^3 evaluations: coverage of the population and of the archive."""
    rows = []
    for n in ns:
        for h in DISTORTIONS:
            p = lotz(n, *h)
            pop, arch = [], []
            for s in range(seeds):
                res = run(p, MOEAD(archive=True), 40 * n**3, s, stop_on_full=False, backend="cpp")
                pop.append(res.population_coverage)
                arch.append(res.archive_coverage)
            rows.append({"n": n, "h": "/".join(h), "optima": len(fixed_weight_optima(p)),
                         "population": float(np.mean(pop)), "population_min": int(min(pop)),
                         "archive": float(np.mean(arch)), "archive_min": int(min(arch))})
    return rows


def fit(rows: list[dict], n_boot: int) -> dict:
    """Log-log fits (all n, and the larger half of the n values) with fastnips.datacuration.fit_loglog."""
    from fastnips.datacuration import fit_loglog

    x = np.array([r["n"] for r in rows], dtype=float)
    y = np.array([r["evaluations"] for r in rows], dtype=float)
    ns = np.unique(x)
    tail = x >= ns[len(ns) // 2]
    out = {}
    for name, keep in (("all", np.ones_like(x, dtype=bool)), ("tail", tail)):
        f = fit_loglog(x[keep], y[keep], n_boot=n_boot, seed=0)
        out[name] = {"exponent": f.exponent, "prefactor": f.prefactor, "ci_low": f.ci_low, "ci_high": f.ci_high,
                     "n_points": f.n_points, "n_min": int(x[keep].min()), "n_max": int(x[keep].max())}
    return out


def plot(rows: list[dict], fits: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.array([r["n"] for r in rows], dtype=float)
    y = np.array([r["evaluations"] for r in rows], dtype=float)
    ns = np.unique(x)
    med = np.array([np.median(y[x == n]) for n in ns])
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.scatter(x, y, s=8, alpha=0.35, color="tab:blue", label="one run (seed)")
    ax.plot(ns, med, "o", color="tab:blue", label="median")
    f = fits["all"]
    ax.plot(ns, f["prefactor"] * ns ** f["exponent"], "-", color="tab:red",
            label=f"fit: {f['prefactor']:.2g} n^{f['exponent']:.2f} [{f['ci_low']:.2f}, {f['ci_high']:.2f}]")
    ax.plot(ns, med[0] * (ns / ns[0]) ** 4, "--", color="gray", label="n^4 (the paper's bound), through n_min")
    ax.set(xscale="log", yscale="log", xlabel="n (string length)", ylabel="evaluations to full coverage",
           title="self-adjusting MOEA/D on LOTZ (any monotone distortion)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(res: dict) -> str:
    rows, fits = res["runs"], res["fits"]
    lines = [f"Runtime of the self-adjusting MOEA/D ({res['date']}, {res['machine']}, OMP_NUM_THREADS="
             f"{res['omp']}, shared machine; native backend; {res['seeds']} seeds per n)", "",
             "| n | runs | median evaluations | mean | min | max | mean / n^3 | mean / n^4 | seconds per run |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sorted({r["n"] for r in rows}):
        ev = np.array([r["evaluations"] for r in rows if r["n"] == n], dtype=float)
        sec = np.mean([r["seconds"] for r in rows if r["n"] == n])
        lines.append(f"| {n} | {ev.size} | {np.median(ev):,.0f} | {ev.mean():,.0f} | {ev.min():,.0f} | "
                     f"{ev.max():,.0f} | {ev.mean() / n**3:.3f} | {ev.mean() / n**4:.2e} | {sec:.3f} |")
    lines += ["", "| fit (evaluations = c n^e) | n range | runs | e | 95% bootstrap interval | c |",
              "|---|---|---:|---:|---|---:|"]
    for name, f in fits.items():
        lines.append(f"| {name} | {f['n_min']}..{f['n_max']} | {f['n_points']} | {f['exponent']:.3f} | "
                     f"[{f['ci_low']:.3f}, {f['ci_high']:.3f}] | {f['prefactor']:.3g} |")
    if res.get("classic"):
        lines += ["", "Classic MOEA/D (Tchebycheff, N = n, archive), 40 n^3 evaluations, coverage of the n + 1 "
                  "Pareto points (mean [min] over seeds):", "",
                  "| n | h1/h2 | fixed-weight optima | population | archive |", "|---:|---|---:|---:|---:|"]
        for r in res["classic"]:
            lines.append(f"| {r['n']} | {r['h']} | {r['optima']} | {r['population']:.1f} [{r['population_min']}] | "
                         f"{r['archive']:.1f} [{r['archive_min']}] |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 6..16, 3 seeds, 200 bootstrap replicates")
    ap.add_argument("--n-max", type=int, default=max(DEFAULT_NS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--fit-only", type=Path, help="refit and replot an earlier runtime.json")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.n_boot = 3, 200
    args.out.mkdir(parents=True, exist_ok=True)
    if args.fit_only:
        res = json.loads(args.fit_only.read_text())
    else:
        ns = QUICK_NS if args.quick else tuple(n for n in DEFAULT_NS if n <= args.n_max)
        t0 = time.perf_counter()
        res = {"date": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
               "omp": os.environ.get("OMP_NUM_THREADS", "unset"), "seeds": args.seeds,
               "runs": study(ns, args.seeds, args.quiet),
               "classic": classic(QUICK_NS[:2] if args.quick else (8, 16, 24, 32), args.seeds)}
        res["seconds"] = time.perf_counter() - t0
        (args.out / "runtime.json").write_text(json.dumps(res, indent=1))  # the runs, before any fit
    if not all(r["full"] for r in res["runs"]):
        raise SystemExit("a run hit its cap of 10 n^4 evaluations without full coverage")
    res["fits"] = fit(res["runs"], args.n_boot)
    (args.out / "runtime.json").write_text(json.dumps(res, indent=1))
    plot(res["runs"], res["fits"], args.out / "runtime.png")
    text = report(res)
    (args.out / "runtime.md").write_text(text)
    if not args.quiet:
        print(text)
    return text


if __name__ == "__main__":
    main()
