"""One prepared GPU check: build fastnips with CUDA for the device, run every GPU test and GPU benchmark row,
write ``results.json`` and ``results.md`` to an output folder and print a one-screen summary.

    bench/gpu/run.sh [--quick] [--out DIR] [--no-build] [--dry-run] [--budget SECONDS]

Made for a GPU machine without network whose image already has Python, torch, triton, cupy, pybind11,
scikit-build-core, pytest and pytest-benchmark (the build runs without isolation against them). What the
image may lack comes as wheels in ``bench/gpu/wheels/`` (``bench/gpu/prepare.sh`` fills it on a machine with
network; the folder is not committed): the Eigen headers (``cmeel-eigen`` and ``cmeel``) and ``click``.

Steps, each a subprocess with its own time limit inside the overall budget (480 s, ``--quick`` 180 s):

1. ``env``: device, driver, torch / triton / cupy versions, nvcc, missing Python modules.
2. ``build``: ``pip install --no-build-isolation --no-deps -e .`` with ``FASTNIPS_CUDA=ON`` and
   ``CMAKE_CUDA_ARCHITECTURES`` from the device's compute capability (``OFF`` and said so when no nvcc).
3. ``tests``: every test whose id or marks name ``cuda``, ``triton``, ``cupy`` or ``gpu`` (the backend
   parametrisations and the ``gpu`` marker), JUnit XML kept.
4. ``bench``: the GPU rows of every bench file (ids with ``cuda`` / ``triton`` / ``cupy`` / ``gpu``) plus
   ``bench/gpu/bench_gpu.py``, pytest-benchmark JSON kept; ``--quick`` runs bench_gpu.py only, at smaller sizes.
5. ``attention``: ``bench/vision/gpu_attention.py`` (forward and forward+backward tables) in bf16 and fp16
   (``--quick``: bf16 only).

Without a CUDA device nothing is run: the plan is printed (``--dry-run``, exit 0) or a one-line message says
why (exit 3). Every step's command, status, time and output tail go to results.json; results.md has the
tables (benchmark medians per group with ratios to the group's fastest row).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WHEELS = Path(__file__).with_name("wheels")
GPU_K = "cuda or triton or cupy or gpu"
BUDGET = {"full": 480, "quick": 180}
# Share of the remaining budget a step may take at most (the rest stays for the steps after it).
SHARE = {"env": 0.1, "build": 0.5, "tests": 0.5, "bench": 0.7, "attention": 1.0}
NEEDED = ("numpy", "scipy", "click", "torch", "triton", "pytest", "pytest_benchmark", "pybind11", "scikit_build_core")


@dataclass
class Step:
    name: str
    cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)
    artefact: str | None = None  # a file the step writes in the output folder


@dataclass
class Outcome:
    name: str
    cmd: str
    status: str  # ok | failed | timeout | skipped
    seconds: float
    tail: str
    artefact: str | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench/gpu/run.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller rows, bf16 attention only (budget 180 s)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default: $OUT if set, else bench/gpu/out)")
    ap.add_argument("--no-build", action="store_true", help="use the fastnips already installed")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit; runs nothing")
    ap.add_argument("--budget", type=float, default=None, help="overall seconds (default 480, --quick 180)")
    args = ap.parse_args(argv)
    if args.budget is not None and not args.budget > 0:
        ap.error(f"--budget must be > 0 seconds, got {args.budget}")
    if args.out is None:
        args.out = Path(os.environ["OUT"]) if os.environ.get("OUT") else REPO / "bench" / "gpu" / "out"
    if args.budget is None:
        args.budget = BUDGET["quick" if args.quick else "full"]
    return args


def device_info() -> dict | None:
    """The CUDA device torch sees (name, compute capability, memory), or None when there is none."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    p = torch.cuda.get_device_properties(0)
    return {"name": p.name, "capability": f"{p.major}{p.minor}", "memory_gib": round(p.total_memory / 2**30, 1),
            "torch": torch.__version__, "cuda": torch.version.cuda}


def find_nvcc() -> str | None:
    """nvcc from CUDACXX, PATH, CUDA_HOME or /usr/local/cuda, or the nvidia-cuda-nvcc wheel next to torch."""
    cands = [os.environ.get("CUDACXX"), shutil.which("nvcc")]
    cands += [str(Path(p) / "bin" / "nvcc") for p in (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if p]
    try:
        import nvidia.cuda_nvcc as m  # the pip toolkit, where present

        cands.append(str(Path(next(iter(m.__path__))) / "bin" / "nvcc"))
    except Exception:
        pass
    return next((c for c in cands if c and Path(c).is_file()), None)


def missing_modules(names=NEEDED) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is None]


