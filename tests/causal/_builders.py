"""Builders shared by the tests of tests/causal: SEMID's answers, random graphs and parameters, and the
check that an identification result recovers the parameters it claims."""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

from fastnips.causal import IdentificationResult, MixedGraph

DATA = Path(__file__).resolve().parent / "data"  # SEMID 0.4.2's answers (see data/README.md)

# SEMID from FASTNIPS_SEMID_LIB (default /opt/R-semid) or R's own library, as bench/causal/semid_driver.R
SEMID_LIB = r""".libPaths(c(Sys.getenv("FASTNIPS_SEMID_LIB", "/opt/R-semid"), .libPaths()))
"""


@cache
def semid_installed() -> bool:
    """Whether Rscript runs with the SEMID and jsonlite packages (the live-SEMID tests skip otherwise)."""
    if shutil.which("Rscript") is None:
        return False
    r = subprocess.run(["Rscript", "-e", SEMID_LIB + "library(SEMID); library(jsonlite)"], capture_output=True)
    return r.returncode == 0


def _load(name: str) -> list[dict]:
    with open(DATA / name) as fh:
        return [json.loads(line) for line in fh if line.strip()]


CASES = _load("semid_cases_public.jsonl")
EXHAUSTIVE_N3 = _load("semid_exhaustive_n3.jsonl")
for _k, _r in enumerate(EXHAUSTIVE_N3):
    _r.setdefault("id", f"n3_{_k:03d}")


def graph_of(case: dict) -> MixedGraph:
    return MixedGraph(case["n"], case["directed"], case["bidirected"])


def random_mixed_graph(rng: np.random.Generator, n: int, p_dir: float, p_bi: float, *,
                       acyclic: bool = False, bow_free: bool = False) -> MixedGraph:
    """Random mixed graph; acyclic ones get a random topological order; bow-free drops bidirected edges
    that share a pair with a directed edge."""
    directed = [(i, j) for i in range(n) for j in range(n)
                if i != j and (not acyclic or i < j) and rng.random() < p_dir]
    pairs = {(min(e), max(e)) for e in directed}
    bidirected = [(i, j) for i in range(n) for j in range(i + 1, n)
                  if rng.random() < p_bi and not (bow_free and (i, j) in pairs)]
    g = MixedGraph(n, directed, bidirected)
    if acyclic:
        g = g.permute(rng.permutation(n).tolist())
    return g


def random_parameters(rng: np.random.Generator, g: MixedGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Lambda, Omega, Sigma) with edge weights of modulus in [0.2, 0.9], a diagonally dominant Omega and
    Sigma = (I - Lambda)^{-T} Omega (I - Lambda)^{-1}."""
    n = g.n
    while True:
        Lam = np.zeros((n, n))
        for i, j in g.directed:
            Lam[i, j] = rng.uniform(0.2, 0.9) * rng.choice([-1.0, 1.0])
        IL = np.eye(n) - Lam
        if n == 0 or np.linalg.cond(IL) < 1e4:
            break
    Om = np.zeros((n, n))
    for i, j in g.bidirected:
        Om[i, j] = Om[j, i] = rng.uniform(-0.6, 0.6)
    Om[np.diag_indices(n)] = np.abs(Om).sum(axis=1) + rng.uniform(0.5, 1.5, size=n)
    A = np.linalg.inv(IL)
    Sigma = A.T @ Om @ A
    return Lam, Om, 0.5 * (Sigma + Sigma.T)


@cache
def random_graphs() -> tuple[MixedGraph, ...]:
    rng = np.random.default_rng(20260501)
    out = []
    for k in range(160):
        n = int(rng.integers(1, 13))
        p_dir = float(rng.choice([0.1, 0.2, 0.3, 0.45]))
        p_bi = float(rng.choice([0.0, 0.1, 0.25, 0.5]))
        out.append(random_mixed_graph(rng, n, p_dir, p_bi, acyclic=k % 3 == 0))
    return tuple(out)


def check_identifier(r: IdentificationResult, rng: np.random.Generator, tol: float = 1e-8) -> None:
    """``r.identifier`` recovers the identified entries of random parameters and marks the rest NaN."""
    g = r.graph
    Lam, Om, Sigma = random_parameters(rng, g)
    L_hat, O_hat = r.identifier(Sigma)
    assert L_hat.shape == (g.n, g.n)
    assert O_hat.shape == (g.n, g.n)
    edge = np.zeros((g.n, g.n), dtype=bool)
    for (i, j), s in zip(g.directed, r.edge_solved):
        edge[i, j] = True
        if s:
            assert abs(L_hat[i, j] - Lam[i, j]) <= tol * max(1.0, abs(Lam[i, j])), (g, i, j)
        else:
            assert np.isnan(L_hat[i, j]), (g, i, j)
    assert np.all(L_hat[~edge] == 0)
    known = r.node_solved
    sib = np.eye(g.n, dtype=bool)
    for i, j in g.bidirected:
        sib[i, j] = sib[j, i] = True
    assert np.all(O_hat[~sib] == 0)
    both = np.outer(known, known) & sib
    assert np.all(np.isnan(O_hat[sib & ~both])), g
    scale = np.maximum(1.0, np.abs(Om))
    assert np.all(np.abs(O_hat[both] - Om[both]) <= tol * scale[both]), g
