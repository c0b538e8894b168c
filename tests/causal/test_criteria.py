"""SEMID's identification family: Tian edgewise, trek separation, ancestral, global, identify(), plot.

Expected answers are SEMID 0.4.2's own, recorded in tests/causal/data/semid_criteria_public.jsonl (see
data/README.md); a live comparison runs where R and SEMID are installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest

from fastnips import _backend
from fastnips.causal import (
    MixedGraph,
    ancestral_identify,
    edgewise_identify,
    global_identifiable,
    htc_identify,
    identify,
    plot,
    reference,
    trek_separation_identify,
)
from fastnips.causal._ref_generic import _fixpoint
from fastnips.causal._ref_trek import trek_system_size

from ._builders import DATA, SEMID_LIB, random_mixed_graph, semid_installed

with open(DATA / "semid_criteria_public.jsonl") as _fh:
    CRITERIA = [json.loads(line) for line in _fh if line.strip()]

RUNS = {  # SEMID's function -> ours, on a backend
    "htcID_plain": lambda g, b: identify(g, ["htc"], tian=False, backend=b),
    "htcID_tian": lambda g, b: identify(g, ["htc"], backend=b),
    "edgewiseID_plain": lambda g, b: identify(g, ["edgewise"], tian=False, backend=b),
    "edgewiseID_tian": lambda g, b: identify(g, ["edgewise"], backend=b),
    "edgewiseTSID": lambda g, b: trek_separation_identify(g, backend=b),
    "ancestralID": lambda g, b: ancestral_identify(g, backend=b),
}
README_1 = MixedGraph.from_adjacency(
    [[0, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0] * 5],
    [[0, 0, 0, 1, 0], [0, 0, 1, 0, 1], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 0, 0]])


def _graph(c):
    return MixedGraph(c["n"], c["directed"], c["bidirected"])


def _edges(lst):
    return sorted(tuple(e) for e in lst)


def _mismatches(key, fn):
    bad, checked = [], 0
    for c in CRITERIA:
        if c[key] is None:  # SEMID stopped with an error on this graph
            continue
        checked += 1
        r = fn(_graph(c))
        if r.identified_edges != _edges(c[key]["identified_edges"]) or r.identifiable != c[key]["identifiable"]:
            bad.append(c["id"])
    return bad, checked


@pytest.mark.parametrize("key", sorted(RUNS))
def test_identify_matches_semid(key, htc_backend):
    bad, checked = _mismatches(key, lambda g: RUNS[key](g, htc_backend))
    assert checked >= 164
    assert not bad, bad


def test_edgewise_tian_matches_semid_on_every_backend(htc_backend):
    bad, _ = _mismatches("edgewiseID_tian", lambda g: edgewise_identify(g, tian=True, backend=htc_backend))
    assert not bad, bad
    bad, _ = _mismatches("edgewiseID_plain", lambda g: edgewise_identify(g, backend=htc_backend))
    assert not bad, bad


def test_readme_example_1(htc_backend):
    """SEMID's README example 1: plain edgewise finds 1 edge (0 -> 1); SEMID's default edgewiseID (Tian)
    and edgewiseTSID (even without Tian) find all 7 (the README's printed output)."""
    assert edgewise_identify(README_1, backend=htc_backend).identified_edges == [(0, 1)]
    assert edgewise_identify(README_1, tian=True, backend=htc_backend).identifiable
    assert trek_separation_identify(README_1, tian=False).identified_edges == sorted(README_1.directed)
    assert htc_identify(README_1, backend=htc_backend).identified_edges == [(0, 1)]


def test_global_matches_semid(htc_backend):
    bad = [c["id"] for c in CRITERIA if global_identifiable(_graph(c), backend=htc_backend) != c["globalID"]]
    assert not bad, bad
    assert sum(c["globalID"] for c in CRITERIA) > 10


def test_global_native_equals_reference_on_random_graphs():
    """The native recursion against the Python one on 1,500 random graphs (acyclic and cyclic, 1-30 nodes)."""
    if _backend.why_unavailable("cpp"):
        pytest.skip(f"backend 'cpp' not available: {_backend.why_unavailable('cpp')}")
    rng = np.random.default_rng(21)
    answers = []
    for k in range(1500):
        n = int(rng.integers(1, 31))
        g = random_mixed_graph(rng, n, float(rng.uniform(0, 0.4)), float(rng.uniform(0, 0.6)), acyclic=k % 4 != 0)
        answers.append(global_identifiable(g, backend="reference"))
        assert global_identifiable(g, backend="cpp") == answers[-1], (k, g.directed, g.bidirected)
    assert 200 < sum(answers) < 1300


def test_global_native_large_graph_path():
    """Graphs of more than 1,024 nodes take the native adjacency-list path (smaller ones the bitset path): the
    same answers on random graphs padded with isolated nodes (which change no component), and the same
    refusals."""
    if _backend.why_unavailable("cpp"):
        pytest.skip(f"backend 'cpp' not available: {_backend.why_unavailable('cpp')}")
    rng = np.random.default_rng(22)
    answers = []
    for k in range(120):
        g = random_mixed_graph(rng, int(rng.integers(2, 25)), float(rng.uniform(0, 0.4)),
                               float(rng.uniform(0, 0.6)), acyclic=k % 4 != 0)
        big = MixedGraph(1100, g.directed, g.bidirected)
        answers.append(global_identifiable(g, backend="reference"))
        assert global_identifiable(big, backend="cpp") == answers[-1] == global_identifiable(g, backend="cpp")
    assert 10 < sum(answers) < 110
    C = _backend.native()
    for n in (5, 1100):  # both paths, the same messages
        with pytest.raises(ValueError, match="duplicate bidirected edge"):
            C.global_identifiable(n, np.array([[0, 1]]), np.array([[1, 2], [2, 1]]))
        with pytest.raises(ValueError, match="directed edge 1 has a node id out of range"):
            C.global_identifiable(n, np.array([[0, 1], [0, n]]), np.zeros((0, 2), dtype=np.int32))
        with pytest.raises(ValueError, match="duplicate directed edge"):
            C.global_identifiable(n, np.array([[0, 1], [0, 1]]), np.zeros((0, 2), dtype=np.int32))
        with pytest.raises(ValueError, match="bidirected self loop at node 3"):
            C.global_identifiable(n, np.array([[0, 1]]), np.array([[3, 3]]))


def test_trek_separation_contributes_where_semid_says():
    """The two recorded graphs where edgewiseTSID beats edgewiseID are found only with the TSID step."""
    ids = {"semid_tests/graphExamples/5", "semid_tests/graphExamples/17"}
    for c in (c for c in CRITERIA if c["id"] in ids):
        g = _graph(c)
        assert len(identify(g, ["htc", "edgewise"], subset_size_control=3).identified_edges) < \
            len(trek_separation_identify(g).identified_edges) == len(c["edgewiseTSID"]["identified_edges"])


def _semid_tsid_literal(g, max_k=3):
    """SEMID's trekSeparationIdentifyStep fixpoint with exact max-flows only (no determinant search)."""
    G = reference._G(g.n, *g.to_arrays())
    unsolved = [set(g.parents(v)) for v in range(g.n)]
    changed = True
    while changed:
        changed = False
        for i in range(g.n):
            if not unsolved[i] or any(i in _desc(G, c) for c in g.children(i)):  # i on a directed cycle
                continue
            nondesc = [v for v in range(g.n) if v not in _desc(G, i)]
            for j in sorted(unsolved[i]):
                removed = tuple((p, i) for p in g.parents(i) if p == j or p not in unsolved[i])
                if any(trek_system_size(G, list(S), [*T, j]) == k
                       and trek_system_size(G, list(S), [*T, i], removed) < k
                       for k in range(1, min(max_k, g.n - 1) + 1) for S in combinations(range(g.n), k)
                       for T in combinations([t for t in nondesc if t != j], k - 1)):
                    unsolved[i].discard(j)
                    changed = True
    return unsolved


def _desc(G, i):
    from fastnips.causal._ref_mixed_graph import _descendants
    return _descendants({i}, G.ch)


def test_trek_separation_search_equals_exact_enumeration():
    rng = np.random.default_rng(5)
    found = 0
    for _ in range(25):
        g = random_mixed_graph(rng, int(rng.integers(3, 7)), 0.35, 0.3)
        want = _semid_tsid_literal(g)
        r = identify(g, ["trek_separation"], tian=False, seed=int(rng.integers(1 << 30)))
        got = [set(u) for u in _unsolved(r)]
        assert got == want, g
        found += sum(len(g.parents(v)) - len(u) for v, u in enumerate(want))
    assert found > 5


def _unsolved(r):
    out = [set() for _ in range(r.graph.n)]
    for (i, j), s in zip(r.graph.directed, r.edge_solved):
        if not s:
            out[j].add(i)
    return out


def test_adding_steps_never_loses_an_edge():
    """The fixpoint of htc + edgewise + ancestral keeps every edge the htc step alone identifies."""
    for c in CRITERIA[::3]:
        g = _graph(c)
        base = set(identify(g, ["htc"]).identified_edges)
        more = set(identify(g, ["htc", "edgewise", "ancestral"]).identified_edges)
        assert base <= more, c["id"]


def test_semid_restricted_subset_order():
    from fastnips.causal._ref_generic import _semid_subset_sizes
    assert _semid_subset_sizes(7, 3) == [7, 6, 5, 1, 2, 3]
    assert _semid_subset_sizes(6, 3) == [6, 5, 4, 1, 2, 3]
    assert _semid_subset_sizes(2, 3) == [2, 1]


def test_fixpoint_restarts_at_first_step():
    ctx_calls = []

    class Ctx:
        g = reference._G(2, [(0, 1)], [])

    import fastnips.causal._ref_generic as gen
    table = {"htc": lambda c, u: ctx_calls.append("htc") or [], "edgewise": lambda c, u: ctx_calls.append("ew") or (
        [(0, 1)] if u[1] and not u[1].clear() else [])}
    orig = gen._step_table
    gen._step_table = lambda: table
    try:
        _fixpoint(Ctx(), ["htc", "edgewise"])
    finally:
        gen._step_table = orig
    assert ctx_calls == ["htc", "ew", "htc", "ew"]


def test_argument_errors():
    g = MixedGraph(2, directed=[(0, 1)])
    with pytest.raises(ValueError, match="steps must be"):
        identify(g, ["bogus"])
    with pytest.raises(ValueError, match="steps must be"):
        identify(g, [])
    with pytest.raises(ValueError, match="max_subset_size"):
        identify(g, ["trek_separation"], max_subset_size=0)
    with pytest.raises(ValueError, match="subset_size_control"):
        identify(g, ["edgewise"], subset_size_control=0)
    with pytest.raises(ValueError, match="tian must be a bool"):
        edgewise_identify(g, tian="yes")
    with pytest.raises(ValueError, match="identify has no 'cpp' backend"):
        identify(g, ["trek_separation"], max_subset_size=4, backend="cpp")
    with pytest.raises(ValueError, match="g must be"):
        global_identifiable("g")
    with pytest.raises(NotImplementedError, match="identifier"):
        identify(g).identifier(np.eye(2))
    with pytest.raises(NotImplementedError, match="identifier"):
        edgewise_identify(g, tian=True).identifier(np.eye(2))


@pytest.mark.parametrize("prime", [2, 1, 4])
def test_primes_refused_identically(htc_backend, prime):
    g = MixedGraph(2, directed=[(0, 1)])
    for fn in (lambda: htc_identify(g, prime=prime, backend=htc_backend),
               lambda: edgewise_identify(g, prime=prime, backend=htc_backend),
               lambda: reference.htc_identify(2, [(0, 1)], [], "randomized", False, 0, prime),
               lambda: reference.edgewise_identify(2, [(0, 1)], [], 0, prime),
               lambda: identify(g, prime=prime)):
        with pytest.raises(ValueError, match="prime"):
            fn()


def test_smallest_and_largest_primes_accepted_by_every_backend(htc_backend):
    g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    r = htc_identify(g, prime=3, seed=1, backend=htc_backend)
    assert set(r.identified_edges) <= {(0, 1), (1, 2)}
    largest = (1 << 62) - 57  # the largest prime below 2**62
    assert htc_identify(g, prime=largest, backend=htc_backend).identifiable
    assert edgewise_identify(g, prime=largest, backend=htc_backend).identifiable
    with pytest.raises(ValueError, match="prime"):
        htc_identify(g, prime=(1 << 62) + 135, backend=htc_backend)  # a prime, above the common range


def test_plot_draws_every_edge():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    from matplotlib.patches import FancyArrowPatch

    ax = plot(README_1)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == README_1.num_directed + README_1.num_bidirected
    with pytest.raises(ValueError, match="pos"):
        plot(README_1, pos={0: (0, 0)})


SEMID_R = SEMID_LIB + r"""
suppressMessages({library(SEMID); library(jsonlite)}); con <- file("stdin"); lines <- readLines(con); close(con)
for (ln in lines) { x <- fromJSON(ln); n <- x$n
  L <- matrix(0, n, n); O <- matrix(0, n, n)
  if (length(x$d)) L[x$d + 1] <- 1; if (length(x$b)) { O[x$b + 1] <- 1; O <- O + t(O) }
  g <- MixedGraph(L, O); f <- function(r) { e <- integer(0); for (i in 1:n) for (j in r$solvedParents[[i]])
    e <- c(e, j - 1L, i - 1L); as.integer(e) }
  anc <- tryCatch(f(ancestralID(g)), error = function(e) -1L)
  gg <- f(generalGenericID(g, list(htcIdentifyStep, edgewiseIdentifyStep), tianDecompose = FALSE))
  ga <- tryCatch(f(generalGenericID(g, list(htcIdentifyStep, ancestralIdentifyStep))), error = function(e) -1L)
  cat(toJSON(list(tsid = f(edgewiseTSID(g)), ew = f(edgewiseID(g, subsetSizeControl = Inf)), anc = anc,
                  glob = globalID(g), gg = gg, ga = ga)), "\n") }
"""


def test_live_semid_on_random_graphs():
    """SEMID itself (R) on 30 random graphs, where R with SEMID and jsonlite is installed."""
    if not semid_installed():
        pytest.skip("R with the SEMID and jsonlite packages is not installed here")
    rng = np.random.default_rng(11)
    graphs = [random_mixed_graph(rng, int(rng.integers(3, 8)), 0.3, 0.3, acyclic=k % 2 == 0) for k in range(30)]
    inp = "\n".join(json.dumps({"n": g.n, "d": [list(e) for e in g.directed],
                                "b": [list(e) for e in g.bidirected]}) for g in graphs)
    out = subprocess.run(["Rscript", "-e", SEMID_R], input=inp, capture_output=True, text=True, check=True)
    backends = [b for b in ("reference", "cpp") if _backend.backend_available(b)]
    checked_ga = 0
    for g, line in zip(graphs, out.stdout.strip().splitlines()):
        want = json.loads(line)
        pairs = lambda flat: sorted(zip(flat[::2], flat[1::2]))
        assert trek_separation_identify(g).identified_edges == pairs(want["tsid"])
        assert edgewise_identify(g, tian=True).identified_edges == pairs(want["ew"])
        if want["anc"] != [-1]:  # -1: SEMID's ancestralID stopped with an error on this graph
            assert ancestral_identify(g).identified_edges == pairs(want["anc"])
        assert global_identifiable(g) == bool(want["glob"][0])
        assert identify(g, ["htc", "edgewise"], tian=False).identified_edges == pairs(want["gg"])
        if want["ga"] != [-1]:  # generalGenericID(htc, ancestral), every backend
            checked_ga += 1
            for be in backends:
                assert identify(g, ["htc", "ancestral"], backend=be).identified_edges == pairs(want["ga"])
    assert checked_ga >= 20, checked_ga


def test_plot_without_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"fastnips\[graph,plot\]"):
        plot(README_1)


