"""Fixtures of the ops tests: spmm's backends."""

from __future__ import annotations

from fastnips.ops import SPMM_BACKENDS

from ..helpers import backend_fixture

backend = backend_fixture(*SPMM_BACKENDS)