def plan(args: argparse.Namespace, dev: dict | None, nvcc: str | None) -> list[Step]:
    """The steps to run, in order (pure: no side effects, tested on the CPU)."""
    out = Path(args.out)
    py = sys.executable
    steps = [Step("env", [py, str(Path(__file__)), "--env-report"])]
    if not args.no_build:
        cc = dev["capability"] if dev else "90"
        cuda = "ON" if nvcc else "OFF"
        env = {"FASTNIPS_CUDA": cuda, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 8)}
        if nvcc:
            env["CUDACXX"] = nvcc
        cmd = [py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "-q", "-e", ".",
               f"-Ccmake.define.CMAKE_CUDA_ARCHITECTURES={cc}", "-Cbuild-dir=build/gpu"]
        steps.append(Step("build", cmd, env))
    tests = [py, "-m", "pytest", "tests", "-m", "not slow", "-k", GPU_K, "-q", "-p", "no:cacheprovider",
             f"--junitxml={out / 'tests.xml'}"]
    steps.append(Step("tests", tests, {"TRITON_INTERPRET": "0"}, "tests.xml"))
    where = ["bench/gpu/bench_gpu.py"] if args.quick else ["bench"]
    bench = [py, "-m", "pytest", *where, "-k", GPU_K, "-q", "-p", "no:cacheprovider", "--benchmark-only",
             "--benchmark-min-rounds=5", "--benchmark-max-time=0.5", f"--benchmark-json={out / 'bench.json'}"]
    steps.append(Step("bench", bench, {"TRITON_INTERPRET": "0",
                                       "FASTNIPS_GPU_SIZE": "quick" if args.quick else "full"}, "bench.json"))
    for dt in ("bf16",) if args.quick else ("bf16", "fp16"):
        steps.append(Step(f"attention-{dt}", [py, "bench/vision/gpu_attention.py", "--dtype", dt]
                          + (["--no-flex", "--windows", "7,14,28"] if args.quick else []), {"TRITON_INTERPRET": "0"}))
    return steps


def run_step(step: Step, timeout: float, out: Path) -> Outcome:
    t0 = time.monotonic()
    env = {**os.environ, **step.env}
    log = out / f"{step.name}.log"
    try:
        with open(log, "w") as fh:
            r = subprocess.run(step.cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                               timeout=max(timeout, 1.0))
        status = "ok" if r.returncode == 0 else f"failed (exit {r.returncode})"
    except subprocess.TimeoutExpired:
        status = f"timeout ({timeout:.0f} s)"
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    return Outcome(step.name, shlex.join(step.cmd), status, round(time.monotonic() - t0, 1), tail, step.artefact)


