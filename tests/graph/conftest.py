"""Fixtures of the graph tests: the backends of the host solves (reference always; cpp where built).

Graph builders and tolerance helpers shared by several modules are in ``_builders.py``."""

from __future__ import annotations

import pytest

from fastnips import _backend

from ..helpers import backend_fixture

# tikhonov_solve's host backends (overrides the repository-wide fixture, which covers every backend)
backend = backend_fixture("reference", "cpp")
# the backends of method="dense" (tests/graph/test_tikhonov_direct.py)
dense_backend = backend_fixture("reference", "cpp", name="dense_backend")


@pytest.fixture
def solver(backend):
    return backend


@pytest.fixture
def require_cpp():
    why = _backend.why_unavailable("cpp")
    if why:
        pytest.skip(f"backend 'cpp' not available: {why}")
