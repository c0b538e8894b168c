"""Fixtures of the graph tests: the backends of tikhonov_solve (reference always; cpp where built)."""

from __future__ import annotations

import pytest

from fastnips import _backend


def _cpp_available() -> bool:
    C = _backend.native()
    return _backend.backend_available("cpp") and C is not None and hasattr(C, "tikhonov_solve_cg")


@pytest.fixture(params=["reference", "cpp"])
def backend(request):
    """tikhonov_solve's backends (overrides the repository-wide fixture, which covers every backend)."""
    if request.param == "cpp" and not _cpp_available():
        pytest.skip("the cpp backend of tikhonov_solve is not in this build of fastnips._C")
    return request.param


@pytest.fixture
def solver(backend):
    return backend


@pytest.fixture
def require_cpp():
    if not _cpp_available():
        pytest.skip("tikhonov_solve_cg is not in this build of fastnips._C")
