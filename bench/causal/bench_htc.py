"""HTC identification: fastnips (randomized rank test, exact incremental max-flow; C++) vs the Python
reference vs SEMID (R), on graph families from easy to worst case, n = 25 ... 1600.

SEMID rows run only where R with SEMID is installed (``Rscript`` on PATH and SEMID loadable; see
bench/README.md) and up to a size where one call stays under about a minute. SEMID is timed *inside* a
warm R session by bench/causal/semid_driver.R (median of 3 calls after a warm-up, graph construction
excluded); pytest-benchmark's own time for those rows includes R's start-up and is not the number to
compare: bench/report.py shows the in-R median for them (marked "in R").

Every row's identified nodes are checked against fastnips' exact max-flow method on every run.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from fastnips.causal import MixedGraph, htc_identify, htc_identify_many
from fastnips.causal.generators import instrument_chain, random_mixed_graph

FAMILIES = {
    # sparse: random DAG, expected total degree 3 (the "O(n^3)" regime)
    "sparse": lambda n: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), seed=n),
    # dense: random DAG, expected total degree n/4 (the "O(n^4)" regime)
    "dense": lambda n: random_mixed_graph(n, p_directed=(n / 4) / (2 * (n - 1)), seed=n),
    # chain: n - 1 fixpoint rounds, labels reversed (one node per Gauss-Seidel pass), dense bidirected part
    "chain": instrument_chain,
    # nonid: over-parametrised (p_D + p_B > 1), never identifiable: every pass is a sweep of failing tests
    "nonid": lambda n: random_mixed_graph(n, p_directed=0.25, p_bidirected=0.8, seed=n),
    # cyclic: random digraph with cycles and 2-cycles, expected total degree 3
    "cyclic": lambda n: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), acyclic=False, seed=n),
}
SIZES = [25, 50, 100, 200, 400, 800, 1600]
IMPLS = ["fastnips-randomized", "fastnips-maxflow", "reference-maxflow", "semid-htcID", "semid-graphID.htcID"]

# Largest n per (impl, family) run in a timed session; beyond it a single call takes minutes.
LIMITS = {
    "reference-maxflow": {"sparse": 800, "cyclic": 800, "dense": 200, "chain": 200, "nonid": 100},
    "semid-htcID": {"sparse": 400, "cyclic": 400, "dense": 200, "chain": 100, "nonid": 100},
    "semid-graphID.htcID": {"sparse": 200, "cyclic": 200, "dense": 200, "chain": 100, "nonid": 100},
}
SMOKE_LIMIT = 50  # with --benchmark-disable (CI smoke run), the slow peers only run up to this n
# ... and SEMID (seconds of R start-up per row) on one graph: the driver and the answer check still run; SEMID's
# answers on many graphs are the test suite's (tests/causal/test_criteria.py::test_live_semid_on_random_graphs)
SEMID_SMOKE_GRAPH = ("sparse", 25)

DRIVER = Path(__file__).with_name("semid_driver.R")


@functools.cache
def graph(family: str, n: int) -> MixedGraph:
    return FAMILIES[family](n)


@functools.cache
def exact_nodes(family: str, n: int) -> list[int]:
    return htc_identify(graph(family, n), method="maxflow", backend="cpp").identified_nodes


@functools.cache
def semid_available() -> str:
    """'' when SEMID can run, else the reason (probed once per session)."""
    if shutil.which("Rscript") is None:
        return "Rscript not found (install R and SEMID from CRAN to compare)"
    lib = os.environ.get("FASTNIPS_SEMID_LIB", "/opt/R-semid")
    probe = subprocess.run(["Rscript", "-e", f".libPaths(c('{lib}', .libPaths())); library(SEMID); library(jsonlite)"],
                           capture_output=True, text=True)
    return "" if probe.returncode == 0 else "R package SEMID (or jsonlite) not installed"


def semid_skip(key: str, graph: tuple[str, int], smoke: bool, slow: str | None,
               smoke_graph: tuple[str, int] = SEMID_SMOKE_GRAPH) -> str:
    """Why the SEMID row ``key`` on ``graph`` = (family, n) does not run ("" when it does): SEMID missing, a call
    of minutes (``slow``: the recorded duration), or a smoke run off its one SEMID graph."""
    why = semid_available()
    if why or not (slow or (smoke and graph != smoke_graph)):
        return why
    return f"SEMID {key} on {graph[0]} n={graph[1]}: " + (f"{slow} per call" if slow else "not in the smoke run")


class SemidError(RuntimeError):
    """SEMID itself stopped with an error (its message is the exception's)."""


def run_semid(function: str, g: MixedGraph, repeats: int, warmup: bool = True,
              latent_children: list[list[int]] | None = None) -> dict:
    """``function`` of semid_driver.R on ``g`` (with latent factors for lfhtcID): ``repeats`` timed calls inside
    one R session (after an untimed warm-up unless ``warmup=False``); raises SemidError with R's message when
    SEMID stops with an error."""
    spec = {"id": "g", "n": g.n, "directed": [list(e) for e in g.directed],
            "bidirected": [list(e) for e in g.bidirected]}
    if latent_children is not None:
        spec.update(latent=len(latent_children),
                    latent_edges=[[h, v] for h, cs in enumerate(latent_children) for v in cs])
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp, "in.json"), Path(tmp, "out.json")
        inp.write_text(json.dumps({"functions": [function], "repeats": repeats, "warmup": warmup,
                                   "graphs": [spec]}))
        r = subprocess.run(["Rscript", str(DRIVER), str(inp), str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SemidError(r.stderr.strip().splitlines()[0] if r.stderr.strip() else f"Rscript exit {r.returncode}")
        (rec,) = json.loads(out.read_text())
    return rec


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_htc(machine_facts, request, family, n, impl):
    benchmark = machine_facts
    benchmark.group = f"htc {family} n={n}"
    smoke = request.config.getoption("benchmark_disable")
    limit = LIMITS.get(impl, {}).get(family)
    if limit is not None and (n > limit or (smoke and n > SMOKE_LIMIT)):
        pytest.skip(f"{impl} on {family} stops at n={SMOKE_LIMIT if smoke else limit} (minutes per call beyond)")
    g = graph(family, n)
    benchmark.extra_info.update(n=n, family=family, directed=g.num_directed, bidirected=g.num_bidirected)
    if impl.startswith("semid-"):
        function = impl.removeprefix("semid-")
        why = semid_skip(function, (family, n), smoke, None)
        if why:
            pytest.skip(why)
        rec = benchmark.pedantic(run_semid, args=(function, g, 1 if smoke else 3), rounds=1, iterations=1)
        benchmark.extra_info["inner_median_s"] = float(np.median(rec["seconds"]))
        nodes = sorted(rec["identified_nodes"])
    else:
        backend = "reference" if impl.startswith("reference") else "cpp"
        method = impl.split("-")[1]
        r = benchmark(htc_identify, g, method=method, backend=backend, seed=0)
        benchmark.extra_info.update(rounds=r.rounds, tests=r.tests)
        nodes = r.identified_nodes
    assert nodes == exact_nodes(family, n), f"{impl} disagrees with the exact max-flow HTC on {family} n={n}"


MANY = 10_000


@functools.lru_cache(maxsize=1)
def many_graphs() -> list[MixedGraph]:
    return [random_mixed_graph(10, p_directed=0.2, p_bidirected=0.2, seed=s) for s in range(MANY)]


@pytest.mark.parametrize("impl", ["htc_identify_many", "python-loop"])
def test_htc_many(machine_facts, impl):
    """The methods researcher's workload: 10^4 small graphs (n = 10), batch entry point vs a loop."""
    benchmark = machine_facts
    benchmark.group = f"htc_identify_many {MANY} graphs n=10"
    gs = many_graphs()
    if impl == "htc_identify_many":
        rs = benchmark(htc_identify_many, gs, backend="cpp")
    else:
        rs = benchmark(lambda: [htc_identify(g, backend="cpp") for g in gs])
    expected = [r.identified_nodes for r in htc_identify_many(gs, method="maxflow", backend="cpp")]
    assert [r.identified_nodes for r in rs] == expected
