"""Smoke run of bench/vae/eval_collapse.py --quick (one data set, one seed, three ratios), so CI exercises it."""

from __future__ import annotations

import numpy as np

from ..helpers import load_bench_script


def test_onset_helper_and_quick_report(capsys):
    mod = load_bench_script("vae/eval_collapse.py")
    assert mod.onset([[0.3, 0.0, 0.0]], [0.9, 1.0, 1.1], 1e-4) == 1.0
    assert np.isnan(mod.onset([[0.3, 0.0, 0.2]], [0.9, 1.0, 1.1], 1e-4))  # alive again above: no onset
    assert np.isnan(mod.onset([[0.3, 0.2]], [0.9, 1.1], 1e-4))
    report = mod.main(["--quick"])
    assert report in capsys.readouterr().out
    (row,) = [line for line in report.splitlines() if line.startswith("| linear mixture |")]
    assert len(row.split("|")) == 8
