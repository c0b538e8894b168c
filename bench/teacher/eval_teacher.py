"""Evaluation of teacher-budget allocation for agent SFT (issue 19, item 5; paper 6, "teacher").

    OMP_NUM_THREADS=1 python bench/teacher/eval_teacher.py --png bench/teacher/eval_teacher.png  # minutes
    python bench/teacher/eval_teacher.py --quick                                                # seconds (CI)

Success rate of the student against the teacher budget (calls) for the strategies of
``fastnips.rl.teacher.train_on_budget`` -- BC, construction (i) short unfiltered continuations with
k = 1, 4 and T (the horizon: to the end), (ii) full continuations filtered for success, (iii) the same only on
tasks the student fails alone, and DAgger's relabelling -- all with the same schedule (4 rounds, the first
one BC for everybody, data aggregated, student refit each round) and the same count-based student
(``TabularStudent``: greedy over counts, uniform at unseen prompts). Environments:

* ``lock``: ``CombinationLock(16, n_digits=4, n_runes=64)`` (horizon 32; a wrong turn jams, ``back`` frees);
* ``maze``: ``KeyDoorMaze(9, wall_density=0.25, slack=1.5, seed=0)`` (start rooms are the tasks);
* ``lock-noisy``: the lock with a teacher that plays a uniformly random legal action 20 % of the time (what
  filtering for success is meant to clean up).

Each (environment, strategy, budget, seed) cell trains one student and counts its solved episodes over
``--episodes`` random tasks. The table gives the mean over seeds and a 95 % t-interval; the verdict compares
(i) with k = 1 against BC and against the better of (ii), (iii) by the paired difference over seeds (same seed:
same tasks and evaluation episodes), with its 95 % t-interval. A script, not a pytest-benchmark file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np
from scipy import stats

from fastnips.rl.teacher import (
    CombinationLock,
    KeyDoorMaze,
    ScriptedTeacher,
    TabularStudent,
    success_rate,
    train_on_budget,
)

STRATEGIES = (("bc", None), ("continuation", 1), ("continuation", 4), ("continuation", "T"), ("filtered", None),
              ("failed_only", None), ("dagger", None))
BUDGETS = (16, 32, 64, 128, 256, 512)
QUICK_BUDGETS = (8, 32)
ROUNDS = 4


def label(construction, k) -> str:
    return f"(i) k={k}" if construction == "continuation" else {
        "bc": "BC", "filtered": "(ii) filtered", "failed_only": "(iii) failed-only", "dagger": "DAgger"}[construction]


def environments(quick: bool) -> dict:
    """name -> (env, teacher noise)."""
    if quick:
        return {"lock": (CombinationLock(5, n_runes=8), 0.0), "maze": (KeyDoorMaze(5, 0.25, slack=1.5), 0.0)}
    return {"lock": (CombinationLock(16, n_digits=4, n_runes=64), 0.0),
            "maze": (KeyDoorMaze(9, wall_density=0.25, slack=1.5, seed=0), 0.0),
            "lock-noisy": (CombinationLock(16, n_digits=4, n_runes=64), 0.2)}


def run(envs, budgets, seeds, episodes, log) -> dict:
    """{(env, label, budget): success rates over seeds}."""
    out = {}
    for name, (env, noise) in envs.items():
        t0 = time.perf_counter()
        for construction, k in STRATEGIES:
            kk = env.horizon if k == "T" else (k or 1)
            for budget in budgets:
                rates = []
                for seed in seeds:
                    teacher = ScriptedTeacher(noise, seed=seed)
                    st, _ = train_on_budget(env, teacher, TabularStudent(), construction, budget, k=kk,
                                            rounds=ROUNDS, seed=seed)
                    rates.append(success_rate(env, st, episodes, seed=10_000 + seed))
                out[name, label(construction, k), budget] = np.array(rates)
        log(f"{name}: {time.perf_counter() - t0:.1f} s")
    return out


def ci(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95 % t-interval over seeds (a point when there is one seed)."""
    m = float(x.mean())
    if len(x) < 2:
        return m, m, m
    h = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - h, m + h


