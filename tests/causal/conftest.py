"""Fixtures for tests/causal."""

from __future__ import annotations

from ..helpers import backend_fixture

# 'reference' and 'cpp' (skipped with the reason where fastnips._C is not available)
htc_backend = backend_fixture("reference", "cpp", name="htc_backend")
