from __future__ import annotations

import json

from click.testing import CliRunner

from fastnips.cli import main


def test_info_json():
    res = CliRunner().invoke(main, ["info", "--json"])
    assert res.exit_code == 0, res.output
    facts = json.loads(res.output)
    assert "reference" in facts["backends"]


def test_info_text_lists_every_backend():
    res = CliRunner().invoke(main, ["info"])
    assert res.exit_code == 0, res.output
    for b in ("reference", "cpp", "triton", "cuda", "cupy"):
        assert f"  {b}" in res.output


def test_demo_runs_and_agrees():
    res = CliRunner().invoke(main, ["demo", "--n", "3000"])
    assert res.exit_code == 0, res.output
    assert "spmm  reference  agrees" in res.output
    assert "DIFFERS" not in res.output
