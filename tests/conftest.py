"""Shared fixtures. TRITON_INTERPRET is set before anything can define a Triton kernel: @triton.jit reads
it at decoration time, so Triton kernels run on CPU tensors here (slowly; keep those tests small)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

from fastnips import _backend


@pytest.fixture(params=_backend.BACKENDS)
def backend(request):
    """Every backend; those that cannot run here skip with the reason."""
    name = request.param
    why = _backend.why_unavailable(name)
    if why:
        pytest.skip(f"backend {name!r} not available: {why}")
    return name


@pytest.fixture
def fresh_backends():
    """Clear the cached backend probes before and after a test that changes kill switches."""
    _backend.refresh()
    yield
    _backend.refresh()


def load_bench_script(relpath: str):
    """A script of bench/ (e.g. "graph/eval_tikhonov.py") as a module, for tests of its helpers."""
    path = Path(__file__).resolve().parents[1] / "bench" / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
