r"""Reference implementations of :mod:`fastnips.graph`: plain numpy/scipy, the oracle for every backend.

Polynomials on the spectrum :math:`[0, 2]` of a normalized Laplacian come in two bases:

* ``"bernstein"``: :math:`p(\lambda) = \sum_{k=0}^K \theta_k B_k(\lambda)`,
  :math:`B_k(\lambda) = \binom{K}{k} (\lambda/2)^k (1 - \lambda/2)^{K-k}` (BernNet's basis);
* ``"monomial"``: :math:`p(\lambda) = \sum_{k=0}^K \theta_k \lambda^k`.

The solver here is :func:`tikhonov_solve_reference`: scipy's sparse direct solve of the assembled
operator for small graphs, scipy's conjugate gradients with a matrix-free operator otherwise. The oracle of
the batched dense method is :func:`dense_block_factors_reference` / :func:`dense_block_solve_reference`:
per block (graph), p(L_b) from the eigendecomposition of L_b and ``numpy.linalg.cholesky``.
"""

from __future__ import annotations

from math import comb

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

BASES = ("bernstein", "monomial")

#: The reference assembles p(L) + diag(q) and calls ``spsolve`` up to this many nodes; above, it runs
#: scipy ``cg`` with a matrix-free operator (p(L) never formed: its fill-in grows like d^K per row).
DIRECT_MAX_N = 2000


# ---------------------------------------------------------------------------------------------------
# polynomials


def bernstein_to_monomial(theta) -> np.ndarray:
    r"""Monomial coefficients :math:`a` with :math:`\sum_k \theta_k B_k(\lambda) = \sum_m a_m \lambda^m`.

    :math:`a_m = 2^{-m} \sum_{k \le m} \theta_k \binom{K}{k} \binom{K-k}{m-k} (-1)^{m-k}`.
    """
    theta = np.asarray(theta, dtype=np.float64)
    K = theta.shape[0] - 1
    a = np.zeros(K + 1)
    for m in range(K + 1):
        a[m] = sum(theta[k] * comb(K, k) * comb(K - k, m - k) * (-1) ** (m - k) for k in range(m + 1)) / 2.0**m
    return a


def monomial_to_bernstein(a) -> np.ndarray:
    r"""Bernstein coefficients on :math:`[0, 2]` of :math:`\sum_k a_k \lambda^k`.

    :math:`\theta_j = \sum_{k \le j} \binom{j}{k} \binom{K}{k}^{-1} 2^k a_k`. All :math:`\theta_j \ge 0`
    certifies :math:`p \ge 0` on :math:`[0, 2]` (the converse does not hold).
    """
    a = np.asarray(a, dtype=np.float64)
    K = a.shape[0] - 1
    return np.array([sum(comb(j, k) / comb(K, k) * 2.0**k * a[k] for k in range(j + 1)) for j in range(K + 1)])


