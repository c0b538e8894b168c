"""Smoke run of bench/pc/eval_pc.py --quick (digits, 1 seed, 1 epoch, 200 images), so CI exercises it."""

from __future__ import annotations

import pytest

from ..helpers import load_bench_script

pytest.importorskip("sklearn")


def test_quick_report_has_every_method(capsys):
    mod = load_bench_script("pc/eval_pc.py")
    report = mod.main(["--quick"])
    assert report in capsys.readouterr().out
    rows = [line for line in report.splitlines() if line.startswith("| digits |")]
    assert [r.split("|")[2].strip() for r in rows] == list(mod.METHODS)
    assert "cos(Approx PC update, PC update)" in report
    backprop = rows[0].split("|")
    assert backprop[4].strip() == "0.0"  # backprop runs no inference iterations
    assert float(backprop[6]) == pytest.approx(1.0, abs=1e-6)  # and its updates are backprop's
