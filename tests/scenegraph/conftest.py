"""Shared pieces of the scene-graph tests: the contextual backends and random probabilistic scene graphs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastnips.scenegraph import CONTEXTUAL_BACKENDS  # noqa: E402

from ..helpers import backend_fixture  # noqa: E402

backend = backend_fixture(*CONTEXTUAL_BACKENDS)


def simplex(g, *shape, dtype=torch.float64, sharp: float = 1.0):
    """Random probability vectors along the last dim (some near 0 when ``sharp`` is large)."""
    return torch.softmax(sharp * torch.randn(*shape, generator=g, dtype=dtype), dim=-1)


def graph(g, N=6, E=9):
    src = torch.randint(0, N, (E,), generator=g)
    dst = torch.randint(0, N, (E,), generator=g)
    return torch.stack([src, dst])