def evaluate_polynomial_reference(coeffs, lam, basis: str = "bernstein") -> np.ndarray:
    """p(lam) for an array of lam: de Casteljau's algorithm (Bernstein), Horner's rule (monomial)."""
    c = np.asarray(coeffs, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    if basis == "bernstein":
        t = lam / 2.0
        b = np.broadcast_to(c.reshape((-1,) + (1,) * lam.ndim), (c.shape[0], *lam.shape)).copy()
        for r in range(1, c.shape[0]):
            b[: c.shape[0] - r] = (1.0 - t) * b[: c.shape[0] - r] + t * b[1 : c.shape[0] - r + 1]
        return b[0]
    if basis == "monomial":
        out = np.zeros_like(lam)
        for ck in c[::-1]:
            out = out * lam + ck
        return out
    raise ValueError(f"basis must be one of {BASES}, got {basis!r}")


def monomial_coefficients(coeffs, basis: str) -> np.ndarray:
    """The monomial coefficients of p, whatever its basis."""
    c = np.asarray(coeffs, dtype=np.float64)
    return bernstein_to_monomial(c) if basis == "bernstein" else c.copy()


# ---------------------------------------------------------------------------------------------------
# operators


def poly_matrix_reference(L, coeffs, basis: str = "bernstein") -> sp.csr_matrix:
    r"""p(L) assembled as a sparse matrix, from the definition of the basis.

    Bernstein: :math:`\sum_k \theta_k \binom{K}{k} (L/2)^k (I - L/2)^{K-k}`; monomial:
    :math:`\sum_k \theta_k L^k` (Horner). Fill-in grows like the K-hop neighbourhoods: small graphs only.
    """
    L = sp.csr_matrix(L, dtype=np.float64)
    n = L.shape[0]
    eye = sp.identity(n, format="csr")
    c = np.asarray(coeffs, dtype=np.float64)
    K = c.shape[0] - 1
    if basis == "bernstein":
        half, rest = L / 2.0, eye - L / 2.0
        pow_half = [eye]
        pow_rest = [eye]
        for _ in range(K):
            pow_half.append(pow_half[-1] @ half)
            pow_rest.append(pow_rest[-1] @ rest)
        P = sp.csr_matrix((n, n))
        for k in range(K + 1):
            if c[k] != 0.0:
                P = P + (c[k] * comb(K, k)) * (pow_half[k] @ pow_rest[K - k])
        return sp.csr_matrix(P)
    if basis == "monomial":
        P = c[K] * eye
        for k in range(K - 1, -1, -1):
            P = P @ L + c[k] * eye
        return sp.csr_matrix(P)
    raise ValueError(f"basis must be one of {BASES}, got {basis!r}")


def poly_apply_reference(L, coeffs, basis: str, V) -> np.ndarray:
    r"""p(L) V matrix-free: Horner's rule in the monomial basis, K sparse products."""
    a = monomial_coefficients(coeffs, basis)
    out = a[-1] * np.asarray(V, dtype=np.float64)
    for ak in a[-2::-1]:
        out = L @ out + ak * V
    return out


# ---------------------------------------------------------------------------------------------------
# the solve


def scaled_norms(B) -> np.ndarray:
    r"""Euclidean norm of every column of B (shape (n, F)), as :math:`m \|B_{:,c} / m\|_2` with
    :math:`m = \max |B_{:,c}|`: no square under- or overflows (``numpy.linalg.norm`` gives 0 for
    :math:`10^{-170} e_0`). Float64; 0 for a zero column."""
    B = np.asarray(B, dtype=np.float64)
    B = B.reshape(B.shape[0], -1)
    m = np.abs(B).max(axis=0, initial=0.0)
    safe = np.where(m > 0, m, 1.0)
    return m * np.sqrt(np.einsum("ij,ij->j", B / safe, B / safe))


def tikhonov_solve_reference(L, coeffs, q, X, *, basis: str = "bernstein", tol: float = 1e-10,
                             maxiter: int = 1000, direct_max_n: int | None = None):
    r"""Solve :math:`(p(L) + \mathrm{diag}(q)) Y = \mathrm{diag}(q) X` with scipy, in float64.

    Up to ``direct_max_n`` nodes (default :data:`DIRECT_MAX_N`) the operator is assembled
    (:func:`poly_matrix_reference`) and factorised once by ``scipy.sparse.linalg.spsolve`` for all
    columns; above, each column runs ``scipy.sparse.linalg.cg`` (``rtol=tol``, ``atol=0``, no
    preconditioner) on a matrix-free ``LinearOperator`` that applies p(L) by Horner's rule.

    Parameters
    ----------
    L : scipy.sparse matrix, shape (n, n)
    coeffs : array, shape (K + 1,)
    q : array, shape (n,), positive
    X : array, shape (n, F)
    basis : {"bernstein", "monomial"}
    tol : float
        Relative residual per column, for the ``cg`` path.
    maxiter : int
        Iterations per column, for the ``cg`` path.

    Returns
    -------
    Y : ndarray, shape (n, F), float64
    iterations : ndarray of int, shape (F,)
        CG iterations per column (0 on the direct path).
    residuals : ndarray of float, shape (F,)
        :math:`\|q \circ x - A y\| / \|q \circ x\|` per column (0 for a zero right-hand side).
    method : str
        ``"spsolve"`` or ``"cg"``.
    """
    L = sp.csr_matrix(L, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    n, F = X.shape
    B = q[:, None] * X
    limit = DIRECT_MAX_N if direct_max_n is None else direct_max_n
    iterations = np.zeros(F, dtype=np.int64)
    if n <= limit:
        A = (poly_matrix_reference(L, coeffs, basis) + sp.diags(q)).tocsc()
        Y = np.asarray(spla.spsolve(A, B)).reshape(n, F) if n else np.zeros((0, F))
        method = "spsolve"
        apply_A = lambda V: A @ V
    else:
        apply_A = lambda V: poly_apply_reference(L, coeffs, basis, V) + q.reshape((-1,) + (1,) * (V.ndim - 1)) * V
        op = spla.LinearOperator((n, n), matvec=lambda v: apply_A(np.asarray(v).ravel()), dtype=np.float64)
        Y = np.zeros((n, F))
        for c in range(F):
            if not np.any(B[:, c]):
                continue
            count = [0]

            def tick(_xk, count=count):
                count[0] += 1

            Y[:, c], _ = spla.cg(op, B[:, c], rtol=tol, atol=0.0, maxiter=maxiter, callback=tick)
            iterations[c] = count[0]
        method = "cg"
    bnorm = scaled_norms(B)
    rnorm = scaled_norms(B - apply_A(Y)) if n else np.zeros(F)
    residuals = np.divide(rnorm, bnorm, out=np.zeros(F), where=bnorm > 0)
    return Y, iterations, residuals, method


# ---------------------------------------------------------------------------------------------------
# the batched dense method (one block per graph)


def dense_block_factors_reference(L, coeffs, basis: str, q, order, offsets, labels=None) -> list[np.ndarray]:
    r"""Lower Cholesky factors :math:`C_b` of :math:`A_b = p(L_b) + \mathrm{diag}(q_b)`, one per block.

    Block b holds the nodes ``order[offsets[b]:offsets[b + 1]]`` (in that order); L must have no nonzero
    entry between two blocks (the caller checks). :math:`p(L_b) = U_b\, p(\Lambda_b)\, U_b^\top` from the
    eigendecomposition :math:`L_b = U_b \Lambda_b U_b^\top` (``numpy.linalg.eigh``, the definition of a
    matrix function, independent of any recurrence), then ``numpy.linalg.cholesky``. Float64.

    Raises
    ------
    ValueError
        When some :math:`A_b` is not positive definite, naming its graph (``labels[b]``, else b).
    """
    L = sp.csr_matrix(L, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    order, offsets = np.asarray(order), np.asarray(offsets)
    factors = []
    for b in range(offsets.shape[0] - 1):
        idx = order[offsets[b] : offsets[b + 1]]
        Lb = L[idx][:, idx].toarray()
        lam, U = np.linalg.eigh((Lb + Lb.T) / 2.0)
        A = (U * evaluate_polynomial_reference(coeffs, lam, basis)) @ U.T + np.diag(q[idx])
        try:
            factors.append(np.linalg.cholesky((A + A.T) / 2.0))
        except np.linalg.LinAlgError:
            label = b if labels is None else int(labels[b])
            raise ValueError(
                f"p(L) + diag(q) is not positive definite on graph {label} ({idx.size} nodes): numpy's Cholesky "
                "factorisation failed; L must be symmetric with its spectrum in [0, 2] (a normalized Laplacian), "
                "q > 0 and p >= 0 on [0, 2]") from None
    return factors


def dense_block_solve_reference(factors, order, offsets, B) -> np.ndarray:
    r""":math:`Y = A^{-1} B` block by block with the factors of :func:`dense_block_factors_reference`
    (``scipy.linalg.cho_solve``); B of shape (n, F), float64."""
    B = np.asarray(B, dtype=np.float64)
    Y = np.empty_like(B)
    order, offsets = np.asarray(order), np.asarray(offsets)
    for b, C in enumerate(factors):
        idx = order[offsets[b] : offsets[b + 1]]
        Y[idx] = sla.cho_solve((C, True), B[idx])
    return Y
