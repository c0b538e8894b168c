"""Smoke run of bench/functional/eval_sofr.py --quick (one seed, the sparse setting, the linear model, short
training), so CI exercises the evaluation script."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import load_bench_script

pytest.importorskip("torch", reason="the evaluation trains torch networks")


def test_grid_features_and_quick_report(capsys):
    mod = load_bench_script("functional/eval_sofr.py")
    from fastnips.functional import pack_curves

    t = np.array([0.1, 0.5, 0.9])
    G = mod.grid_features(pack_curves([(t, 2 * t)]))
    grid = (np.arange(mod.GRID) + 0.5) / mod.GRID
    np.testing.assert_allclose(G[0], 2 * np.clip(grid, 0.1, 0.9))  # linear inside, constant beyond the ends
    report = mod.main(["--quick"])
    assert report in capsys.readouterr().out
    (row,) = [line for line in report.splitlines() if line.startswith("| linear | sparse irregular |")]
    cells = [c.strip() for c in row.split("|")[3:-1]]
    assert len(cells) == len(mod.METHODS)
    for c in cells:
        if not c.startswith("n/a"):
            assert 0 < float(c.split(" ± ")[0]) < 10


def test_demo_rows():
    from fastnips.functional._demo import demo_functional

    rows = demo_functional(0, epochs=5)
    assert [r["task"] for r in rows] == ["functional coefficients", "functional regression"]
    for r in rows:
        assert set(r) >= {"task", "backend", "result", "detail", "values"}
    assert rows[0]["values"]["max_abs_error"] < 1e-10
    assert rows[0]["result"].startswith("agrees")
