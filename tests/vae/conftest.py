"""Fixtures of the Dirichlet beta-VAE tests: small synthetic linear mixtures in float64, torch on one thread."""

from __future__ import annotations

import pytest
import torch

from fastnips.vae import linear_mixture

torch.set_num_threads(1)  # tiny models: one thread is the fastest on a shared machine and reproducible


@pytest.fixture(scope="module")
def mixture():
    """(X, K, alpha0, sigma2): 400 points of a 3-component mixture in 5 dimensions."""
    return linear_mixture(400, D=5, K=3, noise=0.3, seed=1), 3, 2.0, 1.0
