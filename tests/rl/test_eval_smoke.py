"""Smoke runs of bench/rl/eval_irl.py and eval_pbrl.py (--quick: 1 seed, tiny instances), so CI exercises them."""

from __future__ import annotations

import pytest

from ..helpers import load_bench_script


def test_eval_irl_quick_report(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    mod = load_bench_script("rl/eval_irl.py")
    png = tmp_path / "irl.png"
    report = mod.main(["--quick", "--quiet", "--png", str(png)])
    assert report in capsys.readouterr().out
    rows = [line for line in report.splitlines() if line.startswith("| ") and "method" not in line]
    assert len(rows) == len(mod.PROBLEMS) * len(mod.METHODS)
    assert "Claim (little overhead per iteration, fewer iterations)" in report
    assert png.stat().st_size > 1000


def test_eval_pbrl_quick_report(capsys):
    mod = load_bench_script("rl/eval_pbrl.py")
    report = mod.main(["--quick", "--quiet"])
    assert report in capsys.readouterr().out
    rows = [line for line in report.splitlines() if line.startswith("| ") and "method" not in line]
    assert [r.split("|")[1].strip() for r in rows] == list(mod.METHODS)
    oracle = rows[-1].split("|")
    # the true model never violates and never mispredicts
    assert oracle[4].strip() == "0.00"
    assert oracle[6].strip() == "1.000"
    assert "Stationarity:" in report
