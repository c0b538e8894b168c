"""bench/designbench/eval_baselines.py --quick runs and writes its tables (every task, every baseline, the
synthetic label), and a few of its floors sit where they must."""

from __future__ import annotations

import json

from ..helpers import load_bench_script


def test_quick_evaluation_writes_its_tables(tmp_path):
    ev = load_bench_script("designbench/eval_baselines.py")
    assert ev.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert len(res) == 1
    r = res[0]
    assert {"component_detection", "layer_order", "template_matching", "template_clustering", "style_completion",
            "color_transfer", "partial_completion_multi"} <= set(r)
    assert r["template_matching"]["font-Jaccard"]["auc_roc"] > r["template_matching"]["random"]["auc_roc"]
    assert r["layer_order"]["area rule"]["kendall_tau"] > r["layer_order"]["random"]["kendall_tau"]
    assert r["color_transfer"]["nearest palette colour"]["color_palette_adherence"] == 1.0  # by construction
    md = (tmp_path / "results.md").read_text()
    assert md.startswith("SYNTHETIC")
    assert "| font-Jaccard |" in md
    assert "#### layer_order (synthetic)" in md
