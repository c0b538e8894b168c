"""Smoke run of bench/graph/eval_tikhonov.py (1 seed, a handful of graphs, 2 epochs), so CI exercises it."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import load_bench_script

pytest.importorskip("torch")
pytest.importorskip("sklearn")


def _load():
    return load_bench_script("graph/eval_tikhonov.py")


def test_rank_auroc_ties_averaged():
    mod = _load()
    assert mod.rank_auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert mod.rank_auroc([1.0, 1.0, 1.0], [0, 1, 1]) == pytest.approx(0.5)
    assert mod.rank_auroc([3, 1, 2, 2], [1, 0, 1, 0]) == pytest.approx(0.875)
    assert np.isnan(mod.rank_auroc([1.0, 2.0], [1, 1]))


def test_smoke_report_has_all_rows(capsys):
    mod = _load()
    report = mod.main(["--smoke", "--quiet", "--threads", "2"])
    assert report in capsys.readouterr().out
    for section in ("(a) BA-motifs", "(b) digits", "(c) contextual SBM", "Command:", "torch "):
        assert section in report
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    for m in mod.MODELS:
        assert sum(line.startswith(f"| {m} |") for line in rows) == 2  # tables (a) and (b)
    assert any(line.startswith("| TikhonovGNN q |") for line in rows)
    assert any(line.startswith("| TikhonovGNN-noqn q |") for line in rows)
    for h in mod.HOMOPHILIES:
        (acc_row,) = [line for line in rows if line.startswith(f"| {h} | 0") or line.startswith(f"| {h} | 1")]
        assert acc_row.count("|") == len(mod.NODE_MODELS) + 2
        p_rows = [line for line in rows if line.startswith(f"| {h} | Tikhonov")]
        assert [r.split("|")[2].strip() for r in p_rows] == list(mod.TIKHONOV)
        for row in (acc_row, *p_rows):
            assert "n/a" not in row
