"""The `fastnips minimax` command and `python -m fastnips.optim.launch`: in-process and torchrun modes agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
from click.testing import CliRunner

from fastnips.cli import main
from fastnips.optim.launch import build_topology, run


def test_in_process_command_prints_and_writes_json(tmp_path):
    out = tmp_path / "s.json"
    r = CliRunner().invoke(main, ["minimax", "--steps", "300", "--kappa", "10", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "method=dsgda" in r.output
    assert "stationarity=" in r.output
    summary = json.loads(out.read_text())
    assert summary["steps"] == 300
    assert summary["processes"] == 1
    assert summary == {**run("quadratic", nodes=4, steps=300, kappa=10.0), "seconds": summary["seconds"]}


def test_torchrun_mode_equals_in_process(tmp_path):
    out = tmp_path / "d.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "fastnips", "minimax", "--nproc", "3", "--steps", "40",
                        "--problem", "auc", "--method", "gt-gda", "--lr", "0.01", "--split", "label-skewed",
                        "--json", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    d = json.loads(out.read_text())
    s = run("auc", nodes=3, steps=40, method="gt-gda", lr=0.01, split="label-skewed")
    assert d["processes"] == 3
    assert d["steps"] == s["steps"] == 40
    assert d["x"] == pytest.approx(s["x"], rel=0, abs=1e-15)  # node averages: all-reduce vs local mean
    assert d["stationarity"] == pytest.approx(s["stationarity"], rel=1e-12)


def test_bad_arguments_are_one_line_errors():
    r = CliRunner().invoke(main, ["minimax", "--lr", "0"])
    assert r.exit_code == 2
    assert "--lr" in r.output
    r = CliRunner().invoke(main, ["minimax", "--topology", "star"])
    assert r.exit_code == 2
    assert "topology" in r.output
    with pytest.raises(ValueError, match="topology"):
        build_topology("star", 4)
    assert build_topology("torus", 6).size == 6
    assert build_topology("torus", 6).name.startswith("torus")
