"""The CPU side of the GPU check (bench/gpu/run.py): arguments, the plan, result formatting, the dry run without
a device, and the GPU-only benchmark rows run on the CPU at toy sizes (so their API use is right before GPU
time is spent on them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .helpers import REPO, load_bench_script

run = load_bench_script("gpu/run.py")


def test_arguments_and_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("OUT", raising=False)
    a = run.parse_args([])
    assert (a.quick, a.no_build, a.dry_run, a.budget) == (False, False, False, 480)
    assert a.out == REPO / "bench" / "gpu" / "out"
    monkeypatch.setenv("OUT", str(tmp_path))
    a = run.parse_args(["--quick"])
    assert a.out == tmp_path
    assert a.budget == 180
    assert run.parse_args(["--budget", "60"]).budget == 60
    with pytest.raises(SystemExit) as e:
        run.parse_args(["--budget", "0"])
    assert e.value.code == 2


def test_plan(tmp_path):
    dev = {"name": "H200", "capability": "90"}
    full = run.plan(run.parse_args(["--out", str(tmp_path)]), dev, "/usr/bin/nvcc")
    assert [s.name for s in full] == ["env", "build", "tests", "bench", "attention-bf16", "attention-fp16"]
    build = full[1]
    assert build.env["FASTNIPS_CUDA"] == "ON"
    assert build.env["CUDACXX"] == "/usr/bin/nvcc"
    assert "-Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90" in build.cmd
    assert "--no-build-isolation" in build.cmd
    assert run.GPU_K in full[2].cmd
    assert f"--junitxml={tmp_path / 'tests.xml'}" in full[2].cmd
    assert "bench" in full[3].cmd
    assert full[3].env["FASTNIPS_GPU_SIZE"] == "full"
    quick = run.plan(run.parse_args(["--quick", "--no-build", "--out", str(tmp_path)]), dev, None)
    assert [s.name for s in quick] == ["env", "tests", "bench", "attention-bf16"]
    assert "bench/gpu/bench_gpu.py" in quick[2].cmd
    assert quick[2].env["FASTNIPS_GPU_SIZE"] == "quick"
    no_nvcc = run.plan(run.parse_args(["--out", str(tmp_path)]), dev, None)[1]
    assert no_nvcc.env["FASTNIPS_CUDA"] == "OFF"
    assert "CUDACXX" not in no_nvcc.env


def test_junit_and_bench_tables():
    xml = ('<testsuites><testsuite name="pytest" tests="7" failures="1" errors="0" skipped="2">'
           '</testsuite></testsuites>')
    assert run.junit_counts(xml) == {"tests": 7, "failures": 1, "errors": 0, "skipped": 2}
    data = {"benchmarks": [
        {"group": "g1", "name": "test_x[torch]", "param": "torch", "stats": {"median": 0.004},
         "extra_info": {"rel_err": 1e-7}},
        {"group": "g1", "name": "test_x[ours]", "param": "ours", "stats": {"median": 0.001},
         "extra_info": {"peak_bytes": 3 * 2**20}},
    ]}
    table = run.bench_tables(data)
    lines = [ln for ln in table.splitlines() if ln.startswith("| ours") or ln.startswith("| torch")]
    assert lines == ["| ours | 1.000 | 1.00 | 3.0 |  |", "| torch | 4.000 | 4.00 |  | 1.0e-07 |"]


def test_summary_and_markdown(tmp_path):
    (tmp_path / "tests.xml").write_text('<testsuite tests="3" failures="0" errors="1" skipped="0"/>')
    outs = [run.Outcome("build", "pip install", "ok", 12.0, "built"),
            run.Outcome("tests", "pytest", "failed (exit 1)", 30.5, "line1\nE boom", "tests.xml"),
            run.Outcome("attention-bf16", "python", "ok", 40.0, "N H table")]
    meta = {"date": "2026-12-02 16:00 UTC", "device": {"name": "H200"}, "nvcc": None, "missing": []}
    s = run.summary(meta, outs, tmp_path)
    assert "3 tests, 0 failed, 1 errors" in s
    assert "E boom" in s
    assert "built" not in s
    md = run.render_markdown(meta, outs, tmp_path)
    assert "| tests | failed (exit 1) | 30.5 |" in md
    assert "N H table" in md
    assert '"errors": 1' in md


def test_no_device_dry_run_and_refusal(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(run, "device_info", lambda: None)
    assert run.main(["--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "dry run: nothing run" in out
    assert "[tests]" in out
    assert "no CUDA device" in out
    assert run.main(["--out", str(tmp_path)]) == 3
    assert "no CUDA device: nothing run" in capsys.readouterr().out
    assert not (tmp_path / "results.json").exists()


def test_script_runs_from_the_shell_without_a_device():
    if os.environ.get("CUDA_VISIBLE_DEVICES") is None and run.device_info() is not None:
        pytest.skip("a CUDA device is present: the real run is bench/gpu/run.sh")
    r = subprocess.run(["bash", str(REPO / "bench/gpu/run.sh"), "--dry-run", "--quick"], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    assert "Plan (quick, budget 180 s" in r.stdout


def test_gpu_rows_on_cpu_at_toy_sizes(tmp_path):
    """bench/gpu/bench_gpu.py's rows on CPU tensors (Triton interpreted), every row's result check included."""
    pytest.importorskip("torch")
    out = tmp_path / "b.json"
    env = {**os.environ, "FASTNIPS_GPU_DEVICE": "cpu", "FASTNIPS_GPU_SIZE": "tiny", "TRITON_INTERPRET": "1",
           "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "pytest", str(REPO / "bench/gpu/bench_gpu.py"), "-q",
                        "-p", "no:cacheprovider", "--benchmark-min-rounds=1", "--benchmark-max-time=0",
                        "--benchmark-warmup=off", f"--benchmark-json={out}"],
                       cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    names = {b["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert {"test_tikhonov_solve_gpu[torch-cg]", "test_masked_lora_step_gpu[fastnips-masked-lora]",
            "test_reconstruction_memory_gpu[whole-model]"} <= names
    assert run.bench_tables(json.loads(out.read_text())).count("**") >= 8
