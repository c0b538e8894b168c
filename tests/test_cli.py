from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fastnips.cli import main, one_line

ROOT = Path(__file__).resolve().parents[1]


def _one_clear_line(res, code: int = 1) -> str:
    """The run failed with ``code`` and said why in one 'Error:' line on stderr, without a traceback."""
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


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


def test_htc_text_file(tmp_path):
    p = tmp_path / "iv.txt"
    p.write_text("n 3\n# instrumental variable\n0 -> 1\n1 -> 2\n1 <-> 2\n")
    res = CliRunner().invoke(main, ["htc", str(p), "--edgewise", "--certificate"])
    assert res.exit_code == 0, res.output
    assert "htc: generically identifiable" in res.output
    assert "edgewise: generically identifiable" in res.output
    assert "no certificate of non-identifiability" in res.output


def test_htc_json_report_for_the_bow(tmp_path):
    p = tmp_path / "bow.json"
    p.write_text(json.dumps({"n": 2, "directed": [[0, 1]], "bidirected": [[0, 1]]}))
    res = CliRunner().invoke(main, ["htc", str(p), "--tian", "--json", "--certificate"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["htc_tian"]["identifiable"] is False
    assert report["htc_tian"]["identified_nodes"] == [0]
    assert report["htc_tian"]["unidentified_edges"] == [[0, 1]]
    assert report["certified_nonidentifiable"] is True


def test_htc_bad_file_names_the_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("n 3\n0 -> 1\n1 -> x\n")
    line = _one_clear_line(CliRunner().invoke(main, ["htc", str(p)]))
    assert ":3:" in line


@pytest.mark.parametrize(("content", "suffix", "expect"), [
    ('{"n": 2, ', ".json", "invalid JSON"),
    ('{"n": 2, "directed": [[0, 5]]}', ".json", "out of range"),
    (b"\xff\xfe\x00 -> 1", ".txt", "cannot read"),
])
def test_htc_malformed_files_fail_in_one_line(tmp_path, content, suffix, expect):
    p = tmp_path / f"g{suffix}"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    line = _one_clear_line(CliRunner().invoke(main, ["htc", str(p)]))
    assert expect in line
    assert str(p) in line


def test_htc_bad_arguments_are_usage_errors(tmp_path):
    p = tmp_path / "iv.txt"
    p.write_text("n 2\n0 -> 1\n")
    line = _one_clear_line(CliRunner().invoke(main, ["htc", str(p), "--backend", "triton"]), code=2)
    assert "'triton' is not one of" in line
    line = _one_clear_line(CliRunner().invoke(main, ["htc", str(tmp_path / "missing.txt")]), code=2)
    assert "does not exist" in line
    _one_clear_line(CliRunner().invoke(main, ["htc", str(tmp_path)]), code=2)  # a folder


def test_unavailable_backend_is_one_line(tmp_path, monkeypatch):
    from fastnips import _backend

    p = tmp_path / "iv.txt"
    p.write_text("n 2\n0 -> 1\n")
    monkeypatch.setenv("FASTNIPS_DISABLE_CPP", "1")
    _backend.refresh()
    try:
        line = _one_clear_line(CliRunner().invoke(main, ["htc", str(p), "--backend", "cpp"]))
    finally:
        monkeypatch.delenv("FASTNIPS_DISABLE_CPP")
        _backend.refresh()
    assert "backend 'cpp' is not available here" in line
    assert "FASTNIPS_DISABLE_CPP" in line


def test_unexpected_failure_is_one_line_and_debug_shows_it(tmp_path, monkeypatch):
    import fastnips.causal

    def boom(*a, **k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(fastnips.causal, "htc_identify", boom)
    p = tmp_path / "iv.txt"
    p.write_text("n 2\n0 -> 1\n")
    line = _one_clear_line(CliRunner().invoke(main, ["htc", str(p)]))
    assert "ZeroDivisionError: a bug" in line
    assert "--debug" in line
    res = CliRunner().invoke(main, ["--debug", "htc", str(p)])
    assert isinstance(res.exception, ZeroDivisionError)  # re-raised: the traceback is shown


def test_prune_bad_options_fail_before_any_work():
    line = _one_clear_line(CliRunner().invoke(main, ["prune", "--sparsity", "1.5"]), code=2)
    assert "--sparsity" in line
    _one_clear_line(CliRunner().invoke(main, ["prune", "--calib-n", "0"]), code=2)


def test_one_line_messages():
    assert one_line(ValueError("first\nsecond")) == "first [...]"
    assert one_line(FileNotFoundError(2, "No such file", "x.txt")) == "[Errno 2] No such file: 'x.txt'"
    assert one_line(KeyError("k")) == "KeyError: 'k'"
    assert one_line(AssertionError()).startswith("AssertionError: AssertionError")


def test_python_dash_m_fastnips():
    res = subprocess.run([sys.executable, "-m", "fastnips", "--version"], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert "fastnips, version" in res.stdout


def test_bench_report_without_arguments_says_what_it_needs(tmp_path):
    script = str(ROOT / "bench" / "report.py")
    res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 2
    assert "usage:" in res.stderr
    assert "out.json" in res.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "benchmarks"}')
    res = subprocess.run([sys.executable, script, str(bad)], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 1
    assert "not a readable pytest-benchmark JSON file" in res.stderr
    assert "Traceback" not in res.stderr
