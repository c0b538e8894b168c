"""bench/concepts/eval_grace.py --quick runs and writes its table (planted data only)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn", reason="the linear probe of the evaluation uses scikit-learn")

from ..helpers import load_bench_script


def test_quick_evaluation(tmp_path):
    ev = load_bench_script("concepts/eval_grace.py")
    assert ev.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    methods = res["planted"]
    assert len(methods) == 4
    for scores in methods.values():
        assert all(0.5 <= a <= 1 for a in scores["auroc"])
        assert all(0 <= c <= 1 for c in scores["recon_cos"])
    assert "| per-instance lasso" in (tmp_path / "results.md").read_text()
    assert "real" not in res  # --quick skips the real embeddings
