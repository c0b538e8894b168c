"""Benchmark helpers: machine facts recorded with every result, and shared data caches.

Benchmarks are not tests: `pytest` alone never collects this folder (testpaths = tests). Run them with
    OMP_NUM_THREADS=1 pytest bench --benchmark-only --benchmark-json=out.json
and CI smoke-runs them once with `pytest bench --benchmark-disable`. Every benchmark also checks that
ours and the peer agree.
"""

from __future__ import annotations

import os
import platform

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
