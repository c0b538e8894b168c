"""Fixtures of the diffusion tests: ``backend`` runs over the backends of the Lorenz kernels (``lorenz_rk4``
and the pool draw; ``fastnips.diffusion.lorenz.LORENZ_BACKENDS``)."""

from __future__ import annotations

from ..helpers import backend_fixture

backend = backend_fixture("reference", "cpp", "triton")
