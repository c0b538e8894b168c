"""Without torch: the torch-only subpackages refuse to import with the install hint, ``fastnips demo`` runs its
numpy rows and marks the rest "needs torch", ``fastnips prune`` fails in one line.

Each check runs in a fresh interpreter whose ``sys.modules["torch"] = None`` makes ``import torch`` fail as if
torch were not installed (no separate virtual environment needed).
"""

from __future__ import annotations

import json
import subprocess
import sys

import fastnips
from fastnips import _demo

HIDE_TORCH = "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
CLI = HIDE_TORCH + "sys.argv[0] = 'fastnips'\nfrom fastnips.cli import main\nmain()\n"


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def test_torch_only_subpackages_say_what_to_install():
    res = _python(HIDE_TORCH + """
import importlib
import fastnips
for name in fastnips._SUBPACKAGES:  # the numpy fields import without torch
    if name not in fastnips._NEEDS_TORCH:
        importlib.import_module(f"fastnips.{name}")
for name in fastnips._NEEDS_TORCH:
    try:
        __import__(f"fastnips.{name}")
    except ImportError as exc:
        assert isinstance(exc, ModuleNotFoundError) and exc.name == "torch", exc
        print(exc)
    else:
        raise SystemExit(f"fastnips.{name} imported without torch")
""")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == [f"fastnips.{n}" for n in fastnips._NEEDS_TORCH]
    for ln in lines:
        assert "needs torch, which is not installed: pip install torch" in ln
        assert "download.pytorch.org/whl/cpu" in ln


def test_demo_runs_the_numpy_rows_and_marks_the_rest():
    res = _python(CLI, "demo", "--json", "--n", "2000")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    status = {}
    for r in doc["rows"]:
        status.setdefault(r["capability"], set()).add(r["status"])
    assert status["htc"] == {"ok"}
    assert "ok" in status["spmm"]
    assert "differs" not in status["spmm"]
    for name in _demo.NAMES:  # every capability but the numpy ones says what to install
        if name not in ("spmm", "htc"):
            assert status[name] == {"needs torch"}, name
    needs = [r for r in doc["rows"] if r["status"] == "needs torch"]
    assert all(r["result"] == "needs torch: pip install torch (see README)" for r in needs)
    assert "running graph" not in res.stderr  # nothing to run, no progress line


def test_prune_command_fails_in_one_line():
    res = _python(CLI, "prune", "--model", "tiny")
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("Error: fastnips.prune needs torch")
    assert "pip install torch" in line
