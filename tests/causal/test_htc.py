"""HTC / Tian-HTC / edgewise identification: SEMID oracle agreement, randomness, invariants, certificates.

Every test runs on the ``reference`` backend and on ``cpp`` when ``fastnips._C`` is available.
The SEMID answers in tests/causal/data/ are SEMID 0.4.2's own (see data/README.md):
``htcID(tianDecompose=FALSE)`` for plain HTC, ``htcID()`` for Tian mode,
``edgewiseID(tianDecompose=FALSE, subsetSizeControl=Inf)`` for edgewise.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fastnips import _backend
from fastnips.causal import (
    IdentificationResult,
    MixedGraph,
    edgewise_identify,
    htc_identify,
    htc_identify_many,
    htc_nonidentifiable,
    reference,
)

from ._builders import CASES, EXHAUSTIVE_N3, check_identifier, graph_of, random_graphs, random_mixed_graph

METHODS = ["randomized", "maxflow"]
EW_CASES = [c for c in CASES if c["edgewise_subset_size_control"] == "Inf"]


def _mismatches(cases, fn, check):
    bad = []
    for c in cases:
        res = fn(graph_of(c))
        msg = check(c, res)
        if msg:
            bad.append(f"{c['id']}: {msg}")
    return bad


def _edges(lst):
    return sorted(tuple(e) for e in lst)


# ---------------------------------------------------------------------------------------------- SEMID oracle
@pytest.mark.parametrize("method", METHODS)
def test_plain_htc_matches_semid(htc_backend, method):
    def check(c, r):
        if r.identified_nodes != c["htc_identified_nodes"]:
            return f"nodes {r.identified_nodes} != SEMID {c['htc_identified_nodes']}"
        if "htc_identified_edges" in c and r.identified_edges != _edges(c["htc_identified_edges"]):
            return "edges differ"
        if r.identifiable != c["htc_identifiable"]:
            return "identifiable differs"
        return None

    bad = _mismatches(CASES + EXHAUSTIVE_N3, lambda g: htc_identify(g, method=method, backend=htc_backend),
                      check)
    assert not bad, bad[:10]


@pytest.mark.parametrize("method", METHODS)
def test_tian_htc_matches_semid(htc_backend, method):
    def check(c, r):
        if r.identified_nodes != c["htc_tian_identified_nodes"]:
            return f"nodes {r.identified_nodes} != SEMID {c['htc_tian_identified_nodes']}"
        if r.identifiable != c["htc_tian_identifiable"]:
            return "identifiable differs"
        _comps, component = reference.tian_decompose(reference._G(c["n"], *graph_of(c).to_arrays()))
        if not np.array_equal(r.component, component):
            return f"component ids {r.component.tolist()} != {component.tolist()}"
        return None

    bad = _mismatches(CASES, lambda g: htc_identify(g, method=method, tian=True, backend=htc_backend), check)
    assert not bad, bad[:10]
    # the one public case where Tian decomposition is strictly stronger than plain HTC
    c = next(c for c in CASES if c["id"].startswith("hand_037"))
    assert set(c["htc_identified_nodes"]) < set(c["htc_tian_identified_nodes"])


def test_edgewise_matches_semid(htc_backend):
    def check(c, r):
        if r.identified_nodes != c["edgewise_identified_nodes"]:
            return f"nodes {r.identified_nodes} != SEMID {c['edgewise_identified_nodes']}"
        if "edgewise_identified_edges" in c and r.identified_edges != _edges(c["edgewise_identified_edges"]):
            return "edges differ"
        if r.identifiable != c["edgewise_identifiable"]:
            return "identifiable differs"
        return None

    bad = _mismatches(EW_CASES + EXHAUSTIVE_N3, lambda g: edgewise_identify(g, backend=htc_backend), check)
    assert not bad, bad[:10]


def test_edgewise_enumeration_oracle_matches_semid():
    """The reference's SEMID-style subset enumeration reproduces SEMID (and so equals the rank method)."""
    for c in EW_CASES + EXHAUSTIVE_N3:
        d, b = graph_of(c).to_arrays()
        r = reference.edgewise_identify_enumerate(c["n"], d, b)
        assert np.flatnonzero(r["node_solved"]).tolist() == c["edgewise_identified_nodes"], c["id"]
        if "edgewise_identified_edges" in c:
            got = sorted(tuple(e) for e, s in zip(c["directed"], r["edge_solved"]) if s)
            assert got == _edges(c["edgewise_identified_edges"]), c["id"]


