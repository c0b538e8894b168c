"""Regression tests for the causal items of the robustness issue: MixedGraph memory, hostile graph files,
the ``fastnips htc`` command (now in fastnips.causal._cli) and its new criteria flags."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from fastnips.causal import MixedGraph
from fastnips.cli import main


def _bytes_per_node(n, d=(), b=()):
    tracemalloc.start()
    try:
        g = MixedGraph(n, d, b)
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert g.n == n
    return retained / n, peak / n


def test_mixed_graph_memory_is_arrays():
    """Was 24 B/node retained and ~218 B/node at peak for an edgeless graph, ~480 B/node retained with two
    directed and half a bidirected edge per node (Python lists and tuples per node)."""
    retained, peak = _bytes_per_node(10**5)
    assert retained <= 16
    assert peak <= 40
    rng = np.random.default_rng(0)
    n = 20_000
    d = np.unique(rng.integers(0, n, size=(2 * n, 2)), axis=0)
    d = d[d[:, 0] != d[:, 1]]
    b = np.unique(np.sort(rng.integers(0, n, size=(n // 2, 2)), axis=1), axis=0)
    b = b[b[:, 0] != b[:, 1]]
    retained, _ = _bytes_per_node(n, d, b)
    per_edge = (retained * n - 12 * n) / (len(d) + len(b))
    assert per_edge <= 20, per_edge


def test_large_edgeless_graph_and_id_limit():
    g = MixedGraph(10**6)
    assert g.parents(10**6 - 1) == ()
    assert g.to_arrays()[0].shape == (0, 2)
    with pytest.raises(ValueError, match="at most 2\\*\\*31 - 1"):
        MixedGraph(1 << 31)
    with pytest.raises(ValueError, match="out of range"):
        MixedGraph(3, np.array([[0, 1 << 40]], dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        MixedGraph(3, np.array([[0, 1 << 63]], dtype=np.uint64))


def test_array_and_list_inputs_agree():
    d = [(2, 0), (0, 1), (1, 2)]
    b = [(2, 1), (0, 2)]
    g = MixedGraph(3, np.array(d), np.array(b))
    assert g == MixedGraph(3, d, b)
    assert g.directed == tuple(d)
    assert g.bidirected == ((1, 2), (0, 2))
    assert g.parents(2) == (1,)
    assert g.siblings(2) == (0, 1)
    with pytest.raises(ValueError, match=r"directed edge 0 -> 1 is given twice \(directed\[1\] and directed\[3\]\)"):
        MixedGraph(3, np.array([*d, (0, 1)]))


def test_deeply_nested_json_is_a_clear_error(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply") as exc:
        MixedGraph.from_file(p)
    assert str(p) in str(exc.value)
    q = tmp_path / "deep_value.json"
    q.write_text('{"n": 2, "directed": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested too deeply"):
        MixedGraph.from_file(q)


def test_deeply_nested_json_cli_is_one_line(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    res = subprocess.run([sys.executable, "-m", "fastnips", "htc", str(p)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "nested too deeply" in lines[0]
    assert str(p) in lines[0]


def test_invalid_utf8_names_the_path(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"n 3\n0 -> 1\n1 -> \xff2\n")
    with pytest.raises(ValueError, match="cannot read it as UTF-8") as exc:
        MixedGraph.from_file(p)
    assert f"{p}:3:" in str(exc.value)
    assert "UTF-8" in str(exc.value)
    res = CliRunner().invoke(main, ["htc", str(p)])
    assert res.exit_code == 1
    assert str(p) in res.output or str(p) in res.stderr


def test_cli_new_criteria(tmp_path):
    """SEMID's README example 1: HTC finds 0 -> 1 only; Tian edgewise, TSID and ancestral find all 7."""
    p = tmp_path / "readme1.json"
    p.write_text(json.dumps({"n": 5, "directed": [[0, 1], [0, 2], [1, 2], [1, 3], [1, 4], [2, 3], [3, 4]],
                             "bidirected": [[0, 3], [1, 2], [1, 4]]}))
    res = CliRunner().invoke(main, ["htc", str(p), "--edgewise", "--tsid", "--global", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["htc"]["identified_edges"] == [[0, 1]]
    assert rep["edgewise"]["identified_edges"] == [[0, 1]]
    assert rep["tsid"]["identifiable"] is True  # SEMID's README: edgewiseTSID(tianDecompose = F) finds all 7
    assert rep["globally_identifiable"] is False
    res = CliRunner().invoke(main, ["htc", str(p), "--tian", "--edgewise", "--tsid", "--ancestral"])
    assert res.exit_code == 0, res.output
    for name in ("htc_tian", "edgewise", "tsid", "ancestral"):
        assert f"{name}: generically identifiable" in res.output
