"""Smoke runs of bench/evo/eval_runtime.py (--quick) and the demo row of fastnips.evo."""

from __future__ import annotations

import json

import pytest

from fastnips import _backend

from ..helpers import load_bench_script

pytestmark = pytest.mark.skipif(bool(_backend.why_unavailable("cpp")),
                                reason=f"the study runs the native loop: {_backend.why_unavailable('cpp')}")


def test_study_and_report_without_fit():
    mod = load_bench_script("evo/eval_runtime.py")
    rows = mod.study((6, 8), 2, quiet=True)
    assert [r["n"] for r in rows] == [6, 6, 8, 8]
    assert all(r["full"] and r["evaluations"] >= 7 for r in rows)
    classic = mod.classic((6,), 2)
    assert {r["h"] for r in classic} == {"id/id", "square/id", "exp2/id", "exp3/exp3"}
    assert all(r["population"] <= r["archive"] <= 7 for r in classic)
    fits = {"all": {"exponent": 3.0, "prefactor": 1.0, "ci_low": 2.5, "ci_high": 3.5, "n_points": 4, "n_min": 6,
                    "n_max": 8}}
    text = mod.report({"runs": rows, "fits": fits, "classic": classic, "date": "d", "machine": "m", "omp": "1",
                       "seeds": 2})
    assert "| 6 | 2 |" in text
    assert "| all | 6..8 | 4 | 3.000 | [2.500, 3.500] |" in text


def test_eval_runtime_quick(tmp_path):
    pytest.importorskip("fastnips.datacuration", reason="the exponent fit uses fastnips.datacuration.fit_loglog")
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib")
    mod = load_bench_script("evo/eval_runtime.py")
    text = mod.main(["--quick", "--quiet", "--out", str(tmp_path)])
    res = json.loads((tmp_path / "runtime.json").read_text())
    assert len(res["runs"]) == 4 * 3
    f = res["fits"]["all"]
    assert f["ci_low"] <= f["exponent"] <= f["ci_high"]
    assert 1.0 < f["exponent"] < 5.0  # n = 6..16: far below any exponent the bound would allow to fail
    assert (tmp_path / "runtime.png").stat().st_size > 10_000
    assert "| fit (evaluations = c n^e)" in text


def test_demo_moead_row():
    from fastnips.evo._demo import demo_moead

    (row,) = demo_moead(0)
    v = row["values"]
    assert v["self_adjusting_covered"] == v["points"] == 21
    assert v["classic_population"] == 2  # the fixed-weight optima of 2^v: the two extremes
    assert 2 <= v["classic_archive"] <= 21
    assert row["result"].startswith("self-adjusting 21/21, classic 2/21")