def test_nonidentifiable_certificate_matches_semid():
    cases = [c for c in CASES if c["htc_nonidentifiable_certified"] is not None]
    assert len(cases) > 50
    for be in ("reference", "auto"):  # the certificate has the reference backend only
        for c in cases:
            assert htc_nonidentifiable(graph_of(c), backend=be) == c["htc_nonidentifiable_certified"], c["id"]
    with pytest.raises(ValueError, match="htc_nonidentifiable has no 'cpp' backend"):
        htc_nonidentifiable(graph_of(cases[0]), backend="cpp")


# ---------------------------------------------------------------------------------------------- randomness
def test_results_do_not_depend_on_seed(htc_backend):
    for seed in range(1, 6):
        for c in CASES:
            g = graph_of(c)
            assert htc_identify(g, seed=seed, backend=htc_backend).identified_nodes == \
                c["htc_identified_nodes"], (c["id"], seed)
            assert htc_identify(g, seed=seed, tian=True, backend=htc_backend).identified_nodes == \
                c["htc_tian_identified_nodes"], (c["id"], seed)
            if c["edgewise_subset_size_control"] == "Inf":
                assert edgewise_identify(g, seed=seed, backend=htc_backend).identified_edges == \
                    _edges(c["edgewise_identified_edges"]), (c["id"], seed)


@pytest.mark.parametrize("prime", [101, 7])
def test_small_prime_never_adds_identifications(htc_backend, prime):
    """A tiny prime makes false 'rank deficient' answers likely (so nodes may be lost), but every
    reported identification must still be one SEMID makes: the error is one-sided."""
    lost = 0
    for seed in range(5):
        for c in CASES + EXHAUSTIVE_N3[::4]:
            g = graph_of(c)
            r = htc_identify(g, seed=seed, prime=prime, backend=htc_backend)
            assert set(r.identified_nodes) <= set(c["htc_identified_nodes"]), (c["id"], seed)
            lost += len(c["htc_identified_nodes"]) - len(r.identified_nodes)
            if "htc_tian_identified_nodes" in c:
                r = htc_identify(g, seed=seed, prime=prime, tian=True, backend=htc_backend)
                assert set(r.identified_nodes) <= set(c["htc_tian_identified_nodes"]), (c["id"], seed)
            if c.get("edgewise_subset_size_control", "Inf") == "Inf":
                r = edgewise_identify(g, seed=seed, prime=prime, backend=htc_backend)
                assert set(r.identified_nodes) <= set(c["edgewise_identified_nodes"]), (c["id"], seed)
                if "edgewise_identified_edges" in c:
                    assert set(r.identified_edges) <= set(_edges(c["edgewise_identified_edges"])), c["id"]
    if prime == 7:
        assert lost > 0, "p = 7 should lose some nodes; is the prime passed through?"


