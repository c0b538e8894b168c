"""Shared fixtures. TRITON_INTERPRET is set before anything can define a Triton kernel: @triton.jit reads
it at decoration time, so Triton kernels run on CPU tensors here (slowly; keep those tests small).

Helpers (the backend parametrisation, shared builders) live in tests/helpers.py."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

from fastnips import _backend

from .helpers import backend_fixture

# Every backend; those that cannot run here skip with the reason. Folders and modules whose ops implement
# fewer backends override it with backend_fixture(<their backends>).
backend = backend_fixture()


@pytest.fixture
def fresh_backends():
    """Clear the cached backend probes before and after a test that changes kill switches."""
    _backend.refresh()
    yield
    _backend.refresh()