def junit_counts(xml_text: str) -> dict:
    """tests / failures / errors / skipped of a JUnit XML report (pytest's)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    keys = ("tests", "failures", "errors", "skipped")
    return {k: sum(int(s.get(k, 0)) for s in suites) for k in keys}


def bench_tables(data: dict) -> str:
    """Markdown tables from a pytest-benchmark JSON: per group, each row's median (ms) and its ratio to the
    fastest row of the group, and the extra_info fields that carry results (peak_bytes, rel_err)."""
    groups: dict[str, list] = {}
    for b in data.get("benchmarks", []):
        groups.setdefault(b.get("group") or b["name"], []).append(b)
    lines = []
    for g, rows in groups.items():
        best = min(r["stats"]["median"] for r in rows)
        lines += [f"**{g}**", "", "| row | median (ms) | / fastest | peak MiB | rel. err |", "|---|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: r["stats"]["median"]):
            med, extra = r["stats"]["median"], r.get("extra_info", {})
            peak = f"{extra['peak_bytes'] / 2**20:.1f}" if extra.get("peak_bytes") else ""
            err = f"{extra['rel_err']:.1e}" if "rel_err" in extra else ""
            row = r.get("param") or r["name"]
            lines.append(f"| {row} | {med * 1e3:.3f} | {med / best:.2f} | {peak} | {err} |")
        lines.append("")
    return "\n".join(lines)


def render_markdown(meta: dict, outcomes: list[Outcome], out: Path) -> str:
    lines = [f"# fastnips GPU check, {meta['date']}", "", f"device: {meta.get('device')}", "",
             f"nvcc: {meta.get('nvcc')}; missing modules: {meta.get('missing') or 'none'}", "",
             "| step | status | seconds |", "|---|---|---|"]
    lines += [f"| {o.name} | {o.status} | {o.seconds} |" for o in outcomes]
    lines.append("")
    for o in outcomes:
        art = out / o.artefact if o.artefact else None
        if o.name == "tests" and art and art.exists():
            lines += ["## tests", "", json.dumps(junit_counts(art.read_text())), ""]
        elif o.name == "bench" and art and art.exists():
            lines += ["## benchmarks", "", bench_tables(json.loads(art.read_text()))]
        elif o.name.startswith("attention"):
            lines += [f"## {o.name}", "", "```", o.tail.strip(), "```", ""]
    return "\n".join(lines)


def summary(meta: dict, outcomes: list[Outcome], out: Path) -> str:
    """The one-screen summary printed at the end."""
    lines = [f"GPU check on {meta.get('device')}: results in {out}"]
    for o in outcomes:
        extra = ""
        art = out / o.artefact if o.artefact else None
        if o.name == "tests" and art and art.exists():
            c = junit_counts(art.read_text())
            extra = f"  {c['tests']} tests, {c['failures']} failed, {c['errors']} errors, {c['skipped']} skipped"
        lines.append(f"  {o.name:<15} {o.status:<22} {o.seconds:7.1f} s{extra}")
        if not o.status.startswith("ok"):
            lines += ["      " + ln for ln in o.tail.strip().splitlines()[-6:]]
    return "\n".join(lines)


def env_report() -> int:
    dev = device_info()
    print(json.dumps({"device": dev, "nvcc": find_nvcc(), "missing": missing_modules(),
                      "python": sys.version.split()[0], "wheels": sorted(p.name for p in WHEELS.glob("*.whl"))},
                     indent=1))
    if shutil.which("nvidia-smi"):
        subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                        "--format=csv"], check=False)
    return 0


def install_wheels() -> list[str]:
    """Install what the build needs from bench/gpu/wheels (no network): the cmeel Eigen headers and click."""
    need = [m for m in ("cmeel", "click") if missing_modules((m,))]
    if need and WHEELS.is_dir():
        pkgs = ["cmeel", "cmeel-eigen"] if "cmeel" in need else []
        pkgs += ["click"] if "click" in need else []
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(WHEELS),
                        *pkgs], check=False)
    return missing_modules()


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv == ["--env-report"]:
        return env_report()
    args = parse_args(argv)
    dev, nvcc = device_info(), find_nvcc()
    steps = plan(args, dev, nvcc)
    if args.dry_run or dev is None:
        why = "dry run" if args.dry_run else "no CUDA device"
        print(f"{why}: nothing run. Plan ({'quick' if args.quick else 'full'}, budget {args.budget:.0f} s, "
              f"output {args.out}):")
        for s in steps:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in s.env.items())
            print(f"  [{s.name}] {env + ' ' if env else ''}{shlex.join(s.cmd)}")
        if dev is None:
            print("no CUDA device visible to torch: run this on the GPU machine (see bench/README.md, GPU check)")
        return 0 if args.dry_run else 3
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    missing = install_wheels() if not args.no_build else missing_modules()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": dev, "nvcc": nvcc,
            "missing": missing, "quick": args.quick, "budget_s": args.budget}
    outcomes = []
    for s in steps:
        left = args.budget - (time.monotonic() - t0)
        if left < 5:
            outcomes.append(Outcome(s.name, shlex.join(s.cmd), "skipped (budget spent)", 0.0, "", s.artefact))
            continue
        o = run_step(s, left * SHARE.get(s.name.split("-")[0], 1.0), out)
        outcomes.append(o)
        print(f"[{o.name}] {o.status} in {o.seconds} s", flush=True)
        if s.name == "build" and not o.status.startswith("ok"):
            break
    (out / "results.json").write_text(json.dumps({"meta": meta, "steps": [asdict(o) for o in outcomes]}, indent=1))
    (out / "results.md").write_text(render_markdown(meta, outcomes, out))
    print(summary(meta, outcomes, out))
    return 0 if all(o.status.startswith("ok") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
