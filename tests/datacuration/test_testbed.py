"""The scikit-learn recipe testbed: curation does what the recipe says, runs are deterministic, the quick bench
runs end to end (table, JSON, PNG), bad recipes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import load_bench_script

pytest.importorskip("sklearn", reason="the testbed trains scikit-learn models")
from fastnips.datacuration.testbed import curate, evaluate_recipe, make_testbed, run_searches


@pytest.fixture(scope="module")
def tb():
    return make_testbed("breast_cancer", seed=0)


def test_defects_injected(tb):
    assert tb.noisy.mean() > 0.3  # 35% label noise, noisy examples copied more often
    sizes = np.bincount(tb.group)
    assert sizes.max() == 7  # one original + 6 copies
    assert tb.X.shape[0] == tb.y.size == tb.score.size
    # the out-of-fold score separates corrupted from clean labels
    assert tb.score[tb.noisy].mean() < tb.score[~tb.noisy].mean() - 0.2


def test_curation_follows_the_recipe(tb):
    kept, w = curate(tb, [0.0, 0.0, 0.0])
    assert kept.size == tb.y.size
    np.testing.assert_allclose(w, 1.0)
    kept, _ = curate(tb, [0.0, 1.0, 0.0])  # full dedup: one per group
    assert kept.size == np.unique(tb.group).size
    assert np.unique(tb.group[kept]).size == kept.size
    kept, _ = curate(tb, [0.5, 0.0, 0.0])
    assert (tb.score[kept] >= 0.5).all()
    assert kept.size == (tb.score >= 0.5).sum()
    kept, w = curate(tb, [0.0, 1.0, 1.0])  # full class mix: equal total weight per class
    per_class = np.bincount(tb.y[kept], weights=w)
    np.testing.assert_allclose(per_class, per_class.mean())


def test_filtering_helps_and_runs_are_deterministic(tb):
    raw, n_raw = evaluate_recipe(tb, [0.0, 0.0, 0.0])
    filt, n_filt = evaluate_recipe(tb, [0.6, 1.0, 0.5])
    assert n_filt < n_raw
    assert filt > raw + 0.05
    assert evaluate_recipe(tb, [0.6, 1.0, 0.5]) == (filt, n_filt)
    s = run_searches(tb, 2, 5, seed=3)
    assert s["best"].shape == (2, 5)
    assert (np.diff(s["best"], axis=1) >= 0).all()
    np.testing.assert_array_equal(s["best"][:, -1], s["quality"].max(axis=1))


@pytest.mark.parametrize(("recipe", "match"), [([0.95, 0, 0], "filter_threshold"), ([0, -0.1, 0], "dedup_strength"),
                                               ([0, 0, 2], "class_mix"), ([0, 0], "3 finite numbers"),
                                               ([np.nan, 0, 0], "3 finite numbers")])
def test_bad_recipe(tb, recipe, match):
    with pytest.raises(ValueError, match=match):
        curate(tb, recipe)


def test_bad_testbed_options():
    with pytest.raises(ValueError, match="dataset must be one of"):
        make_testbed("mnist")
    with pytest.raises(ValueError, match="label_noise"):
        make_testbed("wine", label_noise=1.5)
    with pytest.raises(ValueError, match="copies"):
        make_testbed("wine", copies=0)


def test_quick_bench(tmp_path, capsys):
    mod = load_bench_script("datacuration/eval_recipes.py")
    report = mod.main(["--quick", "--out", str(tmp_path)])
    assert report in capsys.readouterr().out
    (row,) = [line for line in report.splitlines() if line.startswith("| breast_cancer |")]
    assert len(row.split("|")) == 14
    assert (tmp_path / "datascale.png").stat().st_size > 10_000
    assert (tmp_path / "results.json").exists()
