"""The house layout (docs/architecture.md), checked: files a reader can hold, one dispatch path, nothing that
points outside the repository. ``python tests/test_layout.py`` prints every offender."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY_ROOTS = ("python/fastnips", "kernels")
MAX_PY_LINES = 550  # "about 500"
MAX_CPP_LINES = 650  # "about 600"
MAX_FUNCTION_LINES = 80  # lines of code: no blank lines, comments or docstrings


def _py_files():
    for root in PY_ROOTS:
        yield from sorted((REPO / root).rglob("*.py"))


def _cpp_files():
    yield from sorted(p for p in (REPO / "csrc").rglob("*") if p.suffix in (".cpp", ".h", ".cu", ".cuh"))


def _rel(p: Path) -> str:
    return str(p.relative_to(REPO))


def _code_lines(lines: list[str], skip: set[int]) -> int:
    return sum(1 for i, line in enumerate(lines, 1)
               if i not in skip and line.strip() and not line.strip().startswith(("#", "//")))


def long_files() -> list[str]:
    out = [f"{_rel(p)}: {n} lines > {MAX_PY_LINES}" for p in _py_files()
           if (n := len(p.read_text().splitlines())) > MAX_PY_LINES]
    out += [f"{_rel(p)}: {n} lines > {MAX_CPP_LINES}" for p in _cpp_files()
            if (n := len(p.read_text().splitlines())) > MAX_CPP_LINES]
    return out


def _python_long_functions(path: Path) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        doc = set()
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            doc = set(range(body[0].lineno, body[0].end_lineno + 1))
        nested = set()  # nested functions count for themselves, not for their parent
        for sub in ast.walk(node):
            if sub is not node and isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                nested |= set(range(sub.lineno, sub.end_lineno + 1))
        span = range(node.lineno, node.end_lineno + 1)
        n = _code_lines([lines[i - 1] if i in span else "" for i in range(1, node.end_lineno + 1)], doc | nested)
        if n > MAX_FUNCTION_LINES:
            out.append(f"{_rel(path)}:{node.lineno} {node.name}: {n} lines of code > {MAX_FUNCTION_LINES}")
    return out


_CPP_OPEN = re.compile(r"^[A-Za-z_].*\)\s*(const\s*)?(noexcept\s*)?\{\s*$")


def _cpp_long_functions(path: Path) -> list[str]:
    """Functions defined at column 0 (``... ) {`` to the matching ``}`` at column 0): a heuristic that fits
    the house style (clang-format, functions at namespace level)."""
    lines = path.read_text().splitlines()
    out, start = [], None
    for i, line in enumerate(lines):
        if start is None and _CPP_OPEN.match(line) and not line.startswith(("namespace", "struct", "class")):
            start = i
        elif start is not None and line.startswith("}"):
            n = _code_lines(lines[start + 1:i], set())
            if n > MAX_FUNCTION_LINES:
                out.append(f"{_rel(path)}:{start + 1} {lines[start][:60]}...: {n} lines of code")
            start = None
    return out


def long_functions() -> list[str]:
    out = []
    for p in _py_files():
        out += _python_long_functions(p)
    for p in _cpp_files():
        out += _cpp_long_functions(p)
    return out


def outside_references() -> list[str]:
    """Paths outside the repository (the package, tests and docs must stand on their own)."""
    pat = re.compile(r"shared/notes|\.\./shared|shared/data/")
    out = []
    for root in ("python", "kernels", "csrc", "tests", "bench", "docs", "README.md", "CMakeLists.txt"):
        base = REPO / root
        files = [base] if base.is_file() else sorted(f for f in base.rglob("*") if f.is_file()) if base.exists() else []
        for f in files:
            if f.suffix in (".pt", ".png", ".json", ".jsonl", ".so", ".csv", ".pyc") or f == Path(__file__):
                continue
            for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if pat.search(line):
                    out.append(f"{_rel(f)}:{i}: {line.strip()[:80]}")
    return out


def private_dispatch() -> list[str]:
    """Local backend resolvers and stale-build guards (one dispatch path: fastnips._backend.resolve)."""
    pat = re.compile(r"def _resolve\(|hasattr\((_C|C|native\(\))\s*,")
    out = []
    for root in ("python/fastnips", "tests"):
        for f in sorted((REPO / root).rglob("*.py")):
            if f == Path(__file__):
                continue
            for i, line in enumerate(f.read_text().splitlines(), 1):
                if pat.search(line):
                    out.append(f"{_rel(f)}:{i}: {line.strip()[:80]}")
    return out


def test_files_a_reader_can_hold():
    assert long_files() == []


def test_functions_a_reader_can_hold():
    assert long_functions() == []


def test_nothing_points_outside_the_repository():
    assert outside_references() == []


def test_one_dispatch_path():
    assert private_dispatch() == []


if __name__ == "__main__":
    found = False
    for check in (long_files, long_functions, outside_references, private_dispatch):
        rows = check()
        found |= bool(rows)
        print(f"== {check.__name__}: {len(rows)}")
        for r in rows:
            print("  ", r)
    sys.exit(int(found))
