"""MixedGraph: construction, validation, immutability, conversions and file formats."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from fastnips.causal import MixedGraph


def iv() -> MixedGraph:
    return MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])


# ---------------------------------------------------------------------------------------------- basics
def test_accessors():
    g = MixedGraph(4, directed=[(0, 1), (2, 1), (1, 3), (3, 1)], bidirected=[(3, 0), (1, 2)])
    assert g.n == 4
    assert g.directed == ((0, 1), (2, 1), (1, 3), (3, 1))
    assert g.bidirected == ((0, 3), (1, 2))  # normalised to (min, max), order kept
    assert g.parents(1) == (0, 2, 3)
    assert g.children(1) == (3,)
    assert g.siblings(0) == (3,)
    assert g.siblings(2) == (1,)
    assert g.num_directed == 4
    assert g.num_bidirected == 2
    with pytest.raises(ValueError, match="out of range"):
        g.parents(4)


def test_empty_and_trivial_graphs():
    assert MixedGraph(0).n == 0
    g = MixedGraph(1)
    assert g.parents(0) == ()
    assert g.to_arrays()[0].shape == (0, 2)


def test_immutable_hashable_picklable():
    g = iv()
    with pytest.raises(AttributeError):
        g.n = 5
    with pytest.raises(AttributeError):
        g._dir = ()
    h = MixedGraph(3, directed=[(1, 2), (0, 1)], bidirected=[(2, 1)])
    assert g == h
    assert hash(g) == hash(h)
    assert g != MixedGraph(3, directed=[(0, 1)], bidirected=[(1, 2)])
    assert pickle.loads(pickle.dumps(g)) == g
    assert not dataclasses.is_dataclass(g)
    assert "MixedGraph(n=3" in repr(g)


def test_numpy_inputs_accepted():
    d = np.array([[0, 1], [1, 2]], dtype=np.int64)
    b = np.array([[2, 1]], dtype=np.int32)
    assert MixedGraph(np.int64(3), d, b) == iv()
    assert MixedGraph(3, np.zeros((0, 2), dtype=np.int32)).num_directed == 0


@pytest.mark.parametrize(("args", "match"), [
    ((-1,), "n must be a non-negative integer"),
    ((2.0,), "n must be a non-negative integer"),
    ((True,), "n must be a non-negative integer"),
    ((3, [(0, 0)]), "self-loop"),
    ((3, [], [(2, 2)]), "self-loop"),
    ((3, [(0, 3)]), "out of range"),
    ((3, [(-1, 2)]), "out of range"),
    ((3, [], [(0, 5)]), r"bidirected\[0\].*out of range"),
    ((3, [(0, 1.0)]), "must be integers"),
    ((3, [("0", 1)]), "must be integers"),
    ((3, [(True, 1)]), "must be integers"),
    ((3, [(0, 1, 2)]), "must be a pair"),
    ((3, [0, 1]), "must be a pair"),
    ((3, "01"), "sequence of"),
    ((3, np.array([[0.0, 1.0]])), "dtype"),
    ((3, np.array([0, 1, 2])), "shape"),
    ((3, [(0, 1), (1, 2), (0, 1)]), r"directed edge 0 -> 1 is given twice \(directed\[0\] and directed\[2\]\)"),
    ((3, [], [(0, 1), (1, 0)]), "bidirected edge 0 <-> 1 is given twice"),
    ((3, [], [(0, 2), (0, 2)]), "bidirected edge 0 <-> 2 is given twice"),
])
def test_validation_errors(args, match):
    with pytest.raises(ValueError, match=match):
        MixedGraph(*args)


def test_both_directions_and_bidirected_are_fine():
    g = MixedGraph(2, directed=[(0, 1), (1, 0)], bidirected=[(0, 1)])  # 2-cycle plus a bow
    assert g.parents(0) == (1,)
    assert g.parents(1) == (0,)
    assert g.siblings(0) == (1,)


def test_to_arrays_contract():
    d, b = iv().to_arrays()
    for a, expect in ((d, [[0, 1], [1, 2]]), (b, [[1, 2]])):
        assert a.dtype == np.int32
        assert a.flags.c_contiguous
        assert a.ndim == 2
        assert a.shape[1] == 2
        assert a.tolist() == expect
    d, b = MixedGraph(2).to_arrays()
    assert d.shape == (0, 2)
    assert b.shape == (0, 2)
    assert d.dtype == np.int32


def test_permute():
    g = MixedGraph(4, directed=[(0, 1), (1, 2)], bidirected=[(0, 3)])
    h = g.permute([3, 2, 1, 0])
    assert h == MixedGraph(4, directed=[(3, 2), (2, 1)], bidirected=[(0, 3)])
    assert h.permute([3, 2, 1, 0]) == g
    with pytest.raises(ValueError, match="permutation"):
        g.permute([0, 1, 2, 2])
    with pytest.raises(ValueError, match="permutation"):
        g.permute([0, 1, 2])


# ---------------------------------------------------------------------------------------------- adjacency
def test_adjacency_round_trip():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(1, 8))
        L = (rng.random((n, n)) < 0.3).astype(int)
        np.fill_diagonal(L, 0)
        O = np.triu(rng.random((n, n)) < 0.3, 1).astype(int)
        O = O + O.T
        g = MixedGraph.from_adjacency(L, O)
        L2, O2 = g.to_adjacency()
        assert np.array_equal(L, L2)
        assert np.array_equal(O, O2)
        assert MixedGraph.from_adjacency(L2.astype(bool), O2.astype(float)) == g


def test_adjacency_semid_example():
    # the instrumental-variable graph in SEMID's L / O convention
    L = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    O = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert MixedGraph.from_adjacency(L, O) == iv()


@pytest.mark.parametrize(("L", "O", "match"), [
    (np.zeros((2, 3)), np.zeros((2, 2)), "L must be a square matrix"),
    (np.zeros((2, 2)), np.zeros((3, 3)), "same shape"),
    (np.array([[0, 2], [0, 0]]), np.zeros((2, 2)), "only 0's and 1's"),
    (np.array([[0, np.nan], [0, 0]]), np.zeros((2, 2)), "only 0's and 1's"),
    (np.array([[1, 0], [0, 0]]), np.zeros((2, 2)), "L must have 0's along its diagonal"),
    (np.zeros((2, 2)), np.eye(2), "O must have 0's along its diagonal"),
    (np.zeros((2, 2)), np.array([[0, 1], [0, 0]]), "O must be symmetric"),
    (np.array([["a", "b"], ["c", "d"]]), np.zeros((2, 2)), "numeric"),
])
def test_adjacency_errors(L, O, match):
    with pytest.raises(ValueError, match=match):
        MixedGraph.from_adjacency(L, O)


# ---------------------------------------------------------------------------------------------- networkx
def test_networkx_round_trip():
    nx = pytest.importorskip("networkx")
    g = MixedGraph(5, directed=[(0, 1), (1, 0), (2, 3), (3, 4)], bidirected=[(0, 1), (2, 4)])
    G = g.to_networkx()
    assert isinstance(G, nx.MultiDiGraph)
    assert G.number_of_nodes() == 5
    assert MixedGraph.from_networkx(G) == g


def test_networkx_digraph_convention():
    nx = pytest.importorskip("networkx")
    G = nx.DiGraph()
    G.add_nodes_from(["x", "y", "z"])
    G.add_edge("x", "y")                      # directed by default
    G.add_edge("y", "z", kind="directed")
    G.add_edge("z", "y", kind="bidirected")   # one orientation
    G.add_edge("x", "z", kind="bidirected")   # both orientations: merged
    G.add_edge("z", "x", kind="bidirected")
    g = MixedGraph.from_networkx(G)           # nodes sorted: x=0, y=1, z=2
    assert g == MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2), (0, 2)])
    h = MixedGraph.from_networkx(G, nodelist=["z", "y", "x"])
    assert h == g.permute([2, 1, 0])
    H = nx.DiGraph()
    H.add_edge(0, 1, type="bidirected")
    assert MixedGraph.from_networkx(H, attr="type") == MixedGraph(2, bidirected=[(0, 1)])


def test_networkx_errors():
    nx = pytest.importorskip("networkx")
    with pytest.raises(ValueError, match="directed networkx graph"):
        MixedGraph.from_networkx(nx.Graph([(0, 1)]))
    G = nx.DiGraph()
    G.add_edge(0, 1, kind="undirected")
    with pytest.raises(ValueError, match="expected 'directed' or 'bidirected'"):
        MixedGraph.from_networkx(G)
    M = nx.MultiDiGraph()
    M.add_edge(0, 1)
    M.add_edge(0, 1)
    with pytest.raises(ValueError, match="given twice"):
        MixedGraph.from_networkx(M)
    M = nx.MultiDiGraph()
    M.add_edge(0, 1, kind="bidirected")
    M.add_edge(0, 1, kind="bidirected")
    with pytest.raises(ValueError, match="stored twice"):
        MixedGraph.from_networkx(M)
    G = nx.DiGraph([(0, 0)])
    with pytest.raises(ValueError, match="self-loop"):
        MixedGraph.from_networkx(G)
    with pytest.raises(ValueError, match="exactly the nodes"):
        MixedGraph.from_networkx(nx.DiGraph([(0, 1)]), nodelist=[0, 2])
    with pytest.raises(ValueError, match="networkx"):
        MixedGraph.from_networkx([(0, 1)])


# ---------------------------------------------------------------------------------------------- files
def test_text_and_json_round_trip(tmp_path):
    g = MixedGraph(6, directed=[(0, 1), (1, 2), (2, 0), (4, 5)], bidirected=[(0, 5), (3, 4)])
    for name in ("g.txt", "g.json", "g.edges"):
        p = tmp_path / name
        g.to_file(p)
        h = MixedGraph.from_file(p)
        assert h == g
        assert h.directed == g.directed
        assert h.bidirected == g.bidirected
    p = tmp_path / "forced.txt"
    g.to_file(p, format="json")
    assert MixedGraph.from_file(p, format="json") == g
    with pytest.raises(ValueError, match="format must be"):
        g.to_file(tmp_path / "x.txt", format="yaml")


def test_text_format_features(tmp_path):
    text = """# a comment line

    n 4   # header with a trailing comment
    0 -> 1
    1<->3
      2->3   # no spaces
    # 0 -> 3 commented out
    """
    p = tmp_path / "g.txt"
    p.write_text(text)
    assert MixedGraph.from_file(p) == MixedGraph(4, directed=[(0, 1), (2, 3)], bidirected=[(1, 3)])
    assert MixedGraph.from_text("n 0\n") == MixedGraph(0)


@pytest.mark.parametrize(("text", "line", "match"), [
    ("0 -> 1\n", 1, "expected the header 'n N'"),
    ("# c\nn x\n", 2, "must be an integer"),
    ("n -2\n", 1, ">= 0"),
    ("n 3\n0 -> 1\n1 - 2\n", 3, "expected an edge 'i -> j' or 'i <-> j'"),
    ("n 3\n0 -> 1\n0 -> a\n", 3, "node ids must be integers, got 'a'"),
    ("n 3\n\n\n0 -> 3\n", 4, "out of range"),
    ("n 3\n0 -> -1\n", 2, "out of range"),
    ("n 3\n1 <-> 1\n", 2, "self-loop"),
    ("n 3\n0 -> 1\n# x\n0 -> 1\n", 4, "repeats line 2"),
    ("n 3\n0 <-> 1\n1 <-> 0\n", 3, "repeats line 2"),
    ("n 3\nn 3\n", 2, "given twice"),
    ("n 3\n0 -> 1 -> 2\n", 2, "expected an edge"),
    ("n 3\n0->1->2\n", 2, "node ids must be integers"),
])
def test_text_errors_carry_line_numbers(tmp_path, text, line, match):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as exc:
        MixedGraph.from_file(p)
    assert f"bad.txt:{line}:" in str(exc.value)


def test_text_missing_header(tmp_path):
    p = tmp_path / "empty.txt"
    p.write_text("# nothing here\n")
    with pytest.raises(ValueError, match="no header"):
        MixedGraph.from_file(p)


@pytest.mark.parametrize(("text", "line", "match"), [
    ('{"n": 3,\n "directed": [[0, 1],\n', 3, "invalid JSON"),
    ("[1, 2]", 1, "JSON object"),
    ('{"directed": []}', 1, "missing key 'n'"),
    ('{"n": 3, "edges": []}', 1, "unknown keys"),
    ('{"n": "3"}', 1, "'n' must be an integer"),
    ('{"n": 3,\n "directed": [[0, 1, 2]]}', 2, "list of \\[i, j\\] integer pairs"),
    ('{"n": 3,\n "directed": [[0, 1]],\n "bidirected": [[0, 3]]}', 3, "out of range"),
    ('{"n": 3,\n "directed": [[0, 0]]}', 2, "self-loop"),
    ('{"directed": [],\n "n": -1}', 2, "non-negative"),
])
def test_json_errors(tmp_path, text, line, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as exc:
        MixedGraph.from_file(p)
    assert f"bad.json:{line}:" in str(exc.value)


def test_to_arrays_is_cached_and_read_only():
    g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(2, 0)])
    d, b = g.to_arrays()
    assert d.dtype == np.int32
    assert d.flags.c_contiguous
    assert d.tolist() == [[0, 1], [1, 2]]
    assert b.tolist() == [[0, 2]]
    assert g.to_arrays()[0] is d
    with pytest.raises(ValueError, match="read-only"):
        d[0, 0] = 2
