"""Fixtures of the submodular tests: the backends of greedy and the certificate (reference always; cpp where
built), and the non-rate-controlled counterexample shared by several modules."""

from __future__ import annotations

import numpy as np
import pytest

from ..helpers import backend_fixture

backend = backend_fixture("reference", "cpp")


def sqrt_of_pairwise(n: int, seed: int) -> np.ndarray:
    """The table of sqrt(g(S)) for a random pairwise g (m, w >= 0, no rate condition): concave of supermodular."""
    from fastnips.submodular.reference import all_masks

    rng = np.random.default_rng(seed)
    m = rng.uniform(0.1, 1.0, n)
    W = rng.uniform(0.0, 1.0, (n, n))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0.0)
    M = all_masks(n).astype(float)
    return np.sqrt(M @ m + 0.5 * np.einsum("bi,ij,bj->b", M, W, M))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
