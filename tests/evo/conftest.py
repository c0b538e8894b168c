"""Fixtures of the evo tests: the backends of fastnips.evo.run (reference and the native loop)."""

from __future__ import annotations

from fastnips.evo import EVO_BACKENDS

from ..helpers import backend_fixture

backend = backend_fixture(*EVO_BACKENDS)
