"""The native ancestral fixpoint, Tian edgewise and trek-separation search (backend="cpp") against the Python
reference (the oracle): equal answers on SEMID's recorded graphs and on random graphs of every bench family,
the per-edge trek search equal edge by edge, bad input refused, and a long native search stopped by Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from fastnips import _backend
from fastnips.causal import MixedGraph, ancestral_identify, edgewise_identify, identify, trek_separation_identify
from fastnips.causal._edgewise_tian import _edgewise_tian
from fastnips.causal._ref_ancestral import ancestral_step
from fastnips.causal._ref_generic import _Ctx, generic_identify, htc_step
from fastnips.causal._ref_mixed_graph import _G, _descendants, _strong_components
from fastnips.causal._ref_trek import _edge_identified
from fastnips.causal.criteria import _NativeSteps
from fastnips.causal.generators import random_mixed_graph

from ..helpers import backend_fixture
from ._builders import DATA

backend = backend_fixture("reference", "cpp")
WHY = _backend.why_unavailable("cpp")
needs_cpp = pytest.mark.skipif(bool(WHY), reason=f"backend 'cpp' not available: {WHY}")

with open(DATA / "semid_criteria_public.jsonl") as _fh:
    CRITERIA = [json.loads(line) for line in _fh if line.strip()]

FAMILIES = {  # bench/causal/bench_criteria.py's families
    "sparse": lambda n, s: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), seed=s),
    "dense": lambda n, s: random_mixed_graph(n, p_directed=(n / 4) / (2 * (n - 1)), seed=s),
    "nonid": lambda n, s: random_mixed_graph(n, p_directed=0.25, p_bidirected=0.8, seed=s),
    "cyclic": lambda n, s: random_mixed_graph(n, p_directed=3 / (2 * (n - 1)), acyclic=False, seed=s),
}


def _graph(c) -> MixedGraph:
    return MixedGraph(c["n"], c["directed"], c["bidirected"])


def _same(a, b) -> None:
    assert a.identified_edges == b.identified_edges
    assert a.node_solved.tolist() == b.node_solved.tolist()
    assert a.rounds == b.rounds


@pytest.mark.parametrize("tian", [True, False])
def test_ancestral_every_backend_matches_semid(backend, tian):
    bad, checked = [], 0
    for c in CRITERIA:
        if c["ancestralID"] is None:  # SEMID stopped with an error on this graph
            continue
        g = _graph(c)
        r = ancestral_identify(g, tian=tian, backend=backend)
        assert r.backend == backend
        if tian:
            checked += 1
            if r.identified_edges != sorted(tuple(e) for e in c["ancestralID"]["identified_edges"]):
                bad.append(c["id"])
    assert not bad, bad
    assert checked >= 160 or not tian


@needs_cpp
@pytest.mark.parametrize("family", list(FAMILIES))
def test_ancestral_native_equals_reference_on_random_graphs(family):
    found = 0
    for n in (10, 15, 20, 25):
        for seed in range(3):
            g = FAMILIES[family](n, 100 * n + seed)
            for tian in (True, False):
                ref = ancestral_identify(g, tian=tian, backend="reference")
                _same(ancestral_identify(g, tian=tian, backend="cpp"), ref)
                found += len(ref.identified_edges)
    assert found > 0 or family == "nonid"


def _same_tian_edgewise(g, seed=0):
    """The native Tian edgewise (one call) equals the reference (the Python decomposition over the Python
    edgewise): the same edges, the same steps in the same order (original ids); and against the Python
    decomposition over the native plain edgewise also the same counters (``tests`` is implementation-defined
    across backends)."""
    ref = edgewise_identify(g, tian=True, backend="reference", seed=seed)
    got = edgewise_identify(g, tian=True, backend="cpp", seed=seed)
    assert got.edge_solved.tolist() == ref.edge_solved.tolist()
    assert got.node_solved.tolist() == ref.node_solved.tolist()
    assert got.steps == ref.steps
    assert got.rounds == ref.rounds
    mixed = _edgewise_tian(g, _backend.native(), backend="cpp", seed=seed, prime=got.prime)
    assert got.steps == mixed.steps
    assert (got.rounds, got.tests) == (mixed.rounds, mixed.tests)
    return len(ref.identified_edges)


@needs_cpp
def test_tian_edgewise_native_equals_reference_on_semid_graphs():
    found = sum(_same_tian_edgewise(MixedGraph(c["n"], c["directed"], c["bidirected"])) for c in CRITERIA)
    assert found > 100


@needs_cpp
@pytest.mark.parametrize("family", list(FAMILIES))
def test_tian_edgewise_native_equals_reference_on_random_graphs(family):
    """Every bench family, cyclic ones included (strongly connected components merge c-components and fix the
    topological order the component graphs are labelled by), and two seeds of the random parameters."""
    found = 0
    for n in (8, 15, 30, 45):
        for seed in range(3):
            g = FAMILIES[family](n, 1000 * n + seed)
            found += _same_tian_edgewise(g, seed=seed)
    assert found > 0


@needs_cpp
def test_trek_separation_native_equals_reference_on_semid_graphs():
    identified = 0
    for c in CRITERIA:
        g = _graph(c)
        for tian in (True, False):
            ref = trek_separation_identify(g, tian=tian, backend="reference")
            _same(trek_separation_identify(g, tian=tian, backend="cpp"), ref)
            identified += len(ref.identified_edges)
        if c["edgewiseTSID"] is not None:
            got = trek_separation_identify(g, backend="cpp").identified_edges
            assert got == sorted(tuple(e) for e in c["edgewiseTSID"]["identified_edges"]), c["id"]
    assert identified > 100


def _edge_queries(g: MixedGraph, rng: np.random.Generator):
    """Every edge j -> i with i on no directed cycle, with a random subset of i's other parents solved."""
    G = _G(g.n, *g.to_arrays())
    scc = _strong_components(G)
    sizes = np.bincount(np.asarray(scc, dtype=np.int64), minlength=g.n)
    for i in range(g.n):
        if sizes[scc[i]] != 1:
            continue
        nondesc = [v for v in range(g.n) if v not in _descendants({i}, G.ch)]
        for j in G.pa[i]:
            solved = [p for p in G.pa[i] if p != j and rng.random() < 0.5]
            yield G, i, j, nondesc, solved