@pytest.mark.parametrize("tian", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_identify_many_matches_single_calls(htc_backend, method, tian):
    graphs = [graph_of(c) for c in CASES]
    many = htc_identify_many(graphs, method=method, tian=tian, seed=3, backend=htc_backend)
    assert len(many) == len(graphs)
    for g, r in zip(graphs, many):
        one = htc_identify(g, method=method, tian=tian, seed=3, backend=htc_backend)
        assert r.graph is g
        assert r.backend == one.backend
        assert np.array_equal(r.node_solved, one.node_solved)
    assert htc_identify_many([], backend=htc_backend) == []


def _max_indegree(g):
    return max((len(g.parents(v)) for v in range(g.n)), default=0)


def test_relabelling_permutes_results(htc_backend):
    rng = np.random.default_rng(7)
    for g in random_graphs()[::2]:
        perm = rng.permutation(g.n).tolist()
        h = g.permute(perm)
        for kw in ({}, {"tian": True}, {"method": "maxflow"}):
            a = htc_identify(g, backend=htc_backend, **kw)
            b = htc_identify(h, backend=htc_backend, **kw)
            assert sorted(perm[v] for v in a.identified_nodes) == b.identified_nodes, (g, kw)
        a, b = edgewise_identify(g, backend=htc_backend), edgewise_identify(h, backend=htc_backend)
        assert sorted((perm[i], perm[j]) for i, j in a.identified_edges) == b.identified_edges, g


def test_edge_order_does_not_matter(htc_backend):
    rng = np.random.default_rng(8)
    for g in random_graphs()[::3]:
        d, b = list(g.directed), list(g.bidirected)
        rng.shuffle(d)
        rng.shuffle(b)
        h = MixedGraph(g.n, d, [(j, i) for i, j in b])
        assert htc_identify(g, backend=htc_backend).identified_edges == \
            htc_identify(h, backend=htc_backend).identified_edges
        assert edgewise_identify(g, backend=htc_backend).identified_edges == \
            edgewise_identify(h, backend=htc_backend).identified_edges


def test_invariants_on_random_graphs(htc_backend):
    for g in random_graphs():
        plain = htc_identify(g, backend=htc_backend)
        exact = htc_identify(g, method="maxflow", backend=htc_backend)
        tian = htc_identify(g, tian=True, backend=htc_backend)
        tian_exact = htc_identify(g, tian=True, method="maxflow", backend=htc_backend)
        ew = edgewise_identify(g, backend=htc_backend)
        assert plain.identified_nodes == exact.identified_nodes, g
        assert tian.identified_nodes == tian_exact.identified_nodes, g
        assert set(plain.identified_nodes) <= set(tian.identified_nodes), g
        assert set(plain.identified_edges) <= set(ew.identified_edges), g
        parentless = {v for v in range(g.n) if not g.parents(v)}
        for r in (plain, tian, ew):
            assert parentless <= set(r.identified_nodes), g
            # a node is solved iff all of its edges are
            for v in range(g.n):
                into = [s for (i, j), s in zip(g.directed, r.edge_solved) if j == v]
                assert r.node_solved[v] == all(into), (g, v)
        if g.n + g.num_directed + g.num_bidirected > g.n * (g.n + 1) // 2:
            assert not plain.identifiable, g
            assert not tian.identifiable, g
            assert not ew.identifiable, g
        if htc_nonidentifiable(g):
            assert not plain.identifiable, g


def test_acyclic_bow_free_graphs_are_identifiable(htc_backend):
    rng = np.random.default_rng(11)
    for _ in range(60):
        n = int(rng.integers(1, 13))
        g = random_mixed_graph(rng, n, float(rng.uniform(0.1, 0.6)), float(rng.uniform(0, 0.7)),
                               acyclic=True, bow_free=True)
        for method in METHODS:
            assert htc_identify(g, method=method, backend=htc_backend).identifiable, g
        assert edgewise_identify(g, backend=htc_backend).identifiable, g
        # no bidirected edges at all: a recursive (or cyclic-free) model is identifiable
        h = MixedGraph(g.n, g.directed)
        assert htc_identify(h, backend=htc_backend).identifiable


def test_edgewise_rank_equals_enumeration_onrandom_graphs():
    """The polynomial (rank) edgewise decision equals SEMID's subset enumeration (the oracle)."""
    for g in random_graphs():
        if _max_indegree(g) > 7:
            continue
        d, b = g.to_arrays()
        fast = reference.edgewise_identify(g.n, d, b, seed=1)
        slow = reference.edgewise_identify_enumerate(g.n, d, b)
        assert np.array_equal(fast["edge_solved"], slow["edge_solved"]), g


# ---------------------------------------------------------------------------------------------- certificates
def _check_htc_certificate(g: MixedGraph, r: IdentificationResult) -> None:
    """Every reported source set really satisfies the HTC, in an order where the formula can be evaluated."""
    G = reference._G(g.n, *g.to_arrays())
    position = {v: k for k, v in enumerate(r.order)}
    for v in r.identified_nodes:
        P, Y = list(g.parents(v)), list(r.sources[v])
        if not P:
            assert Y == [], (g, v)
            continue
        assert len(Y) == len(P), (g, v, Y)
        assert len(set(Y)) == len(Y), (g, v, Y)
        assert v not in Y, (g, v, Y)
        assert not set(Y) & set(g.siblings(v)), (g, v, Y)
        H = reference.htr_from(G, v)
        for y in Y:
            assert y not in H or (r.node_solved[y] and position[y] < position[v]), (g, v, y)
        size, _ = reference.half_trek_system(G, Y, P)
        assert size == len(P), (g, v, Y)


def test_htc_certificates_are_valid(htc_backend):
    for g in random_graphs():
        for method in METHODS:
            r = htc_identify(g, method=method, backend=htc_backend)
            assert set(r.order) == set(r.identified_nodes)
            _check_htc_certificate(g, r)


def test_tian_certificates_are_valid(htc_backend):
    for g in random_graphs():
        r = htc_identify(g, tian=True, backend=htc_backend)
        G = reference._G(g.n, *g.to_arrays())
        comps, component = reference.tian_decompose(G)
        assert np.array_equal(r.component, component)
        for _c, comp in enumerate(comps):
            lg, nodes = reference.component_graph(G, comp)
            local = {v: k for k, v in enumerate(nodes)}
            internal = set(comp["internal"])
            sub = MixedGraph(lg.n, lg.directed, lg.bidirected)
            solved = np.zeros(lg.n, dtype=bool)
            sources = [()] * lg.n
            for v in r.identified_nodes:
                if v in internal:
                    solved[local[v]] = True
                    assert set(r.sources[v]) <= set(nodes), (g, v)
                    sources[local[v]] = tuple(local[y] for y in r.sources[v])
            for u in comp["incoming"]:  # parentless in the component graph
                solved[local[u]] = True
            order = [local[u] for u in comp["incoming"]] + [local[v] for v in r.order if v in internal]
            lr = dataclasses.replace(r, graph=sub, node_solved=solved, order=tuple(order),
                                     sources=tuple(sources), component=None, tian=False)
            _check_htc_certificate(sub, lr)


def test_edgewise_steps_are_valid(htc_backend):
    for g in random_graphs():
        r = edgewise_identify(g, backend=htc_backend)
        G = reference._G(g.n, *g.to_arrays())
        htr = [reference.htr_from(G, v) for v in range(g.n)]
        trf = [reference.tr_from(G, v) for v in range(g.n)]
        unsolved = [set(g.parents(v)) for v in range(g.n)]
        for v, S, Y in r.steps:
            U = unsolved[v]
            assert S, (g, v)
            assert set(S) <= U, (g, v, S)
            assert len(S) == len(Y), (g, v, S, Y)
            for y in Y:
                assert y != v, (g, v)
                assert y not in g.siblings(v), (g, v, y)
                assert not htr[v] & unsolved[y], (g, v, y)
                reach = set(htr[y]).union(*[trf[u] for u in unsolved[y]]) & U
                assert reach <= set(S), (g, v, y)
            assert reference.half_trek_system(G, list(Y), list(S))[0] == len(S), (g, v, S, Y)
            unsolved[v] = U - set(S)
        expect = np.array([i not in unsolved[j] for i, j in g.directed], dtype=bool)
        assert np.array_equal(expect, r.edge_solved), g


# ---------------------------------------------------------------------------------------------- API
def test_trivial_graphs(htc_backend):
    for g in (MixedGraph(0), MixedGraph(1), MixedGraph(4, bidirected=[(i, j) for i in range(4)
                                                                        for j in range(i + 1, 4)])):
        for r in (htc_identify(g, backend=htc_backend), htc_identify(g, tian=True, backend=htc_backend),
                  htc_identify(g, method="maxflow", backend=htc_backend),
                  edgewise_identify(g, backend=htc_backend)):
            assert r.identifiable
            assert r.identified_nodes == list(range(g.n))
            assert r.identified_edges == []
            L_hat, O_hat = r.identifier(np.eye(g.n) + 0.1 * np.ones((g.n, g.n)))
            assert not np.isnan(L_hat).any()
            assert not np.isnan(O_hat).any()
    # a complete bidirected part on top of a chain is never identifiable beyond the source
    g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(0, 1), (0, 2), (1, 2)])
    assert htc_identify(g, backend=htc_backend).identified_nodes == [0]


