"""Fixtures of the functional tests: the backends of the coefficient solves and small irregular curve sets."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.functional import FUNCTIONAL_BACKENDS, gaussian_process_curves

from ..helpers import backend_fixture

backend = backend_fixture(*FUNCTIONAL_BACKENDS)


@pytest.fixture(scope="module")
def irregular():
    """200 Gaussian-process curves with 30 to 80 uniform random times each (no basis function lacks support)."""
    curves, _ = gaussian_process_curves(200, samples=(30, 80), irregularity=1.0, noise=0.2, seed=3)
    return curves


@pytest.fixture(scope="module")
def grid_data():
    """(t, X): 6 rough curves (random walks) on a regular grid of 60 points over [0, 2]."""
    t = np.linspace(0.0, 2.0, 60)
    return t, np.random.default_rng(0).standard_normal((6, 60)).cumsum(axis=1)