@needs_cpp
@pytest.mark.parametrize("family", list(FAMILIES))
def test_trek_edge_search_native_equals_reference_edge_by_edge(family):
    """The per-edge search on its own, with random solved parents: positives and negatives both occur."""
    rng = np.random.default_rng(7)
    answers = []
    for n in (8, 11, 14):
        for seed in range(2):
            g = FAMILIES[family](n, 10 * n + seed)
            ref_ctx, nat_ctx = None, None
            for G, i, j, nondesc, solved in _edge_queries(g, rng):
                if ref_ctx is None or ref_ctx.g is not G:
                    ref_ctx = _Ctx(G, seed, 0, 3, 3)
                    nat_ctx = _Ctx(G, seed, 0, 3, 3, native=_NativeSteps())
                want = _edge_identified(ref_ctx, i, j, nondesc, solved)
                assert _edge_identified(nat_ctx, i, j, nondesc, solved) == want, (family, n, seed, i, j)
                answers.append(want)
    assert answers
    assert family == "nonid" or any(answers)


@needs_cpp
@pytest.mark.parametrize("step", [htc_step, ancestral_step], ids=["htc", "ancestral"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_node_sweep_native_equals_reference(family, step):
    """One Gauss-Seidel "htc" / "ancestral" sweep from random partial states: the same nodes solved, in the same
    order."""
    rng = np.random.default_rng(11)
    solved_any = 0
    for n in (10, 20, 30):
        g = FAMILIES[family](n, 7 * n)
        G = _G(g.n, *g.to_arrays())
        for _ in range(4):
            unsolved = [set() if not G.pa[v] or rng.random() < 0.3 else set(G.pa[v]) for v in range(g.n)]
            ref = step(_Ctx(G, 0, 0, 3, 3), [set(u) for u in unsolved])
            nat = step(_Ctx(G, 0, 0, 3, 3, native=_NativeSteps()), [set(u) for u in unsolved])
            assert nat == ref
            solved_any += len(ref)
    assert solved_any > 0 or family == "nonid"


@needs_cpp
@pytest.mark.parametrize("tian", [True, False])
def test_htc_sweeps_native_equals_reference_loop(tian):
    """The loop's "htc" phase in one native call (htc_sweeps): the answers and rounds of the reference loop with
    steps=["htc"]; where it solves every node, identify's shortcut gives the reference edgewiseTSID's answer."""
    C = _backend.native()
    full = partial = 0
    for family, make in FAMILIES.items():
        for n in (8, 16, 30):
            for seed in range(4):
                g = make(n, 100 * n + seed)
                d, b = g.to_arrays()
                ref = generic_identify(g.n, d, b, ["htc"], tian)
                nat = C.htc_sweeps(g.n, d, b, tian=tian)
                assert nat["node_solved"].tolist() == ref["node_solved"].tolist(), (family, n, seed)
                assert nat["edge_solved"].tolist() == ref["edge_solved"].tolist(), (family, n, seed)
                assert nat["rounds"] == ref["rounds"], (family, n, seed)
                if nat["node_solved"].all():
                    full += 1
                    _same(trek_separation_identify(g, tian=tian, backend="cpp"),
                          trek_separation_identify(g, tian=tian, backend="reference"))
                else:
                    partial += 1
    assert full >= 10, (full, partial)
    assert partial >= 10, (full, partial)


@needs_cpp
@pytest.mark.parametrize("family", ["sparse", "dense", "cyclic"])
def test_trek_separation_native_equals_reference_on_random_graphs(family):
    for n in (10, 18, 25):
        g = FAMILIES[family](n, n)
        for ssc in (3, None):
            ref = trek_separation_identify(g, subset_size_control=ssc, backend="reference")
            _same(trek_separation_identify(g, subset_size_control=ssc, backend="cpp"), ref)


@needs_cpp
def test_trek_separation_native_equals_reference_on_nonid_graphs():
    for n in (10, 13):
        g = FAMILIES["nonid"](n, n)
        ref = identify(g, ["htc", "edgewise", "trek_separation"], max_subset_size=2, backend="reference")
        _same(identify(g, ["htc", "edgewise", "trek_separation"], max_subset_size=2, backend="cpp"), ref)
        _same(trek_separation_identify(g, backend="cpp"), trek_separation_identify(g, backend="reference"))


@needs_cpp
@pytest.mark.slow
def test_trek_separation_native_equals_reference_nonid_25():
    g = FAMILIES["nonid"](25, 25)
    _same(trek_separation_identify(g, backend="cpp"), trek_separation_identify(g, backend="reference"))


LOOP_STEPS = [["htc", "edgewise"], ["edgewise", "htc"], ["edgewise"], ["htc"], ["ancestral"], ["htc", "ancestral"],
              ["ancestral", "htc"], ["htc", "edgewise", "ancestral"], ["edgewise", "ancestral", "htc"]]


@needs_cpp
@pytest.mark.parametrize("steps", LOOP_STEPS, ids="+".join)
def test_native_loop_equals_reference(steps):
    """identify over "htc", "edgewise" (exhaustive) and "ancestral" steps as one native call: the reference
    loop's edges and rounds, plain and per Tian component, on every bench family; some graphs end partly
    solved."""
    partial = 0
    for make in FAMILIES.values():
        for n in (6, 12, 24):
            for seed in range(3):
                g = make(n, 10 * n + seed)
                for tian in (True, False):
                    ref = identify(g, steps, tian=tian, backend="reference")
                    _same(identify(g, steps, tian=tian, backend="cpp"), ref)
                    partial += bool(ref.identified_edges) and not ref.identifiable
    assert partial >= 5, partial


@needs_cpp
@pytest.mark.parametrize(("steps", "ssc"), [(["htc", "edgewise", "ancestral"], 2),
                                            (["ancestral", "trek_separation"], 3),
                                            (["edgewise", "ancestral", "trek_separation"], 1)])
def test_python_loop_with_native_sweeps_equals_reference(steps, ssc):
    """Lists the native loop does not run whole (SEMID's restricted edgewise search, trek separation): the
    Python loop with the native "htc" / "ancestral" sweeps and trek search gives the reference's answers."""
    partial = 0
    for family in ("dense", "nonid", "cyclic"):
        for n in (8, 14):
            g = FAMILIES[family](n, 3 * n)
            for tian in (True, False):
                ref = identify(g, steps, tian=tian, subset_size_control=ssc, max_subset_size=2, backend="reference")
                nat = identify(g, steps, tian=tian, subset_size_control=ssc, max_subset_size=2, backend="cpp")
                _same(nat, ref)
                partial += bool(ref.identified_edges) and not ref.identifiable
    assert partial >= 2, partial


@needs_cpp
def test_node_sweeps_solve_a_parentless_node_given_as_unsolved():
    """The empty half-trek system: both native sweeps solve a parentless node at once (the loops always pass
    such nodes as solved; a caller of the binding may not)."""
    C = _backend.native()
    d, b = np.array([[0, 1]], dtype=np.int32), np.zeros((0, 2), dtype=np.int32)
    for sweep in (C.htc_sweep, C.ancestral_sweep):
        assert sweep(2, d, b, np.zeros(2, dtype=np.uint8)).tolist() == [0, 1]
        assert sweep(1, b, b, np.zeros(1, dtype=np.uint8)).tolist() == [0]
        assert sweep(2, d, b, np.ones(2, dtype=np.uint8)).tolist() == []


@needs_cpp
def test_cpp_refuses_step_lists_it_does_not_run():
    g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    with pytest.raises(ValueError, match="max_subset_size <= 3"):
        identify(g, ["trek_separation"], max_subset_size=4, backend="cpp")
    assert identify(g, ["trek_separation"], max_subset_size=4).backend == "reference"  # auto falls back
    assert identify(g, ["htc", "ancestral"]).backend == "cpp"
    assert identify(g, ["ancestral", "trek_separation"]).backend == "cpp"  # native sweeps and trek search
    assert identify(g, ["ancestral"]).backend == "cpp"
    assert identify(g, ["htc", "edgewise"]).backend == "cpp"
    assert identify(g, ["htc", "edgewise"], subset_size_control=2).backend == "cpp"  # native htc sweeps
    with pytest.raises(ValueError, match="restricted search is Python"):  # nothing native would run
        identify(g, ["edgewise"], subset_size_control=2, backend="cpp")
    assert identify(g, ["edgewise"], subset_size_control=2).backend == "reference"
    C = _backend.native()
    for steps, match in [(["trek_separation"], "steps must be 'htc', 'edgewise' or 'ancestral'"),
                         ([], "steps must not be empty")]:
        with pytest.raises(ValueError, match=match):
            C.generic_identify(3, [(0, 1)], np.zeros((0, 2), dtype=np.int32), steps)
    with pytest.raises(ValueError, match="prime"):
        C.generic_identify(3, [(0, 1)], np.zeros((0, 2), dtype=np.int32), ["htc"], prime=4)
    with pytest.raises(ValueError, match="duplicate"):
        C.generic_identify(3, [(0, 1), (0, 1)], np.zeros((0, 2), dtype=np.int32), ["htc"], tian=False)


@needs_cpp
def test_native_bindings_refuse_bad_input():
    C = _backend.native()
    d = np.array([[0, 1], [1, 2]], dtype=np.int32)
    b = np.zeros((0, 2), dtype=np.int32)
    for tian in (False, True):
        with pytest.raises(ValueError, match="loop"):
            C.generic_identify(3, np.array([[1, 1]]), b, ["ancestral"], tian=tian)
        with pytest.raises(ValueError, match="directed"):
            C.generic_identify(3, np.array([[0, 5]]), b, ["ancestral"], tian=tian)
        with pytest.raises(ValueError, match=r"shape \(k, 2\)"):
            C.generic_identify(3, np.zeros((2, 3), dtype=np.int32), b, ["ancestral"], tian=tian)
        with pytest.raises(ValueError, match="solved must have shape"):
            C.ancestral_sweep(3, d, b, np.zeros(2, dtype=np.uint8))
        with pytest.raises(ValueError, match="duplicate"):
            C.ancestral_sweep(3, np.array([[0, 1], [0, 1]]), b, np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError, match="loop"):
        C.edgewise_identify(3, np.array([[2, 2]]), b, tian=True)
    with pytest.raises(ValueError, match="duplicate"):
        C.edgewise_identify(3, d, np.array([[0, 1], [1, 0]]), tian=True)
    with pytest.raises(ValueError, match="prime"):
        C.edgewise_identify(3, d, b, 0, 4, tian=True)
    with pytest.raises(ValueError, match=r"solved must have shape \(n,\)"):
        C.htc_sweep(3, d, b, np.zeros(2, dtype=np.uint8))
    with pytest.raises(ValueError, match="duplicate"):
        C.htc_sweep(3, np.array([[0, 1], [0, 1]]), b, np.zeros(3, dtype=np.uint8))
    with pytest.raises(TypeError, match="solved must hold integers"):  # not cast to a mask
        C.htc_sweep(3, d, b, np.zeros(3, dtype=complex))
    with pytest.raises(ValueError, match="duplicate bidirected"):
        C.htc_sweeps(3, d, np.array([[0, 2], [2, 0]]), tian=True)
    with pytest.raises(ValueError, match="out of range"):
        C.htc_sweeps(3, np.array([[0, 3]]), b)
    sig, a = np.eye(3, dtype=np.int64), np.ones(3, dtype=np.int64)
    good = dict(n=3, directed=d, bidirected=b, i=2, j=1, sigma=sig, a=a, b=a, pool=[0], removed=[1], max_k=2)
    assert isinstance(C.trek_edge_identified(**good), bool)
    for key, value, match in [("sigma", np.eye(2, dtype=np.int64), r"sigma must have shape \(n, n\)"),
                              ("sigma", -np.eye(3, dtype=np.int64), "residues"),
                              ("a", np.full(3, 2**31 - 1), "residues"), ("b", np.ones(4), r"b must have shape"),
                              ("pool", [3], "pool holds a node id"), ("removed", [-1], "removed"),
                              ("max_k", 4, "max_k"), ("i", 3, "i and j")]:
        with pytest.raises(ValueError, match=match):
            C.trek_edge_identified(**{**good, key: value})


SCRIPT = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
from fastnips import _backend
C = _backend.native()
n = 220  # random residues: no group repeats, so the k = 3 search runs through C(219, 2) x C(220, 2) pairs
rng = np.random.default_rng(0)
sig = rng.integers(1, 2**31 - 1, size=(n, n))
col = rng.integers(1, 2**31 - 1, size=n)
d = np.array([[0, n - 1]], dtype=np.int32)
b = np.zeros((0, 2), dtype=np.int32)
print("start", flush=True)
t0 = time.monotonic()
try:
    C.trek_edge_identified(n, d, b, n - 1, 0, sig, col, col, np.arange(1, n - 1), [0], 3)
    print("finished", time.monotonic() - t0, flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
assert C.trek_edge_identified(3, [(0, 1), (1, 2)], b, 2, 1, np.eye(3, dtype=np.int64), np.ones(3, np.int64),
                              np.ones(3, np.int64), [0], [1], 2) in (True, False)
print("ok", flush=True)
"""


@needs_cpp
def test_trek_search_stops_on_ctrl_c():
    with subprocess.Popen([sys.executable, "-c", textwrap.dedent(SCRIPT)], stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}) as proc:
        try:
            assert proc.stdout.readline().strip() == "start"
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            line = proc.stdout.readline().strip()
            assert line == "interrupted", line  # without the polls it runs through ~5.7e8 2x2 solves
            assert time.monotonic() - sent < 5.0
            assert proc.stdout.readline().strip() == "ok"
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
