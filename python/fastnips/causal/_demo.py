"""The ``fastnips demo`` rows of SEMID's identification family (registered by the lead in ``fastnips._demo``).

Row format as in :mod:`fastnips._demo_rows`: ``{"task", "backend", "measure", "result", "detail", "values"}``.
"""

from __future__ import annotations

import time

#: SEMID's README example 1 (0-based): plain HTC and plain edgewise find 1 of its 7 edges, SEMID's defaults 7.
README_1 = (5, [(0, 1), (0, 2), (1, 2), (1, 3), (1, 4), (2, 3), (3, 4)], [(0, 3), (1, 2), (1, 4)])


def demo_semid_family(seed: int) -> list[dict]:
    """Every criterion of SEMID's family on SEMID's README example 1 and on a random DAG (n = 40)."""
    from . import (
        MixedGraph,
        ancestral_identify,
        edgewise_identify,
        global_identifiable,
        htc_identify,
        trek_separation_identify,
    )
    from .generators import random_mixed_graph

    graphs = [("SEMID README example 1", MixedGraph(*README_1)),
              ("random DAG n=40, avg degree 3", random_mixed_graph(40, p_directed=3 / 78, seed=seed))]
    runs = {"HTC": lambda g: htc_identify(g), "edgewise": lambda g: edgewise_identify(g),
            "edgewise+Tian": lambda g: edgewise_identify(g, tian=True),
            "edgewiseTSID": trek_separation_identify, "ancestralID": ancestral_identify}
    rows = []
    for name, g in graphs:
        counts, ms = {}, {}
        for crit, fn in runs.items():
            t0 = time.perf_counter()
            counts[crit] = len(fn(g).identified_edges)
            ms[crit] = (time.perf_counter() - t0) * 1e3
        glob = global_identifiable(g)
        rows.append({"task": "htc", "backend": "cpp+reference", "measure": "edges identified ↑",
                     "result": f"{max(counts.values())}/{g.num_directed}",
                     "detail": f"{name}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                               + f" of {g.num_directed} edges; globally identifiable {glob}",
                     "values": {"edges": counts, "directed": g.num_directed, "global": glob, "ms": ms}})
    return rows
