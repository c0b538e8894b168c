"""Smoke-run every script in examples/ (issue 16): each is self-contained, offline and seeded, and must exit 0.

One test per script, run as ``python examples/<name>.py`` in a subprocess from a temporary working directory
(the scripts write nothing there; files go to temporary folders), with ``TRITON_INTERPRET`` removed from the
environment as for a user. The list below must name every script in the folder; scripts taking longer than
about 30 s on 2 cores would carry ``slow`` (none do today).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TIMEOUT_S = 300  # each takes seconds to about 20 s; this only catches hangs on a loaded machine

SCRIPTS = {  # script: its marks
    "spmm.py": [],
    "htc.py": [],
    "tikhonov_gnn.py": [],
    "prune_tiny.py": [],
    "freqbias.py": [],
    "fds_sampler.py": [],
    "scenegraph_loss.py": [],
    "concepts_grace.py": [],
    "graph_pyg.py": [],
    "rl_irl.py": [],
    "rl_pbrl.py": [],
    "diffusion_diffusers.py": [],
    "vae_collapse.py": [],
    "pc_digits.py": [],
    "optim_minimax.py": [],
    "functional_sofr.py": [],
    "submodular_digits.py": [],
    "teacher_budget.py": [],
    "evo_moead.py": [],
    "datacuration_powerlaw.py": [],
    "diagnosis_fleet.py": [],
    "designbench_metrics.py": [],
}


def test_every_script_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(SCRIPTS)


def test_every_script_has_a_docstring_that_says_how_to_run_it():
    import ast

    for name in SCRIPTS:
        doc = ast.get_docstring(ast.parse((EXAMPLES / name).read_text(encoding="utf-8")))
        assert doc, f"examples/{name} has no module docstring"
        assert f"python examples/{name}" in doc, f"examples/{name}: the docstring must say how to run it"


@pytest.mark.parametrize("name", [pytest.param(n, marks=m, id=n.removesuffix(".py")) for n, m in SCRIPTS.items()])
def test_example_runs(name, tmp_path):
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env.setdefault("MPLBACKEND", "Agg")
    try:
        p = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"examples/{name} ran past {TIMEOUT_S} s\n--- stdout ---\n{e.stdout}\n--- stderr ---\n{e.stderr}")
    assert p.returncode == 0, (f"examples/{name} exited {p.returncode}\n--- stdout ---\n{p.stdout[-4000:]}\n"
                               f"--- stderr ---\n{p.stderr[-8000:]}")
    assert p.stdout.strip(), f"examples/{name} printed nothing"
    assert list(tmp_path.iterdir()) == [], f"examples/{name} wrote into the working directory"