def test_result_object(htc_backend):
    g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(0, 1)])
    r = htc_identify(g, backend=htc_backend)
    assert r.backend == htc_backend
    assert r.criterion == "htc"
    assert not r.tian
    assert r.identified_nodes == [0, 2]
    assert r.identified_edges == [(1, 2)]
    assert r.unidentified_edges == [(0, 1)]
    assert not r.identifiable
    assert r.rounds >= 1
    assert r.tests >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.rounds = 3
    with pytest.raises(ValueError):
        r.node_solved[0] = False
    d = json.loads(json.dumps(r.to_dict()))
    assert d["identified_edges"] == [[1, 2]]
    assert d["identifiable"] is False
    assert "identifiable=False" in repr(r)
    e = edgewise_identify(g, backend=htc_backend)
    assert e.criterion == "edgewise"
    assert json.loads(json.dumps(e.to_dict()))["steps"]
    t = htc_identify(g, tian=True, backend=htc_backend)
    assert t.component.tolist() == [0, 0, 1]
    assert "component" in t.to_dict()


def test_argument_errors():
    g = MixedGraph(2, directed=[(0, 1)])
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        htc_identify(g, backend="gpu")
    with pytest.raises(ValueError, match="htc_identify has no 'triton' backend"):
        htc_identify(g, backend="triton")
    with pytest.raises(ValueError, match="method must be"):
        htc_identify(g, method="exact")
    with pytest.raises(ValueError, match="tian must be a bool"):
        htc_identify(g, tian="yes")
    with pytest.raises(ValueError, match="seed"):
        htc_identify(g, seed=-1)
    with pytest.raises(ValueError, match="seed"):
        edgewise_identify(g, seed=1.5)
    with pytest.raises(ValueError, match="prime"):
        htc_identify(g, prime=100)
    with pytest.raises(ValueError, match="prime"):
        htc_identify(g, prime=(1 << 89) - 1)
    with pytest.raises(ValueError, match=r"g must be a fastnips\.causal\.MixedGraph"):
        htc_identify([(0, 1)])
    with pytest.raises(ValueError, match="g must be"):
        htc_nonidentifiable(None)
    with pytest.raises(ValueError, match=r"graphs\[1\] must be"):
        htc_identify_many([g, "x"])
    with pytest.raises(ValueError, match="single MixedGraph"):
        htc_identify_many(g)
    with pytest.raises(ValueError, match="iterable"):
        htc_identify_many(3)


