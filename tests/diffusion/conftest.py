"""Fixtures of the diffusion tests: ``backend`` runs over the backends of the Lorenz kernels (``lorenz_rk4``
and the pool draw; ``fastnips.diffusion.lorenz.LORENZ_BACKENDS``)."""

from __future__ import annotations

import pytest

from ..helpers import backend_fixture

backend = backend_fixture("reference", "cpp", "triton")


@pytest.fixture
def gmm2():
    """The 2-D, 3-component Gaussian mixture of the sampler tests (an exact denoiser, tests/diffusion/
    sampler_oracles.py)."""
    from .sampler_oracles import make_gmm2

    return make_gmm2()
