"""Smoke run of bench/teacher/eval_teacher.py (--quick: small environments, 2 budgets, 2 seeds), so CI runs it."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import load_bench_script


def test_eval_teacher_quick_report(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    mod = load_bench_script("teacher/eval_teacher.py")
    png = tmp_path / "teacher.png"
    report = mod.main(["--quick", "--quiet", "--png", str(png)])
    assert report in capsys.readouterr().out
    rows = [line for line in report.splitlines() if line.startswith("| ") and "strategy" not in line]
    assert len(rows) == len(mod.environments(True)) * len(mod.STRATEGIES)
    for line in rows:  # every cell is "mean [lo, hi]" with 0 <= lo <= mean <= hi <= 1
        for cell in line.split("|")[3:-1]:
            m, lo, hi = (float(v) for v in cell.replace("[", " ").replace("]", " ").replace(",", " ").split())
            assert 0 <= lo <= m <= hi <= 1
    assert "Claim (short unfiltered continuations" in report
    assert png.stat().st_size > 1000


def test_eval_teacher_interval_helper():
    mod = load_bench_script("teacher/eval_teacher.py")
    m, _lo, hi = mod.ci(np.array([0.2, 0.4, 0.6]))
    # t_{0.975, 2} = 4.303, sd = 0.2, n = 3
    assert m == pytest.approx(0.4)
    assert hi - m == pytest.approx(4.3027 * 0.2 / 3**0.5, rel=1e-4)
    assert mod.ci(np.array([0.5])) == (0.5, 0.5, 0.5)
