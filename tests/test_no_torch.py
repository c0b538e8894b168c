"""Without torch: the torch-only subpackages refuse to import with the install hint, ``fastnips demo`` runs its
numpy rows and marks the rest "needs torch", ``fastnips prune`` fails in one line.

Each check runs in a fresh interpreter with a meta-path finder that refuses ``torch`` and ``triton`` (and their
submodules) with ``ModuleNotFoundError``, as if they were not installed (no separate virtual environment
needed). A finder rather than ``sys.modules["torch"] = None``: scipy's array-API helpers look ``torch`` up in
``sys.modules`` and would trip over a ``None`` there, which never happens without torch.
"""

from __future__ import annotations

import json
import subprocess
import sys

import fastnips
from fastnips import _demo

HIDE_TORCH = (
    "import sys, importlib.abc\n"
    "class _NoTorch(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('torch', 'triton'):\n"
    "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)
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
    for cap in _demo.CAPABILITIES:  # every capability that needs torch says what to install; the others run
        if "torch" in cap.needs:
            assert status[cap.name] == {"needs torch"}, cap.name
        else:
            assert "ok" in status[cap.name], cap.name  # (spmm skips its torch backends)
            assert not status[cap.name] & {"failed", "differs", "needs torch"}, cap.name
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
