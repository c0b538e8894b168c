from __future__ import annotations

import numpy as np
import pytest

import fastnips
from fastnips import _backend
from fastnips.data import random_csr
from fastnips.ops import spmm


def test_reference_always_available():
    assert "reference" in fastnips.available_backends()


def test_cuda_listed_only_with_a_device():
    if "cuda" in fastnips.available_backends():
        assert _backend.cuda_device_count() > 0
    else:
        assert _backend.why_unavailable("cuda")


def test_kill_switch_removes_cpp_and_auto_falls_back(monkeypatch, fresh_backends):
    monkeypatch.setenv("FASTNIPS_DISABLE_CPP", "1")
    _backend.refresh()
    assert "cpp" not in fastnips.available_backends()
    with pytest.raises(ValueError, match="switched off by FASTNIPS_DISABLE_CPP"):
        spmm(random_csr(3, 3, avg_degree=1), np.ones((3, 1)), backend="cpp")
    A = random_csr(30, 20, avg_degree=3, seed=0)
    np.testing.assert_allclose(spmm(A, np.ones((20, 2))), A @ np.ones((20, 2)), rtol=1e-12)


def test_kill_switch_zero_means_on(monkeypatch, fresh_backends):
    monkeypatch.setenv("FASTNIPS_DISABLE_TRITON", "0")
    _backend.refresh()
    assert not _backend.why_unavailable("triton").startswith("switched off")


def test_resolve_errors():
    with pytest.raises(ValueError, match="has no 'cupy' backend; it has reference, cpp"):
        _backend.resolve("cupy", op="thing", supported=("reference", "cpp"), auto=("cpp",))
    with pytest.raises(TypeError, match="backend must be a string"):
        _backend.resolve(None, op="thing", supported=("reference",), auto=("reference",))
    assert _backend.resolve("auto", op="thing", supported=("reference",), auto=("cpp", "reference")) == "reference"


def test_build_info_facts():
    info = fastnips.build_info()
    for key in ("version", "native", "openmp", "cuda_compiled", "cuda_devices", "numpy", "scipy", "torch",
                "triton", "cupy", "backends"):
        assert key in info
    assert info["version"] == fastnips.__version__
    assert info["backends"] == fastnips.available_backends()
    if info["native"]:
        assert "native_version_mismatch" not in info, "stale fastnips._C: rebuild (pip install -e .)"


def test_stale_native_build_is_refused_with_the_rebuild_command(monkeypatch):
    C = _backend.native()
    if C is None:
        pytest.skip("fastnips._C is not built")
    monkeypatch.setattr(C, "__api__", _backend.NATIVE_API - 1)
    with pytest.raises(ImportError, match=r"stale build .*rebuild it: pip install -e \."):
        _backend._check_api(C)
    monkeypatch.undo()
    _backend._check_api(C)  # the real build matches
