"""Bad input to fastnips.submodular gets a clear error naming the argument, before any work, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.submodular import (
    CERTIFY_MAX_N,
    FacilityLocation,
    FeatureBased,
    PairwiseSubmodular,
    certify,
    greedy,
)


def test_certify_refuses_large_n_nan_and_bad_alpha(backend):
    with pytest.raises(ValueError, match=f"n must be <= {CERTIFY_MAX_N}, got n = 25"):
        certify(PairwiseSubmodular.random(25, seed=0), backend=backend)
    with pytest.raises(ValueError, match="2\\^n values"):
        certify(np.zeros(6), backend=backend)
    t = np.zeros(8)
    t[5] = np.nan
    with pytest.raises(ValueError, match="finite; f is NaN or inf at mask 5"):
        certify(t, backend=backend)
    with pytest.raises(ValueError, match="alpha must lie in"):
        certify(np.zeros(4), alpha=1.5, backend=backend)
    with pytest.raises(ValueError, match="tol must be"):
        certify(np.zeros(4), tol=-1.0, backend=backend)


def test_reference_certificate_refuses_n_above_12():
    with pytest.raises(ValueError, match="reference enumerates 3\\^n"):
        certify(np.zeros(1 << 13), backend="reference")


def test_functions_refuse_negative_and_nan():
    f = PairwiseSubmodular.random(4, seed=0)
    base = dict(m=f.m, U=f.U, kappa=f.kappa, a=f.a, beta=f.beta, Ws=f.Ws, bs=f.bs, v=f.v)
    with pytest.raises(ValueError, match="m must be >= 0"):
        PairwiseSubmodular(**{**base, "m": -f.m})
    with pytest.raises(ValueError, match="Ws\\[0\\] must be >= 0"):
        PairwiseSubmodular(**{**base, "Ws": (-f.Ws[0],)})
    with pytest.raises(ValueError, match="beta must be >= kappa"):
        PairwiseSubmodular(**{**base, "beta": f.beta * 0 + f.kappa[:, None] / 2})
    with pytest.raises(ValueError, match="U must be finite"):
        PairwiseSubmodular(**{**base, "U": f.U * np.nan})
    with pytest.raises(ValueError, match="alpha must lie in"):
        PairwiseSubmodular(**{**base, "alpha": 0.0})
    with pytest.raises(ValueError, match="no layers"):
        PairwiseSubmodular(**{**base, "alpha": 0.5})
    with pytest.raises(ValueError, match="X must be >= 0"):
        FeatureBased(-np.eye(3))
    with pytest.raises(ValueError, match="concave must be one of"):
        FeatureBased(np.eye(3), concave="cube")
    with pytest.raises(ValueError, match="similarity must be finite"):
        FacilityLocation(np.full((2, 2), np.inf))


def test_greedy_refuses_bad_budgets(backend):
    fn = FeatureBased(np.eye(4))
    with pytest.raises(ValueError, match="give k"):
        greedy(fn, backend=backend)
    with pytest.raises(ValueError, match="k must be a non-negative integer"):
        greedy(fn, -1, backend=backend)
    with pytest.raises(ValueError, match="costs and budget go together"):
        greedy(fn, costs=np.ones(4), backend=backend)
    with pytest.raises(ValueError, match="costs must be finite and > 0"):
        greedy(fn, costs=[1, 0, 1, 1], budget=2, backend=backend)
    with pytest.raises(ValueError, match="costs must have shape"):
        greedy(fn, costs=[1, 1], budget=2, backend=backend)
    with pytest.raises(ValueError, match="budget must be finite"):
        greedy(fn, costs=np.ones(4), budget=np.nan, backend=backend)
    with pytest.raises(TypeError, match="fn must be a set function"):
        greedy(np.eye(3), 2, backend=backend)


def test_cpp_greedy_refuses_foreign_functions():
    from fastnips import _backend

    if _backend.why_unavailable("cpp"):
        pytest.skip(f"backend 'cpp' not available: {_backend.why_unavailable('cpp')}")

    class Modular:
        n = 3
        alpha = 1.0

        def values(self, masks):
            return masks @ np.arange(3.0)

    with pytest.raises(ValueError, match="cpp greedy takes"):
        greedy(Modular(), 2, backend="cpp")
    assert greedy(Modular(), 2).selected.tolist() == [2, 1]  # auto falls back to the reference
