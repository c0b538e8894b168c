"""``fastnips demo``: the full run (every row's agreement and quality bounds), --only, --list, --json, the
100-column table, failures and missing optional packages."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import fastnips
from fastnips import _demo, _optional
from fastnips.cli import main

torch = _optional.torch_or_none()


def _demo_json(*args: str) -> tuple[dict, object]:
    res = CliRunner().invoke(main, ["demo", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res  # stdout holds only the JSON; the progress lines go to stderr


def _rows(doc: dict, task: str) -> list[dict]:
    return [r for r in doc["rows"] if r["task"] == task]


def _assert_fits(rows: list[dict]) -> None:
    for r in rows:
        lines = _demo.format_row(r)
        assert all(len(line) <= _demo.WIDTH for line in lines), lines
        assert r["status"] != "ok" or r["measure"], r  # every result says its unit / direction of better


def test_demo_runs_and_agrees():
    """The whole demo (the README's command): every row present, agreeing and within its quality bounds."""
    doc, res = _demo_json("--n", "3000")
    assert doc["ok"]
    assert doc["seed"] == 0
    assert [c for c in doc["capability_seconds"]] == list(_demo.NAMES)
    for name in _demo.NAMES:
        assert f"running {name}: " in res.stderr
    assert not [r for r in doc["rows"] if r["status"] in ("differs", "failed")]
    _assert_fits(doc["rows"])

    spmm = {r["backend"]: r for r in _rows(doc, "spmm")}
    assert spmm["reference"]["result"].startswith("agrees")
    assert spmm["reference"]["values"]["max_rel_error"] < 1e-10
    assert "cpp" not in fastnips.available_backends() or spmm["cpp"]["result"].startswith("agrees")

    htc = _rows(doc, "htc")
    assert any("bow: edges [] of [(0, 1)]" in r["detail"] for r in htc)
    chain = next(r for r in htc if r["detail"].startswith("instrument chain"))
    assert chain["result"] in ("agrees", "ok")
    assert chain["values"]["identified_nodes"] == 150

    if torch is None:  # the torch rows say what to install instead
        torch_caps = {c.name for c in _demo.CAPABILITIES if "torch" in c.needs}
        assert all(r["status"] == "needs torch" for r in doc["rows"] if r["capability"] in torch_caps)
        return
    (graph,) = _rows(doc, "graph")
    assert graph["values"]["accuracy"] >= 0.9  # BA-motifs, house vs 5-cycle: chance 0.5; 1.000 at seed 0
    assert 0.0 <= graph["values"]["auroc"] <= 1.0
    again, _ = _demo_json("--only", "graph")  # deterministic: epochs, not seconds (same result alone or in the run)
    assert again["rows"][0]["result"] == graph["result"]

    (prune,) = _rows(doc, "prune")
    v = prune["values"]
    assert v["ppl_dense"] < v["ppl_reconstructed"] < v["ppl_pruned"]  # reconstruction recovers part of the loss
    assert v["sparsity"] == pytest.approx(0.5, abs=1e-3)

    (vision,) = _rows(doc, "vision")
    assert vision["values"]["accuracy"] > 0.85, vision  # 10 classes; 0.950 at seed 0
    assert _rows(doc, "vision bias params")[0]["result"].startswith("52 vs 169 (3.25x)")
    t = _rows(doc, "vision transfer")[0]["values"]
    assert t["refine"] < 1e-12 < t["bicubic"]

    diff = {r["task"]: r["values"] for r in doc["rows"] if r["capability"] == "diffusion"}
    assert set(diff) == {"diffusion fds", "diffusion heun", "diffusion fds euler", "diffusion euler"}
    assert diff["diffusion fds euler"]["sw"] < 3.0  # the 25-mode grid spans 8; Heun collapses at this budget
    assert all(d["sw"] > d["sw_floor"] > 0 for d in diff.values())

    metric = _rows(doc, "scenegraph metric")[0]["values"]
    assert metric["max_abs_err"] < 1e-12  # factorised == explicit joint
    assert metric["speedup"] > 1
    loss = _rows(doc, "scenegraph loss")[0]["values"]
    assert min(v["recall@5"] for v in loss.values()) > 0.8  # 512 triplets per edge: chance 5/512; 0.98 at seed 0

    c = _rows(doc, "concepts")[0]["values"]
    assert c["auroc_grace"] >= 0.95  # planted supports; the lasso reaches about 1.0
    assert c["auroc_grace"] >= 0.9 * c["auroc_lasso"]


def test_demo_only_text_streams_a_100_column_table():
    res = CliRunner().invoke(main, ["demo", "--only", "htc,spmm", "--n", "2000"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(line) <= _demo.WIDTH for line in lines), max(lines, key=len)
    assert "↑ higher is better, ↓ lower is better" in lines[0]
    assert lines[1].split() == ["task", "backend", "measure", "result"]
    tasks = [line.split()[0] for line in lines[2:-1] if not line.startswith(" ")]
    assert set(tasks) == {"spmm", "htc"}
    assert tasks.index("htc") > tasks.index("spmm")
    assert lines[-1].startswith(f"{len(tasks)} rows in ")
    assert "running spmm: " in res.stderr
    assert "running htc: " in res.stderr
    quiet = CliRunner().invoke(main, ["demo", "--only", "spmm", "--n", "1000", "--quiet"])
    assert quiet.exit_code == 0
    assert quiet.stderr == ""


def test_demo_json_rows_carry_values():
    doc, _ = _demo_json("--only", "htc", "--seed", "3")
    assert doc["seed"] == 3
    assert list(doc["capability_seconds"]) == ["htc"]
    for r in doc["rows"]:
        assert set(r) == {"capability", "task", "backend", "measure", "result", "status", "detail", "values"}
        assert r["status"] == "ok"
        assert r["values"]


def test_demo_list():
    res = CliRunner().invoke(main, ["demo", "--list"])
    assert res.exit_code == 0, res.output
    names = [line.split()[0] for line in res.stdout.splitlines() if not line.startswith(" ")]
    assert names == list(_demo.NAMES)
    assert all(len(line) <= _demo.WIDTH for line in res.stdout.splitlines())
    res = CliRunner().invoke(main, ["demo", "--list", "--json"])
    listed = json.loads(res.stdout)
    assert [c["name"] for c in listed] == list(_demo.NAMES)
    assert all(c["about"] for c in listed)


def test_demo_only_refuses_unknown_names():
    res = CliRunner().invoke(main, ["demo", "--only", "htc,nope"])
    assert res.exit_code == 2
    assert "unknown capability 'nope'" in res.stderr
    assert ", ".join(_demo.NAMES[:3]) in res.stderr


def test_demo_failing_row_is_reported_and_exits_1(monkeypatch):
    from fastnips import _demo_rows

    def boom(seed):
        raise RuntimeError("the graph generator broke")

    monkeypatch.setattr(_demo_rows, "demo_htc", boom)
    res = CliRunner().invoke(main, ["demo", "--only", "htc"])
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert "htc" in res.stdout
    assert "failed" in res.stdout
    assert "the graph generator broke" in res.stdout
    assert "1 row failed or differ" in res.stdout
    res = CliRunner().invoke(main, ["--debug", "demo", "--only", "htc"])
    assert isinstance(res.exception, RuntimeError)


def test_demo_names_a_missing_optional_package(monkeypatch):
    real = _optional._try_import
    monkeypatch.setattr(_optional, "_try_import", lambda name: None if name == "sklearn" else real(name))
    doc, _ = _demo_json("--only", "vision")
    (row,) = doc["rows"]
    if torch is None:
        assert row["status"] == "needs torch"
    else:
        assert row["status"] == "needs scikit-learn"
        assert row["result"].startswith("needs scikit-learn: pip install scikit-learn")
    _assert_fits(doc["rows"])


def test_format_row_wraps_long_results():
    row = {"task": "x", "backend": "-", "measure": "", "result": "needs torch: " + "word " * 40, "detail": "d " * 80,
           "status": "needs torch"}
    lines = _demo.format_row(row)
    assert len(lines) > 3
    assert all(len(line) <= _demo.WIDTH for line in lines)
