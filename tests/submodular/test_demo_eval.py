"""The demo rows of fastnips.submodular and a smoke run of bench/submodular/eval_summarise.py --quick."""

from __future__ import annotations

import pytest

from fastnips.submodular._demo import demo_submodular

from ..helpers import load_bench_script


def test_demo_rows():
    rows = demo_submodular(0)
    assert [r["task"] for r in rows] == ["submodular certify", "submodular greedy", "submodular lazy"]
    cert, gr, lazy = (r["values"] for r in rows)
    assert cert["network_violations"] == 0
    assert cert["sqrt_violations"] > 0
    assert min(gr["ratios"]) >= 1 - 1 / 2.718281828459045
    assert lazy["same"]
    assert lazy["evaluations_lazy"] < lazy["evaluations_naive"]
    assert all("DIFFERS" not in r["result"] for r in rows)


def test_eval_summarise_quick(capsys):
    pytest.importorskip("torch", reason="the learned rows need torch")
    pytest.importorskip("sklearn", reason="the digits come from scikit-learn")
    mod = load_bench_script("submodular/eval_summarise.py")
    text = mod.main(["--quick"])
    assert text in capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| ") and "summary" not in line]
    assert [r.split("|")[1].strip() for r in rows] == list(mod.ROWS)
