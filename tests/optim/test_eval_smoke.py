"""Smoke run of bench/minimax/eval_kappa.py --quick (2 kappas, 2 seeds, a 4-node ring, one torchrun launch of 2
processes), so CI exercises the evaluation end to end."""

from __future__ import annotations

import json
import math

import pytest

from ..helpers import load_bench_script

pytest.importorskip("torch")


def test_quick_evaluation(tmp_path):
    mod = load_bench_script("minimax/eval_kappa.py")
    res = mod.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "kappa_quick.png").stat().st_size > 1000
    assert json.loads((tmp_path / "kappa_quick.json").read_text())["config"]["seeds"] == 2
    assert set(res["scaling"]) == {"dsgda", "gda", "tt-gda", "gt-gda"}
    for method, r in res["scaling"].items():
        assert [row["kappa"] for row in r["rows"]] == [4, 16]
        converged = [row["kappa"] for row in r["rows"] if all(math.isfinite(i) for i in row["iters"])]
        assert (r["fit"] is not None) == (len(converged) >= 2), method
    # equal steps without smoothing or tracking do not reach the tolerance at kappa 16 on the heterogeneous ring
    assert not any(math.isfinite(i) for i in res["scaling"]["gda"]["rows"][1]["iters"])
    (d,) = res["distributed"]
    assert d["processes"] == 2
    assert d["equal"]
    assert d["floats_sent_per_iter"] > 0
    assert {t["topology"] for t in res["topologies"]} == {"ring", "torus", "erdos-renyi", "complete"}
