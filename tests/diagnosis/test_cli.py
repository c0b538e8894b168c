"""``fastnips diagnose LOGDIR``: the text and JSON reports, and one-line errors (through the same click group
class as the ``fastnips`` command)."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from fastnips.cli import FastnipsGroup
from fastnips.diagnosis._cli import diagnose_command

from .test_parsers import SEL


@click.group(cls=FastnipsGroup)
@click.option("--debug", is_flag=True)
def cli(debug):
    """The fastnips group with only this command."""


cli.add_command(diagnose_command)


@pytest.fixture
def logdir(tmp_path):
    (tmp_path / "gpu-01").mkdir()
    (tmp_path / "gpu-01" / "kern.log").write_text(
        "Dec  2 21:00:01 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 95, pid=1, Uncontained: FBHUB. RST: Yes\n"
        "Dec  2 21:00:02 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, An uncorrectable double bit error\n")
    (tmp_path / "gpu-02.sel").write_text(SEL)
    return tmp_path


def test_text_report(logdir):
    res = CliRunner().invoke(cli, ["diagnose", str(logdir), "--year", "2026"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "8 events on 2 node(s)" in out
    assert "== gpu-01: 2 events" in out
    assert "2026-12-02 21:00:01  xid  critical 0000:3b:00.0   xid 95" in out
    assert "hbm (rules" in out
    assert "action [reset_remap]" in out
    assert "== gpu-02: 6 events" in out
    assert "action [check_cooling]" in out


def test_json_report(logdir):
    res = CliRunner().invoke(cli, ["diagnose", str(logdir), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["n_events"] == 8
    assert sorted(rep["nodes"]) == ["gpu-01", "gpu-02"]
    (d,) = rep["nodes"]["gpu-01"]["diagnoses"]
    assert (d["fault"], d["action"], d["component"]) == ("hbm", "reset_remap", "0000:3b:00.0")
    assert [e["code"] for e in rep["nodes"]["gpu-01"]["events"]] == ["95", "48"]


def test_one_line_errors(tmp_path):
    r = CliRunner().invoke(cli, ["diagnose", str(tmp_path / "missing")])
    assert r.exit_code == 2
    assert "does not exist" in r.output
    (tmp_path / "n1.xml").write_text("<nvidia_smi_log><gpu>")
    r = CliRunner().invoke(cli, ["diagnose", str(tmp_path)])
    assert r.exit_code == 1
    assert r.output.strip().startswith("Error:")
    assert "not well-formed XML" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(cli, ["diagnose", str(tmp_path), "--gap", "0"])
    assert r.exit_code == 2
    assert "--gap" in r.output


def test_empty_folder(tmp_path):
    r = CliRunner().invoke(cli, ["diagnose", str(tmp_path)])
    assert r.exit_code == 0
    assert "0 events on 0 node(s)" in r.output
