r"""Recover :math:`\Lambda` and :math:`\Omega` from a covariance matrix, following an identification run.

Given :math:`\Sigma = (I-\Lambda)^{-T}\Omega(I-\Lambda)^{-1}` and the certificate of an identification run
(solve order and source sets :math:`Y_v`, or edgewise steps), these functions evaluate the rational maps
that the criteria prove to exist.  Entries that are not identified are ``NaN``; entries that are zero by
the graph's structure (no edge) are exactly ``0``.

* HTC (Foygel, Draisma & Drton 2012, Thm 1; SEMID ``createHtcIdentifier``): for :math:`v` in solve order,
  with :math:`\tilde\Sigma_{y,\cdot} = ((I-\Lambda)^T\Sigma)_{y,\cdot}` for :math:`y \in Y_v \cap
  \mathrm{htr\_from}(v)` (their columns of :math:`\Lambda` are already known) and
  :math:`\tilde\Sigma_{y,\cdot} = \Sigma_{y,\cdot}` for the other sources,

  .. math:: \lambda_{\mathrm{pa}(v), v} = \tilde\Sigma_{Y_v, \mathrm{pa}(v)}^{-1}\, \tilde\Sigma_{Y_v, v}.

* Edgewise (Weihs et al. 2018; SEMID ``createEdgewiseIdentifier``): for a step :math:`(v, S, Y)`, with
  :math:`\tilde\Sigma_{y,\cdot} = \Sigma_{y,\cdot} - \Lambda_{R_y, y}^T \Sigma_{R_y,\cdot}` where :math:`R_y`
  are the parents of :math:`y` already solved at that step, and :math:`Q` the already-solved parents of
  :math:`v`,

  .. math:: \lambda_{S, v} = \tilde\Sigma_{Y,S}^{-1}\bigl(\tilde\Sigma_{Y,v} - \tilde\Sigma_{Y,Q}\lambda_{Q,v}\bigr).

* Tian mode (Tian 2005; SEMID ``tianIdentifier``): each c-component :math:`C` gets the covariance
  :math:`\Sigma_C` of its component graph (:func:`tian_sigma`) and the HTC map above runs there.

* :math:`\Omega`: :math:`\Omega = (I-\Lambda)^T\Sigma(I-\Lambda)`, and entry :math:`(i,j)` only involves
  columns :math:`i, j` of :math:`\Lambda`; so :math:`\omega_{ij}` is returned whenever both columns are
  fully identified.  SEMID returns :math:`\Omega` only when all of :math:`\Lambda` is identified; the two
  agree whenever the graph is identifiable and this one is more informative otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .reference import _G, component_graph, htr_from, tian_decompose

__all__ = ["edgewise_lambda", "htc_lambda", "omega_from_lambda", "tian_lambda", "tian_sigma",
           "validate_sigma"]

_COND_LIMIT = 1e12


def validate_sigma(Sigma: Any, n: int) -> np.ndarray:
    """Check ``Sigma`` is a finite, symmetric ``(n, n)`` real matrix and return it as float64."""
    try:
        S = np.asarray(Sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Sigma must be a real (n, n) matrix, got {type(Sigma).__name__}") from None
    if S.ndim != 2 or S.shape != (n, n):
        raise ValueError(f"Sigma must have shape ({n}, {n}) for this graph, got {S.shape}")
    if not np.all(np.isfinite(S)):
        raise ValueError("Sigma contains NaN or inf")
    scale = float(np.max(np.abs(S))) if S.size else 0.0
    if not np.allclose(S, S.T, rtol=1e-8, atol=1e-12 * scale):
        i, j = np.unravel_index(np.argmax(np.abs(S - S.T)), S.shape)
        raise ValueError(f"Sigma must be symmetric: Sigma[{i}, {j}] = {S[i, j]!r} but "
                         f"Sigma[{j}, {i}] = {S[j, i]!r}")
    return S


def _empty_lambda(g: _G) -> np.ndarray:
    Lam = np.zeros((g.n, g.n))
    for i, j in g.directed:
        Lam[i, j] = np.nan
    return Lam


def _solve(A: np.ndarray, b: np.ndarray, v: int) -> np.ndarray:
    if A.size and np.linalg.cond(A) > _COND_LIMIT:
        raise ValueError(f"Sigma is not generic for this graph: the linear system identifying the edges "
                         f"into node {v} is (nearly) singular (condition number {np.linalg.cond(A):.3g})")
    return np.linalg.solve(A, b)


def htc_lambda(g: _G, Sigma: np.ndarray, order: Any, sources: Any) -> np.ndarray:
    r"""Evaluate the HTC identification map (FDD Thm 1) along ``order`` with source sets ``sources``."""
    Lam = _empty_lambda(g)
    for v in order:
        P = g.pa[v]
        if not P:
            continue
        Y = list(sources[v])
        if len(Y) != len(P):
            raise RuntimeError(f"backend returned sources {Y} for node {v} with parents {list(P)}: the sizes "
                               "differ (HTC needs |Y_v| = |pa(v)|)")
        H = htr_from(g, v)
        rows = []
        for y in Y:
            if y in H:
                col = Lam[:, y]
                if np.any(np.isnan(col)):
                    raise RuntimeError(f"backend returned source {y} for node {v}, but {y} is half-trek "
                                       f"reachable from {v} and was not solved before {v}")
                rows.append(Sigma[y] - col @ Sigma)
            else:
                rows.append(Sigma[y])
        SM = np.array(rows)
        Lam[list(P), v] = _solve(SM[:, list(P)], SM[:, v], v)
    return Lam


def edgewise_lambda(g: _G, Sigma: np.ndarray, steps: Any) -> np.ndarray:
    r"""Evaluate the edgewise identification map (Weihs et al. 2018) along ``steps`` ``(v, S, Y)``."""
    Lam = _empty_lambda(g)
    solved_pa: list[list[int]] = [[] for _ in range(g.n)]
    for v, S, Y in steps:
        S, Y = list(S), list(Y)
        if len(S) != len(Y):
            raise RuntimeError(f"backend returned an edgewise step for node {v} with |S| != |Y| ({S}, {Y})")
        SM = np.array(Sigma[Y], dtype=np.float64).reshape(len(Y), g.n)
        for k, y in enumerate(Y):
            R = solved_pa[y]
            if R:
                SM[k] = Sigma[y] - Lam[R, y] @ Sigma[R]
        rhs = SM[:, v].copy()
        Q = solved_pa[v]
        if Q:
            rhs -= SM[:, Q] @ Lam[Q, v]
        Lam[S, v] = _solve(SM[:, S], rhs, v)
        solved_pa[v] = sorted(set(solved_pa[v]) | set(S))
    return Lam


def tian_sigma(Sigma: np.ndarray, internal: list[int], incoming: list[int], top_order: list[int]) -> np.ndarray:
    r"""Covariance of a Tian component graph (SEMID ``tianSigmaForComponent``; Tian 2005).

    With :math:`(u_1, \dots, u_m)` = ``top_order``, the component's Gaussian density is
    :math:`\prod_{u_k \in C} p(u_k \mid u_1, \dots, u_{k-1}) \prod_{u \in \mathrm{incoming}} \phi(u)`:
    every internal node keeps its conditional given its predecessors, incoming nodes become independent
    standard normals.  In precision form, internal :math:`u_k` adds :math:`a a^T / s^2` with
    :math:`a_k = 1`, :math:`a_{<k} = -\Sigma_{<k,<k}^{-1}\Sigma_{<k,k}` and
    :math:`s^2 = \Sigma_{kk} - \Sigma_{k,<k}\Sigma_{<k,<k}^{-1}\Sigma_{<k,k}`; incoming nodes add
    :math:`e e^T`.  Returns the inverse, indexed like ``top_order``.
    """
    idx = list(top_order)
    if not incoming:
        return Sigma[np.ix_(idx, idx)].copy()
    m = len(idx)
    internal_set = set(internal)
    K = np.zeros((m, m))
    for k, u in enumerate(idx):
        if u in internal_set:
            prev = idx[:k]
            a = np.zeros(m)
            a[k] = 1.0
            if prev:
                beta = np.linalg.solve(Sigma[np.ix_(prev, prev)], Sigma[prev, u])
                s2 = Sigma[u, u] - Sigma[u, prev] @ beta
                a[:k] = -beta
            else:
                s2 = Sigma[u, u]
            K += np.outer(a, a) / s2
        else:
            K[k, k] += 1.0
    return np.linalg.inv(K)


def tian_lambda(g: _G, Sigma: np.ndarray, order: Any, sources: Any) -> np.ndarray:
    """HTC identification per Tian component; ``order``/``sources`` as returned with ``tian=True``."""
    Lam = _empty_lambda(g)
    comps, component = tian_decompose(g)
    for c, comp in enumerate(comps):
        lg, nodes = component_graph(g, comp)
        local = {v: k for k, v in enumerate(nodes)}
        lorder = [local[v] for v in order if component[v] == c]
        lsources: list[list[int]] = [[] for _ in nodes]
        for v in comp["internal"]:
            lsources[local[v]] = [local[y] for y in sources[v]]
        Sc = tian_sigma(Sigma, comp["internal"], comp["incoming"], nodes)
        lLam = htc_lambda(lg, Sc, lorder, lsources)
        for v in comp["internal"]:
            for p in g.pa[v]:
                Lam[p, v] = lLam[local[p], local[v]]
    return Lam


def omega_from_lambda(g: _G, Sigma: np.ndarray, Lam: np.ndarray) -> np.ndarray:
    r""":math:`\omega_{ij} = [(I-\Lambda)^T\Sigma(I-\Lambda)]_{ij}` where columns :math:`i, j` of
    :math:`\Lambda` are known, exact zeros off the bidirected edges, ``NaN`` elsewhere."""
    n = g.n
    Om = np.full((n, n), np.nan)
    known = ~np.isnan(Lam).any(axis=0)
    ks = np.flatnonzero(known)
    if ks.size:
        B = np.eye(n)[:, ks] - Lam[:, ks]
        Om[np.ix_(ks, ks)] = B.T @ Sigma @ B
    structural = np.ones((n, n), dtype=bool)
    np.fill_diagonal(structural, False)
    for i, j in g.bidirected:
        structural[i, j] = structural[j, i] = False
    Om[structural] = 0.0
    return 0.5 * (Om + Om.T)
