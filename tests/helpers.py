"""Shared test helpers: the one backend parametrisation and the builders several test folders use.

Import with a relative import from a test module or a folder's conftest (``from ..helpers import ...``);
``--import-mode=importlib`` resolves it from the tests folder.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from fastnips import _backend

REPO = Path(__file__).resolve().parents[1]


def backend_params(*names: str) -> list:
    """pytest params over ``names`` (default: every backend); a backend not available here is marked to skip
    with the reason, so the test id still says which backend was skipped and why."""
    params = []
    for name in names or _backend.BACKENDS:
        why = _backend.why_unavailable(name)
        marks = [pytest.mark.skip(reason=f"backend {name!r} not available: {why}")] if why else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


def backend_fixture(*names: str, name: str = "backend"):
    """A fixture parametrized over the backends ``names`` (default: every backend) that yields the backend's
    name; unavailable ones skip with the reason. In a conftest or test module::

        backend = backend_fixture("reference", "cpp")
    """

    @pytest.fixture(params=backend_params(*names), name=name)
    def _fixture(request):
        return request.param

    return _fixture


def load_bench_script(relpath: str):
    """A script of bench/ (e.g. "graph/eval_tikhonov.py") as a module, for tests of its helpers."""
    path = REPO / "bench" / relpath
    name = "_bench_" + relpath.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # registered first: dataclasses and pickling look the module up by name
    spec.loader.exec_module(mod)
    return mod
