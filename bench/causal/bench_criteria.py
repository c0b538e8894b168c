"""SEMID's identification family in fastnips (Tian edgewise, edgewiseTSID, ancestralID, globalID, and
generalGenericID over the HTC and edgewise steps as SEMID's README runs it and over the HTC and ancestral
steps) vs SEMID (R).

Graph families as in bench_htc.py (random DAGs, expected total degree 3 "sparse" or n/4 "dense";
over-parametrised "nonid"; "cyclic" digraphs), n = 25, 50, 100.  SEMID rows run where R with SEMID is
installed (see bench_htc.py and semid_driver.R; timed inside a warm R session, median of 3); SEMID's recorded
`htcID` timings (tests/causal/data/semid_timings.csv) are the yardstick where it is not.

Every fastnips row is checked against the answer of an independent run (the cpp rows against the Python
reference; the Python criteria against SEMID where it runs, else against the next-weaker criterion: an
identified edge set may only grow from HTC to edgewise to edgewiseTSID; not for ancestralID, which in
SEMID 0.4.2 identifies fewer edges than htcID on some graphs, e.g. 2 of its recorded random graphs).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fastnips.causal import (
    MixedGraph,
    ancestral_identify,
    edgewise_identify,
    global_identifiable,
    htc_identify,
    identify,
    trek_separation_identify,
)
from fastnips.causal.generators import random_mixed_graph

FAMILIES = {
    "sparse": lambda n: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), seed=n),
    "dense": lambda n: random_mixed_graph(n, p_directed=(n / 4) / (2 * (n - 1)), seed=n),
    "nonid": lambda n: random_mixed_graph(n, p_directed=0.25, p_bidirected=0.8, seed=n),
    "cyclic": lambda n: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), acyclic=False, seed=n),
}
SIZES = [25, 50, 100]
RUNS = {
    "htc-cpp": lambda g: htc_identify(g, backend="cpp"),  # the yardstick: today's HTC against SEMID's htcID
    "edgewise_tian-cpp": lambda g: edgewise_identify(g, tian=True, backend="cpp"),
    "edgewise_tian-reference": lambda g: identify(g, ["edgewise"], backend="reference"),
    "tsid-cpp": lambda g: trek_separation_identify(g, backend="cpp"),
    "tsid-reference": lambda g: trek_separation_identify(g, backend="reference"),
    "ancestral-cpp": lambda g: ancestral_identify(g, backend="cpp"),
    "ancestral-reference": lambda g: ancestral_identify(g, backend="reference"),
    "global": global_identifiable,
    "htc_edgewise-cpp": lambda g: identify(g, ["htc", "edgewise"], tian=False, backend="cpp"),
    "htc_edgewise-reference": lambda g: identify(g, ["htc", "edgewise"], tian=False, backend="reference"),
    "htc_ancestral-cpp": lambda g: identify(g, ["htc", "ancestral"], backend="cpp"),
    "htc_ancestral-reference": lambda g: identify(g, ["htc", "ancestral"], backend="reference"),
}
SEMID = {"htc-cpp": "htcID", "edgewise_tian-cpp": "edgewiseID_tian", "tsid-cpp": "edgewiseTSID",
         "ancestral-cpp": "ancestralID", "global": "globalID", "htc_edgewise-cpp": "generalGenericID_htc_edgewise",
         "htc_ancestral-cpp": "generalGenericID_htc_ancestral"}
# the trek-separation search costs O(n^4 log n) per unidentified edge: largest n per family
LIMITS = {"tsid-reference": {"nonid": 25}, "tsid-cpp": {"nonid": 25}}
# SEMID calls of minutes (one call each, in R 4.2.2 on the 2-core bench VM, 2026-12-03): not run by the bench;
# bench/README.md gives the lower bounds measured with semid_driver.R and a time limit.
SEMID_SLOW = {("edgewiseTSID", "sparse", 50): "more than 600 s", ("edgewiseTSID", "cyclic", 25): "more than 300 s",
              ("edgewiseTSID", "nonid", 25): "more than 300 s", ("ancestralID", "nonid", 100): "minutes",
              ("edgewiseID_tian", "nonid", 100): "about 55 s",
              ("generalGenericID_htc_edgewise", "nonid", 100): "more than 150 s",
              ("generalGenericID_htc_ancestral", "nonid", 100): "about 145 s"}


@functools.cache
def graph(family: str, n: int) -> MixedGraph:
    return FAMILIES[family](n)


def _check(impl: str, g: MixedGraph, r) -> None:
    if impl == "global":
        assert isinstance(r, bool)
        return
    htc = set(htc_identify(g, tian=True, method="maxflow").identified_edges)
    if not impl.startswith("ancestral"):  # SEMID's ancestralID itself finds fewer edges than htcID on some graphs
        assert htc <= set(r.identified_edges), f"{impl} lost an HTC-identified edge"
    if impl == "edgewise_tian-cpp":
        assert r.identified_edges == identify(g, ["edgewise"], backend="reference").identified_edges
    if impl == "ancestral-cpp":  # the native fixpoint against the Python reference (the oracle)
        assert r.identified_edges == ancestral_identify(g, backend="reference").identified_edges
    if impl == "tsid-cpp":  # the native trek search against the Python one, where that runs
        assert r.identified_edges == trek_separation_identify(g, backend="reference").identified_edges
    if impl in ("htc_edgewise-cpp", "htc_ancestral-cpp"):  # the native loop against the Python one
        ref = RUNS[impl.replace("-cpp", "-reference")](g)
        assert r.identified_edges == ref.identified_edges
        assert r.rounds == ref.rounds
    if impl.startswith("tsid"):
        assert set(identify(g, ["htc", "edgewise"], subset_size_control=3).identified_edges) <= \
            set(r.identified_edges)


@pytest.mark.parametrize("impl", [*RUNS, *(f"semid-{v}" for v in SEMID.values())])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_criteria(machine_facts, semid_peer, request, family, n, impl):
    benchmark = machine_facts
    benchmark.group = f"criteria {family} n={n}"
    g = graph(family, n)
    benchmark.extra_info.update(n=n, family=family, directed=g.num_directed, bidirected=g.num_bidirected)
    key = impl.removeprefix("semid-")
    ours = next((k for k, v in SEMID.items() if v == key), impl)
    limit = LIMITS.get(ours, {}).get(family)
    if limit is not None and n > limit:
        pytest.skip(f"{ours} on {family} stops at n={limit}")
    if impl.startswith("semid-"):
        peer = semid_peer
        smoke = request.config.getoption("benchmark_disable")
        why = peer.semid_skip(key, (family, n), smoke, SEMID_SLOW.get((key, family, n)))
        if why:
            pytest.skip(why)
        try:
            rec = benchmark.pedantic(peer.run_semid, args=(key, g, 1 if smoke else 3), rounds=1, iterations=1)
        except peer.SemidError as e:  # SEMID 0.4.2's ancestralID stops on some graphs (a source set outside G)
            pytest.skip(f"SEMID {key} stops with an error on {family} n={n}: {e}")
        benchmark.extra_info["inner_median_s"] = float(np.median(rec["seconds"]))
        r = RUNS[ours](g)
        got = (list(range(g.n)) if r else []) if ours == "global" else r.identified_nodes
        if ours == "edgewise_tian-cpp":  # SEMID's edgewiseID default searches subsets of size <= 3 only
            got = identify(g, ["edgewise"], subset_size_control=3).identified_nodes
        assert sorted(rec["identified_nodes"]) == got, f"SEMID {key} disagrees on {family} n={n}"
        return
    r = benchmark(RUNS[impl], g)
    _check(impl, g, r)