def test_demo_rows():
    from fastnips.causal._demo import demo_semid_family

    rows = demo_semid_family(0)
    assert len(rows) == 2
    assert rows[0]["values"]["edges"] == {"HTC": 1, "edgewise": 1, "edgewise+Tian": 7, "edgewiseTSID": 7,
                                          "ancestralID": 7}
    assert rows[0]["values"]["global"] is False
    assert all(set(r) >= {"task", "backend", "result", "detail", "values"} for r in rows)


def _det_mod(M, q):
    M = [list(map(int, r)) for r in M]
    from fastnips.causal._ref_modp import _rref
    return len(_rref([r[:] for r in M], q)) == len(M)


def test_trek_separation_candidates_equal_brute_force_minors():
    """The grouped search finds a source set for exactly the target sets where some k x k minor pair fits."""
    from fastnips.causal._ref_trek import SEARCH_PRIME as q
    from fastnips.causal._ref_trek import _candidates

    rng = np.random.default_rng(3)
    hits = 0
    for trial in range(40):
        n, k = 7, 2 + trial % 2
        Sig = rng.integers(0, q, size=(n, n)) * (rng.random((n, n)) < 0.7)
        a = Sig[:, n - 1].copy()
        T0 = list(rng.choice(n - 1, size=k - 1, replace=False))
        rows = rng.random(n) < 0.6  # b lies in the span of the T0 columns on these rows
        mu = rng.integers(0, q, size=k - 1)
        b = np.where(rows, (Sig[:, T0].astype(object) @ mu.astype(object)) % q, rng.integers(0, q, size=n))
        b = np.asarray(b, dtype=np.int64) * (rng.random(n) < 0.9)
        pool = list(range(n - 1))
        want = set()
        for T in combinations(pool, k - 1):
            for S in combinations(range(n), k):
                A = [[Sig[s, t] for t in T] + [a[s]] for s in S]
                B = [[Sig[s, t] for t in T] + [b[s]] for s in S]
                if _det_mod(A, q) and not _det_mod(B, q):
                    want.add(T)
        got = _candidates(Sig, a, b, pool, k)
        for S, T in got:
            A = [[Sig[s, t] for t in T] + [a[s]] for s in S]
            B = [[Sig[s, t] for t in T] + [b[s]] for s in S]
            assert _det_mod(A, q), (trial, S, T)
            assert not _det_mod(B, q), (trial, S, T)
        assert {tuple(T) for _, T in got} == want, trial
        hits += len(want)
    assert hits > 20
