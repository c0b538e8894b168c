"""Turn a pytest-benchmark JSON file into the markdown tables of bench/README.md.

    python bench/report.py out.json [more.json ...]

One table per benchmark group: median, IQR, and the ratio of each row's median to the fastest
non-memcpy row. Where a group records ``traffic_bytes``, achieved GB/s is shown too (bytes / median).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def rows_of(path):
    data = json.load(open(path))
    label = data.get("machine_info", {}).get("node", "") + " " + data.get("datetime", "")[:10]
    for b in data["benchmarks"]:
        impl = b["params"].get("impl") or b["name"]
        threads = b.get("extra_info", {}).get("omp_num_threads", "?")
        yield b["group"], impl, threads, b["stats"], b.get("extra_info", {}), label


def main(paths):
    groups = defaultdict(list)
    for p in paths:
        for g, impl, threads, stats, extra, _label in rows_of(p):
            groups[g].append((impl, threads, stats, extra))
    for g in sorted(groups):
        rows = groups[g]
        real = [r for r in rows if r[0] != "memcpy"]
        best = min(r[2]["median"] for r in real) if real else None
        print(f"\n**{g}**\n")
        print("| impl | threads | median | IQR | vs fastest | GB/s |")
        print("|---|---|---|---|---|---|")
        for impl, threads, st, extra in sorted(rows, key=lambda r: (r[1], r[2]["median"])):
            med = st["median"]
            ratio = f"{med / best:.2f}x" if best and impl != "memcpy" else ""
            gbs = f"{extra['traffic_bytes'] / med / 1e9:.1f}" if "traffic_bytes" in extra else ""
            print(f"| {impl} | {threads} | {fmt(med)} | {fmt(st['iqr'])} | {ratio} | {gbs} |")


def fmt(sec: float) -> str:
    if sec >= 1:
        return f"{sec:.2f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.2f} ms"
    return f"{sec * 1e6:.1f} µs"


if __name__ == "__main__":
    main(sys.argv[1:])
