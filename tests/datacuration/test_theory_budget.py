"""expected_best against closed forms and Monte Carlo; allocate_compute against the first-order condition;
the frontier; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from fastnips.datacuration import (
    ExponentFit,
    allocate_compute,
    expected_best,
    quadratic_tail,
    quality_quantity_frontier,
    random_search_curves,
)


def test_expected_best_closed_form_d1():
    # d = 1: gap x^2 with x ~ U(-1, 1): P(gap <= e) = sqrt(e), so E[min gap of N] = 2 / ((N + 1)(N + 2)) by hand
    N = np.array([1, 2, 5, 50, 1000])
    k, kappa = quadratic_tail(1)
    assert (k, kappa) == pytest.approx((0.5, 1.0))
    np.testing.assert_allclose(expected_best(N, optimum=0.3, k=k, kappa=kappa), 0.3 - 2.0 / ((N + 1) * (N + 2)),
                               rtol=1e-12)
    asym = expected_best(N, optimum=0.0, k=k, kappa=kappa, exact=False)
    np.testing.assert_allclose(asym, -2.0 / N.astype(float) ** 2, rtol=1e-12)  # Gamma(3) (kappa N)^-2


def test_quadratic_tail_constants():
    assert quadratic_tail(2) == pytest.approx((1.0, math.pi / 4))
    assert quadratic_tail(3) == pytest.approx((1.5, (4 / 3 * math.pi) / 8))


@pytest.mark.parametrize("d", [2, 3])
def test_expected_best_matches_monte_carlo(d):
    Y = random_search_curves(d, 512, 4000, seed=d)
    N = np.array([32, 128, 512])
    mc = Y[:, N - 1].mean(axis=0)
    se = Y[:, N - 1].std(axis=0) / math.sqrt(Y.shape[0])
    k, kappa = quadratic_tail(d)
    assert np.all(np.abs(expected_best(N, optimum=0.0, k=k, kappa=kappa) - mc) < 4 * se)


@pytest.mark.parametrize(("kw", "match"), [({"k": 0.0}, "k must"), ({"kappa": -1.0}, "kappa must"),
                                           ({"optimum": np.nan}, "optimum must")])
def test_expected_best_bad_input(kw, match):
    args = {"optimum": 0.0, "k": 1.0, "kappa": 1.0} | kw
    with pytest.raises(ValueError, match=match):
        expected_best([1, 2], **args)
    with pytest.raises(ValueError, match="N must be finite and >= 1"):
        expected_best([0.5], optimum=0.0, k=1.0, kappa=1.0)


def test_allocation_matches_first_order_condition():
    a, b, c, B, beta, C, r = 0.9, 0.3, 0.6, 40.0, 0.4, 1e5, 2.0
    s = allocate_compute((a, b, c), C, r, (B, beta))
    # interior optimum: b c N^-(c+1) = B beta r (C - N r)^-(beta+1), solved independently
    n_cont = brentq(lambda n: b * c * n ** -(c + 1) - B * beta * r * (C - n * r) ** -(beta + 1), 1.0, C / r - 1)
    assert abs(s.n_runs - n_cont) <= 1.0
    score = lambda n: a - b * n**-c - B * (C - n * r) ** -beta
    assert s.predicted == pytest.approx(score(s.n_runs))
    assert s.predicted >= max(score(s.n_runs - 1), score(s.n_runs + 1))
    assert s.final_compute == C - s.n_runs * r


def test_allocation_accepts_fits_and_edges():
    law = ExponentFit(exponent=-0.5, prefactor=10.0, ci_low=-0.6, ci_high=-0.4, n_points=5)
    s1 = allocate_compute((1.0, 0.5, 0.5), 1e4, 1.0, law)
    s2 = allocate_compute((1.0, 0.5, 0.5), 1e4, 1.0, (10.0, 0.5))
    assert s1.n_runs == s2.n_runs
    free_final = allocate_compute((1.0, 0.5, 0.5), 100.0, 1.0, (0.0, 0.5))  # no final-run shortfall: all ablations
    assert free_final.n_runs == 99
    assert allocate_compute((1.0, 0.5, 0.5), 1.5, 1.0, (1.0, 0.5)).n_runs == 1


def test_frontier_spends_more_on_ablations_with_budget():
    f = quality_quantity_frontier((0.9, 0.3, 0.5), np.geomspace(1e2, 1e7, 6), 1.0, (30.0, 0.5))
    assert np.all(np.diff(f.n_runs) > 0)
    assert np.all(np.diff(f.predicted) > 0)
    assert np.all((f.ablation_share > 0) & (f.ablation_share < 1))
    for C, n, p in zip(f.budgets, f.n_runs, f.predicted, strict=True):  # dominates "no ablation" and "half"
        for other in (1, int(C / 2)):
            assert p >= 0.9 - 0.3 * other**-0.5 - 30.0 * (C - other) ** -0.5 - 1e-12
        assert n >= 1


@pytest.mark.parametrize(("args", "match"), [
    (((0.9, 0.3, 0.5), 0.0, 1.0, (1.0, 0.5)), "budget must be finite and > 0"),
    (((0.9, 0.3, 0.5), -5.0, 1.0, (1.0, 0.5)), "budget must be finite and > 0"),
    (((0.9, 0.3, 0.5), 10.0, 0.0, (1.0, 0.5)), "run_cost must be finite and > 0"),
    (((0.9, 0.3, 0.5), 1.0, 1.0, (1.0, 0.5)), "cannot pay one ablation run"),
    (((0.9, 0.3, 0.5), 10.0, 1.0, (1.0, -0.5)), "beta > 0"),
    (((0.9, 0.3, 0.5), 10.0, 1.0, "law"), "final_law must be"),
    (((0.9, 0.3), 10.0, 1.0, (1.0, 0.5)), "curve must be"),
    (((0.9, 0.3, 0.0), 10.0, 1.0, (1.0, 0.5)), "c > 0"),
])
def test_allocation_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        allocate_compute(*args)


def test_frontier_bad_budgets():
    with pytest.raises(ValueError, match="budgets must be a non-empty"):
        quality_quantity_frontier((0.9, 0.3, 0.5), [], 1.0, (1.0, 0.5))
    with pytest.raises(ValueError, match="budget must be finite and > 0"):
        quality_quantity_frontier((0.9, 0.3, 0.5), [10.0, -1.0], 1.0, (1.0, 0.5))


def test_allocate_compute_equals_brute_force_and_handles_huge_budgets():
    """The refined optimum is the integer argmax of S(N) (brute force over every N), and a budget of 1e13 runs
    no longer asks for a 10 TiB array of candidate N (it raised MemoryError)."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        curve = (0.9, float(rng.uniform(0.05, 2.0)), float(rng.uniform(0.05, 1.5)))
        law = (float(10 ** rng.uniform(-3, 2)), float(rng.uniform(0.1, 1.5)))
        C = float(10 ** rng.uniform(2, 5.5))
        s = allocate_compute(curve, budget=C, run_cost=1.0, final_law=law)
        N = np.arange(1, math.ceil(C), dtype=np.float64)
        S = curve[0] - curve[1] * N ** -curve[2] - law[0] * (C - N) ** -law[1]
        assert s.predicted == pytest.approx(S.max(), rel=0, abs=1e-12)
    big = allocate_compute((0.9, 1.0, 0.1), budget=1e13, run_cost=1.0, final_law=(1e-3, 1.0))
    S = lambda n: 0.9 - n ** -0.1 - 1e-3 * (1e13 - n) ** -1.0
    assert S(big.n_runs) >= max(S(big.n_runs - 1.0), S(big.n_runs + 1.0))