def test_backend_resolution():
    g = MixedGraph(1)
    assert htc_identify(g, backend="reference").backend == "reference"
    has = _backend.backend_available("cpp")
    assert htc_identify(g).backend == ("cpp" if has else "reference")
    assert edgewise_identify(g).backend == ("cpp" if has else "reference")
    if has:
        assert htc_identify(g, backend="cpp").backend == "cpp"
    else:
        with pytest.raises(ValueError, match="backend 'cpp' is not available"):
            htc_identify(g, backend="cpp")
    with pytest.raises(TypeError, match="backend must be a string"):
        htc_identify(g, backend=None)


def test_native_contract_with_a_stand_in(monkeypatch):
    """The dispatch accepts the native core's plain-list dicts: a stand-in ``fastnips._C`` that returns the
    reference's answers as JSON-style lists must give the same results as the reference backend."""
    import types

    def listify(x):
        return json.loads(json.dumps(x, default=lambda a: a.tolist()))

    fake = types.SimpleNamespace(
        htc_identify=lambda *a: listify(reference.htc_identify(*a)),
        edgewise_identify=lambda *a: listify(reference.edgewise_identify(*a)),
        htc_identify_many=lambda gs, *a: [listify(reference.htc_identify(n, d, b, *a)) for n, d, b in gs],
    )
    monkeypatch.setattr(_backend, "native", lambda: fake)
    monkeypatch.setattr(_backend, "backend_available", lambda name: name in ("reference", "cpp"))
    monkeypatch.setattr(_backend, "_probe", lambda name: (name in ("reference", "cpp"), ""))
    rng = np.random.default_rng(5)
    graphs = list(random_graphs()[:40])
    for g in graphs:
        for tian in (False, True):
            a = htc_identify(g, tian=tian, backend="cpp")
            b = htc_identify(g, tian=tian, backend="reference")
            assert a.backend == "cpp"
            assert a.identified_edges == b.identified_edges
            assert a.order == b.order
            assert a.sources == b.sources
            check_identifier(a, rng)
        e = edgewise_identify(g, backend="cpp")
        assert e.steps == edgewise_identify(g, backend="reference").steps
        check_identifier(e, rng)
    many = htc_identify_many(graphs, tian=True, backend="auto")
    assert [r.identified_nodes for r in many] == [htc_identify(g, tian=True).identified_nodes for g in graphs]
    with pytest.raises(ValueError, match="htc_nonidentifiable has no 'cpp' backend"):
        htc_nonidentifiable(graphs[0], backend="cpp")
    # malformed native output is reported, not silently accepted
    fake.htc_identify = lambda *a: {"solved": [True], "order": [], "sources": [[]], "rounds": 0, "tests": 0}
    with pytest.raises(RuntimeError, match="malformed"):
        htc_identify(MixedGraph(1), backend="cpp")
