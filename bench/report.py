"""Turn pytest-benchmark JSON files into the markdown tables of bench/README.md.

    python bench/report.py out.json [more.json ...]

One table per benchmark group: median, IQR, and the ratio of each row's median to the fastest row run
with the same OMP_NUM_THREADS (memory-copy rows excluded). Where a row records ``traffic_bytes``,
achieved GB/s (bytes / median) is shown; where it records ``inner_median_s`` (a peer timed inside its
own process, e.g. SEMID inside R), that median is used and marked "in R". Groups named
``<name> <family> n=<N>`` also get a log-log slope table (least squares of log median on log n over
n = 100 ... 1600).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict


def rows_of(path):
    with open(path) as fh:
        data = json.load(fh)
    for b in data["benchmarks"]:
        impl = b["params"].get("impl") or b["name"]
        extra = b.get("extra_info", {})
        yield b["group"], impl, extra.get("omp_num_threads", "?"), b["stats"], extra


def median_of(stats, extra) -> float:
    return extra.get("inner_median_s", stats["median"])


def fmt(sec: float) -> str:
    if sec >= 1:
        return f"{sec:.2f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.2f} ms"
    return f"{sec * 1e6:.1f} µs"


def group_key(g: str):
    m = re.match(r"^(.*) n=(\d+)(.*)$", g)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else (g, 0, "")


def parse_args(argv=None):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python bench/report.py",
        description="Turn pytest-benchmark JSON files (pytest bench/... --benchmark-json=out.json) into the "
                    "markdown tables of bench/README.md, printed on stdout.")
    parser.add_argument("paths", nargs="+", metavar="out.json", help="pytest-benchmark JSON file(s)")
    return parser.parse_args(argv).paths


def main(paths):
    groups = defaultdict(list)
    for p in paths:
        try:
            for g, impl, threads, stats, extra in rows_of(p):
                groups[g].append((impl, threads, stats, extra))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            sys.exit(f"bench/report.py: {p} is not a readable pytest-benchmark JSON file ({what})")
    for g in sorted(groups, key=group_key):
        rows = groups[g]
        best = {}  # fastest non-memcpy median per thread count: ratios compare like with like
        for impl, threads, st, extra in rows:
            if impl != "memcpy":
                best[threads] = min(best.get(threads, float("inf")), median_of(st, extra))
        print(f"\n**{g}**\n")
        print("| impl | threads | median | IQR | vs fastest (same threads) | GB/s |")
        print("|---|---|---|---|---|---|")
        for impl, threads, st, extra in sorted(rows, key=lambda r: (r[1], median_of(r[2], r[3]))):
            med = median_of(st, extra)
            inner = "inner_median_s" in extra
            ratio = f"{med / best[threads]:.2f}x" if threads in best and impl != "memcpy" else ""
            gbs = f"{extra['traffic_bytes'] / med / 1e9:.1f}" if "traffic_bytes" in extra else ""
            iqr = "" if inner else fmt(st["iqr"])
            print(f"| {impl} | {threads} | {fmt(med)}{' (in R)' if inner else ''} | {iqr} | {ratio} | {gbs} |")
    slopes(groups)


def slopes(groups, lo: int = 100, hi: int = 1600):
    series = defaultdict(dict)
    for g, rows in groups.items():
        name, n, _ = group_key(g)
        if not n or not lo <= n <= hi:
            continue
        for impl, threads, st, extra in rows:
            series[(name, impl, threads)][n] = median_of(st, extra)
    fits = []
    for (name, impl, threads), pts in sorted(series.items()):
        if len(pts) < 3:
            continue
        xs = [math.log(n) for n in pts]
        ys = [math.log(t) for t in pts.values()]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        fits.append((name, impl, threads, min(pts), max(pts), slope))
    if fits:
        print(f"\n**log-log slopes of the median time over n = {lo} ... {hi}**\n")
        print("| family | impl | threads | n range | slope |")
        print("|---|---|---|---|---|")
        for name, impl, threads, a, b, s in fits:
            print(f"| {name} | {impl} | {threads} | {a}–{b} | {s:.2f} |")


if __name__ == "__main__":
    main(parse_args())
