"""IdentificationResult.identifier: recovering Lambda and Omega from Sigma (HTC, Tian, edgewise)."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.causal import MixedGraph, edgewise_identify, htc_identify

from ._builders import CASES, check_identifier, graph_of, random_graphs


def test_identifier_recovers_parameters_on_semid_cases(htc_backend):
    rng = np.random.default_rng(3)
    for c in CASES:
        g = graph_of(c)
        check_identifier(htc_identify(g, backend=htc_backend), rng)
        check_identifier(htc_identify(g, method="maxflow", backend=htc_backend), rng)
        check_identifier(htc_identify(g, tian=True, backend=htc_backend), rng)
        if c["edgewise_subset_size_control"] == "Inf":
            check_identifier(edgewise_identify(g, backend=htc_backend), rng)


def test_identifier_recovers_parameters_on_random_graphs(htc_backend):
    rng = np.random.default_rng(4)
    for g in random_graphs():
        for r in (htc_identify(g, backend=htc_backend), htc_identify(g, tian=True, backend=htc_backend),
                  edgewise_identify(g, backend=htc_backend)):
            check_identifier(r, rng)


def test_identifier_on_classic_graphs(htc_backend):
    iv = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    Lam = np.array([[0, 0.8, 0], [0, 0, -0.5], [0, 0, 0]])
    Om = np.array([[1.0, 0, 0], [0, 1.2, 0.4], [0, 0.4, 0.9]])
    A = np.linalg.inv(np.eye(3) - Lam)
    Sigma = A.T @ Om @ A
    L_hat, O_hat = htc_identify(iv, backend=htc_backend).identifier(Sigma)
    np.testing.assert_allclose(L_hat, Lam, atol=1e-12)
    np.testing.assert_allclose(O_hat, Om, atol=1e-12)
    # the instrument formula: lambda_12 = Sigma_02 / Sigma_01
    assert L_hat[1, 2] == pytest.approx(Sigma[0, 2] / Sigma[0, 1], rel=1e-12)
    # the bow: nothing about 0 -> 1 is identified, Omega_00 is
    bow = MixedGraph(2, directed=[(0, 1)], bidirected=[(0, 1)])
    L_hat, O_hat = htc_identify(bow, backend=htc_backend).identifier(np.array([[1.0, 0.5], [0.5, 2.0]]))
    assert np.isnan(L_hat[0, 1])
    assert L_hat[1, 0] == 0
    assert O_hat[0, 0] == pytest.approx(1.0)
    assert np.isnan(O_hat[1, 1])
    assert np.isnan(O_hat[0, 1])


def test_identifier_rejects_bad_sigma():
    iv = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    r = htc_identify(iv, backend="reference")
    good = np.eye(3) + 0.1
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        r.identifier(np.eye(2))
    with pytest.raises(ValueError, match="symmetric"):
        r.identifier(good + np.triu(np.ones((3, 3)), 1))
    bad = good.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        r.identifier(bad)
    with pytest.raises(ValueError, match="real"):
        r.identifier("sigma")
    # a covariance where the instrument is uncorrelated with the treatment: not generic
    with pytest.raises(ValueError, match="not generic"):
        r.identifier(np.diag([1.0, 2.0, 3.0]))