def table(out, envs, budgets) -> str:
    head = "| env | strategy | " + " | ".join(f"B={b}" for b in budgets) + " |"
    lines = [head, "|" + "---|" * (2 + len(budgets))]
    for name in envs:
        for construction, k in STRATEGIES:
            lab = label(construction, k)
            cells = []
            for b in budgets:
                m, lo, hi = ci(out[name, lab, b])
                cells.append(f"{m:.2f} [{max(0, lo):.2f}, {min(1, hi):.2f}]")
            lines.append(f"| {name} | {lab} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _compare(out, name, a, b_labels, budgets):
    """Per budget: the paired difference a - max(b) over seeds, its CI, and a verdict word."""
    rows = []
    for b in budgets:
        other = np.max([out[name, lab, b] for lab in b_labels], axis=0)
        m, lo, hi = ci(out[name, a, b] - other)
        word = "better" if lo > 0 else "worse" if hi < 0 else "tie"
        rows.append((b, m, lo, hi, word))
    return rows


def verdict(out, envs, budgets, n_seeds) -> str:
    lines = [f"Claim (short unfiltered continuations at learner-induced states beat BC and filtered full "
             f"trajectories at equal budget), paired over {n_seeds} seeds, 95 % t-intervals:"]
    for name in envs:
        vs_bc = _compare(out, name, "(i) k=1", ["BC"], budgets)
        vs_f = _compare(out, name, "(i) k=1", ["(ii) filtered", "(iii) failed-only"], budgets)
        best_k = []
        for b in budgets:
            ks = {lab: out[name, lab, b].mean() for lab in ("(i) k=1", "(i) k=4", "(i) k=T")}
            best_k.append(max(ks, key=ks.get).split("=")[1])
        fmt = "; ".join(f"B={b}: {m:+.2f} [{lo:+.2f}, {hi:+.2f}] {w}" for b, m, lo, hi, w in vs_bc)
        fmt2 = "; ".join(f"B={b}: {m:+.2f} [{lo:+.2f}, {hi:+.2f}] {w}" for b, m, lo, hi, w in vs_f)
        lines += [f"* {name}, (i) k=1 minus BC: {fmt}.", f"* {name}, (i) k=1 minus max((ii), (iii)): {fmt2}.",
                  f"* {name}, best continuation length per budget: " + ", ".join(
                      f"B={b}: k={k}" for b, k in zip(budgets, best_k, strict=True)) + "."]
        lines.append(f"* {name}: " + _summary(vs_bc, vs_f))
    return "\n".join(lines)


def _summary(vs_bc, vs_f) -> str:
    def where(rows, word):
        return [b for b, *_, w in rows if w == word]

    bc_better, bc_worse = where(vs_bc, "better"), where(vs_bc, "worse")
    f_better, f_worse = where(vs_f, "better"), where(vs_f, "worse")
    parts = []
    if bc_better and not bc_worse:
        parts.append(f"(i) beats BC at B in {bc_better} and is never worse (the claim holds; elsewhere a tie, "
                     "both near 0 at the smallest budgets or saturated near 1 at the largest)")
    elif bc_worse:
        parts.append(f"(i) loses to BC at B in {bc_worse} (the claim fails there)")
    else:
        parts.append("no significant difference from BC at any budget")
    if f_better and not f_worse:
        parts.append(f"it beats the filtered constructions at B in {f_better}, ties elsewhere")
    elif f_worse:
        parts.append(f"the filtered constructions are better at B in {f_worse}"
                     + (f", (i) at B in {f_better}" if f_better else ""))
    else:
        parts.append("it ties the filtered constructions")
    return "; ".join(parts) + "."


def plot(out, envs, budgets, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(envs), figsize=(4.2 * len(envs), 3.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], envs, strict=True):
        for construction, k in STRATEGIES:
            lab = label(construction, k)
            m = np.array([ci(out[name, lab, b]) for b in budgets])
            ax.plot(budgets, m[:, 0], marker="o", ms=3, label=lab, ls="--" if construction == "dagger" else "-")
            ax.fill_between(budgets, np.clip(m[:, 1], 0, 1), np.clip(m[:, 2], 0, 1), alpha=0.12)
        ax.set_xscale("log", base=2)
        ax.set_title(name)
        ax.set_xlabel("teacher budget (calls)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("student success rate")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> str:
    """Run the evaluation; print and return the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--episodes", type=int, default=200, help="evaluation episodes per student")
    ap.add_argument("--quick", action="store_true", help="small environments, 2 budgets, 2 seeds (CI)")
    ap.add_argument("--png", default=None, help="write the success-vs-budget plot here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.episodes < 1:
        ap.error("--seeds and --episodes must be >= 1")
    seeds = list(range(2 if args.quick else args.seeds))
    budgets = QUICK_BUDGETS if args.quick else BUDGETS
    episodes = 50 if args.quick else args.episodes
    envs = environments(args.quick)

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    out = run(envs, budgets, seeds, episodes, log)
    cmd = "python bench/teacher/eval_teacher.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report = "\n".join([
        f"Command: `{cmd}`; {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {len(seeds)} seeds, {episodes} evaluation "
        f"episodes per student, {ROUNDS} rounds; {time.perf_counter() - t0:.0f} s",
        "", "Success rate, mean over seeds [95 % t-interval]:", "", table(out, envs, budgets), "",
        verdict(out, envs, budgets, len(seeds))])
    if args.png:
        plot(out, envs, budgets, args.png)
        report += f"\n\nPlot: {args.png}"
    print(report)
    return report


if __name__ == "__main__":
    main()
