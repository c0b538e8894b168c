"""The backends of the concept decomposition's Gram term."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from fastnips.concepts.gram import GRAM_BACKENDS

from ..helpers import backend_fixture

backend = backend_fixture(*GRAM_BACKENDS)
