"""The ``fastnips demo`` rows of designbench: format, determinism, and the numbers they must show."""

from __future__ import annotations

from fastnips.designbench._demo import demo_designbench


def test_rows_are_well_formed_and_deterministic():
    rows = demo_designbench(0)
    assert [r["task"] for r in rows] == ["designbench mAP", "designbench font-Jaccard", "designbench layer order"]
    for r in rows:
        assert set(r) == {"task", "backend", "measure", "result", "detail", "values"}
        assert isinstance(r["result"], str)
        assert isinstance(r["values"], dict)
    assert "DIFFERS" not in rows[0]["result"]
    assert rows[0]["values"].get("max_abs_diff", 0.0) < 1e-9
    again = demo_designbench(0)
    for a, b in zip(rows[1:], again[1:]):  # timing-free rows repeat exactly
        assert a["values"] == b["values"]
    assert rows[1]["values"]["auc_roc"] > 0.6
    assert rows[2]["values"]["tau_area_rule"] > rows[2]["values"]["tau_random"]
