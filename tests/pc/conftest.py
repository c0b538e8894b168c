"""Fixtures of the PC tests: torch on one thread, small float64 networks and batches, and the backends of
pc_inference ("fused" is proposed to fastnips._backend; until it is registered its dispatch tests skip and its
implementation is tested by a direct call)."""

from __future__ import annotations

import pytest
import torch

from fastnips import _backend
from fastnips.pc import PCNet

torch.set_num_threads(1)  # tiny models: one thread is the fastest on a shared machine and reproducible


def _params():
    out = []
    for name in ("reference", "fused", "triton"):
        if name not in _backend.BACKENDS:
            why = f"backend {name!r} is not yet a name of fastnips._backend.BACKENDS"
        else:
            why = _backend.why_unavailable(name)
        out.append(pytest.param(name, id=name, marks=[pytest.mark.skip(reason=why)] if why else []))
    return out


@pytest.fixture(params=_params())
def pc_backend(request):
    return request.param


def make_batch(sizes, activation="tanh", *, B=6, dtype=torch.float64, seed=0, nudge=1.0):
    """(net, x, y) with y = the prediction + nudge * a random direction."""
    net = PCNet(sizes, activation=activation, dtype=dtype, seed=seed)
    g = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(B, sizes[0], generator=g, dtype=dtype)
    with torch.no_grad():
        y = net(x) + nudge * torch.randn(B, sizes[-1], generator=g, dtype=dtype)
    return net, x, y
