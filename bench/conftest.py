"""Benchmark helpers: machine facts recorded with every result, and shared data caches.

Benchmarks are not tests: `pytest` alone never collects this folder (testpaths = tests). Run them with
    OMP_NUM_THREADS=1 pytest bench --benchmark-only --benchmark-json=out.json
and CI smoke-runs them once with `pytest bench --benchmark-disable`. Every benchmark also checks that
ours and the peer agree.
"""

from __future__ import annotations

import importlib.util
import os
import platform
from pathlib import Path

import numpy as np
import pytest


def pytest_configure(config):
    os.environ.setdefault("TRITON_INTERPRET", "0")


@pytest.fixture
def machine_facts(benchmark):
    """Put the facts that make a timing comparable into the benchmark's extra_info."""
    benchmark.extra_info.update(
        omp_num_threads=os.environ.get("OMP_NUM_THREADS", "unset"),
        cpus=os.cpu_count(),
        machine=platform.machine(),
    )
    return benchmark


def copy_bytes(benchmark, nbytes: int) -> None:
    """The ``memcpy`` row of a group: time a copy of ``nbytes`` (the bandwidth yardstick of the same run)."""
    benchmark.extra_info.update(traffic_bytes=nbytes)
    src = np.ones(nbytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    benchmark(np.copyto, dst, src)


@pytest.fixture
def memcpy_row():
    """:func:`copy_bytes`, for the bench files (importlib mode does not import conftest as a module)."""
    return copy_bytes


@pytest.fixture(scope="session")
def semid_peer():
    """bench/causal/bench_htc.py, SEMID's runner, for the causal bench files (importlib mode does not put that
    folder on sys.path)."""
    spec = importlib.util.spec_from_file_location("_bench_htc", Path(__file__).parent / "causal" / "bench_htc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
