"""fastnips.submodular.certify: every backend against the enumerating reference, zero violations on the
rate-controlled construction, the non-rate-controlled transform caught, n = 20 with the native backend.

Tolerances: the certificate compares table differences exactly (tol only absorbs the float64 rounding of the
evaluations, default 1e-9 max |f|); backends must agree exactly on counts, first violations and alpha_observed
(the same differences of the same table, the same tie rule)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips import _backend
from fastnips.submodular import PairwiseSubmodular, alpha_for_rho, certify, rho_for_alpha, set_table
from fastnips.submodular.reference import certify_reference

from .conftest import sqrt_of_pairwise


@pytest.mark.parametrize("seed", range(4))
def test_backend_equals_reference_on_violating_tables(backend, seed):
    table = sqrt_of_pairwise(7, seed)
    got = certify(table, backend=backend)
    raw = certify_reference(table, tol=got.tol)
    assert got.dr_violations == raw["dr_violations"] > 0
    assert got.monotone_violations == raw["monotone_violations"] == 0
    v = got.first_dr
    assert v["a"] == raw["first_dr"]["a"]
    assert v["dS"] == raw["first_dr"]["dS"]
    assert v["dT"] == raw["first_dr"]["dT"]
    assert got.alpha_observed == raw["alpha_observed"] < 1
    # the reported violation is real: recompute it from the table
    S = sum(1 << i for i in v["S"])
    T = sum(1 << i for i in v["T"])
    a = 1 << v["a"]
    assert S & ~T == 0
    assert not (T & a)
    assert table[S | a] - table[S] < table[T | a] - table[T] - got.tol


def test_monotonicity_violation_is_reported(backend):
    rng = np.random.default_rng(3)
    table = np.sort(rng.uniform(0, 1, 32))  # increasing in the mask, hence monotone ...
    table[0] = 0.0
    table[0b00101] = table[0b00001] - 0.5  # ... until adding element 2 to {0} lowers f
    got = certify(table, backend=backend)
    raw = certify_reference(table, tol=got.tol)
    assert got.monotone_violations == raw["monotone_violations"] > 0
    assert got.first_monotone["a"] == raw["first_monotone"]["a"]
    assert not got.ok
    assert "monotonicity" in str(got)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("layers", [(), (4,), (5, 3)])
def test_random_networks_have_no_violation(backend, seed, layers):
    f = PairwiseSubmodular.random(9, layers=layers, seed=seed)
    c = certify(f, backend=backend)
    assert c.ok, str(c)


@pytest.mark.parametrize("seed", range(3))
def test_exceeding_the_rate_bound_is_caught(backend, seed):
    """One channel, phi at the rate bound (beta = kappa), interactions up to 3x above kappa m m (rho = 3, sigma
    near 1): not submodular, and the certificate says so (while it still certifies its alpha)."""
    rng = np.random.default_rng(seed)
    kappa = np.array([1.0])
    f = PairwiseSubmodular(m=rng.uniform(0.1, 0.5, (8, 1)), U=np.full((1, 8, 1), 3.0), kappa=kappa, a=np.ones((1, 1)),
                           beta=kappa[:, None], alpha=alpha_for_rho(3.0))
    assert not certify(f, alpha=1.0, backend=backend).ok
    assert certify(f, backend=backend).ok


@pytest.mark.parametrize("alpha", [0.9, 0.6, 0.3])
def test_alpha_variant_meets_its_alpha(backend, alpha):
    for seed in range(3):
        f = PairwiseSubmodular.random(8, layers=(), seed=seed, alpha=alpha, channels=1, terms=1)
        c = certify(f, backend=backend)
        assert c.ok, str(c)
        assert c.alpha_observed >= alpha - 1e-12


def test_alpha_of_rho():
    assert alpha_for_rho(1.0) == 1.0
    for rho in (1.5, 2.0, 5.0, 40.0):
        a = alpha_for_rho(rho)
        assert 0 < a < 1
        assert rho_for_alpha(a) == pytest.approx(rho, rel=1e-10)
        assert a == pytest.approx(np.exp(1 - 1 / rho) / rho, rel=1e-15)


def test_native_handles_n20():
    why = _backend.why_unavailable("cpp")
    if why:
        pytest.skip(f"backend 'cpp' not available: {why}")
    f = PairwiseSubmodular.random(20, channels=2, layers=(3,), seed=0)
    assert certify(f, backend="cpp").ok
    bad = sqrt_of_pairwise(20, 0)
    c = certify(bad, backend="cpp")
    assert c.dr_violations > 0
    assert c.first_dr["a"] == 0


def test_table_of_a_function_equals_its_values():
    f = PairwiseSubmodular.random(6, seed=4)
    t = set_table(f)
    assert t[0] == 0.0
    assert t[0b101] == pytest.approx(f.values(np.array([[1, 0, 1, 0, 0, 0]], bool))[0], abs=1e-14)
