"""Memory of the native HTC solvers is bounded by the input: nodes without edges cost O(1) each, not the
n^2 / 64 words of four bitsets (a 9-byte graph file `n 100000` reached 4.9 GB). The solvers run on the nodes
that have an edge and map the result back; the answers equal those of the graph without the extra nodes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fastnips import _backend

WHY = _backend.why_unavailable("cpp")
pytestmark = pytest.mark.skipif(bool(WHY), reason=f"backend 'cpp' not available: {WHY}")

PEAK_LIMIT_MB = 1024  # the whole process, Python and numpy included


def peak_rss_of(code: str) -> tuple[float, str]:
    """Run `code` in a fresh interpreter under an 8 GiB address-space cap (so that a regression fails with a
    MemoryError instead of swamping the machine); (its peak resident set in MB, its stdout)."""
    prog = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    """) + textwrap.dedent(code) + textwrap.dedent("""
        # VmHWM: the high-water mark of this process image only. ru_maxrss would not do: Linux carries the
        # forking parent's peak across exec into it (a pytest process at 1.1 GB made every child "1.1 GB").
        hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
        print("peak_mb", int(hwm.split()[1]) / 1024)
    """)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert r.returncode == 0, r.stderr[-3000:]
    peak = float(r.stdout.split("peak_mb")[-1])
    return peak, r.stdout


@pytest.mark.parametrize("method", ["randomized", "maxflow"])
def test_edgeless_million_node_graph_is_cheap_through_the_binding(method):
    peak, out = peak_rss_of(f"""
        import numpy as np
        from fastnips import _C
        r = _C.htc_identify(10**6, np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64), method="{method}")
        assert r["solved"].all() and r["solved"].size == 10**6 and r["rounds"] == 0 and r["tests"] == 0
        assert (r["level"] == 0).all() and r["order"][:3].tolist() == [0, 1, 2] and r["order"].size == 10**6
        # a few edges among a million nodes: only their endpoints get solver state
        r = _C.htc_identify(10**6, [(10, 999_999), (999_999, 500_000)], [(10, 500_000)], method="{method}")
        assert r["solved"][[10, 999_999, 500_000]].tolist() == [True, True, True], r["solved"][[10, 999_999, 500_000]]
        assert r["sources"][500_000] == [999_999] and r["level"][500_000] == 2
        print("ok")
    """)
    assert "ok" in out
    assert peak < PEAK_LIMIT_MB, f"peak resident set {peak:.0f} MB"


def test_edgeless_million_node_graph_is_cheap_through_the_public_api():
    peak, out = peak_rss_of("""
        from fastnips.causal import MixedGraph, htc_identify
        r = htc_identify(MixedGraph(10**6), backend="cpp")
        assert r.identifiable
        print("ok")
    """)
    assert "ok" in out
    assert peak < PEAK_LIMIT_MB, f"peak resident set {peak:.0f} MB"


def pad(n: int, d: np.ndarray, b: np.ndarray, extra: int, seed: int):
    """The graph with `extra` edgeless nodes inserted at random positions: (n', d', b', new id of node i)."""
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(n + extra, n, replace=False))
    return n + extra, keep[d], keep[b], keep


def small_graphs():
    """Small mixed graphs in which every node has an edge."""
    from fastnips.causal.generators import instrument_chain, random_mixed_graph
    for s in range(6):
        g = random_mixed_graph(14, p_directed=0.25, p_bidirected=0.2, acyclic=s % 3 != 2, seed=s)
        yield g.n, np.asarray(g.directed).reshape(-1, 2), np.asarray(g.bidirected).reshape(-1, 2)
    g = instrument_chain(9)
    yield g.n, np.asarray(g.directed).reshape(-1, 2), np.asarray(g.bidirected).reshape(-1, 2)


@pytest.mark.parametrize("method", ["randomized", "maxflow"])
def test_edgeless_nodes_change_nothing(method):
    """Every field of the result on a graph with edgeless nodes inserted equals the result on the graph itself
    (where every node has an edge, so the solvers run on all of it), mapped to the new ids; the edgeless nodes
    are solved at level 0 and listed in `order` among the parentless ones. The randomized method draws its
    random streams by node id, so its source sets are compared by size only (any valid Y_v may be found)."""
    C = _backend.native()
    for n, d, b in small_graphs():
        assert set(d.ravel().tolist()) | set(b.ravel().tolist()) == set(range(n))  # no edgeless node yet
        want = C.htc_identify(n, d, b, method=method)
        for seed in range(2):
            n2, d2, b2, new = pad(n, d, b, extra=7, seed=seed)
            got = C.htc_identify(n2, d2, b2, method=method)
            solved, level = np.ones(n2, bool), np.zeros(n2, np.int32)
            solved[new], level[new] = want["solved"], want["level"]
            np.testing.assert_array_equal(got["solved"], solved)
            np.testing.assert_array_equal(got["level"], level)
            n_parentless = int((want["level"] == 0).sum())
            rest = [int(new[v]) for v in want["order"][n_parentless:]]
            assert list(got["order"]) == [v for v in range(n2) if level[v] == 0] + rest
            assert (got["rounds"], got["tests"]) == (want["rounds"], want["tests"])
            for v in range(n):
                y = got["sources"][int(new[v])]
                if method == "maxflow":
                    assert y == [int(new[u]) for u in want["sources"][v]]
                else:
                    assert len(y) == len(want["sources"][v])
                    assert set(y) <= set(new.tolist())
            for v in set(range(n2)) - set(new.tolist()):
                assert got["sources"][v] == []
