r"""Arithmetic over :math:`\mathbb{F}_p` and the random point of the randomized tests.

The randomized HTC and edgewise tests evaluate the half-trek matrix
:math:`M = \Omega (I-\Lambda)^{-1}` at a uniformly random point of :math:`\mathbb{F}_p`: entry
:math:`M_{yw}` is the sum over half-treks :math:`y \rightsquigarrow w` of their monomials (Foygel, Draisma
& Drton 2012, Lemma 2), so ranks of submatrices of :math:`M` are generic ranks with one-sided error
(Schwartz-Zippel).  Same seam as the native core's "modular arithmetic and RNG" section.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._ref_mixed_graph import _G

DEFAULT_PRIME = (1 << 61) - 1
"""The Mersenne prime :math:`2^{61} - 1` used by the randomized rank test."""


@lru_cache(maxsize=64)
def _is_prime(p: int) -> bool:
    """Deterministic Miller-Rabin for p < 3.3e24 (covers every 64-bit integer)."""
    if p < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for q in small:
        if p % q == 0:
            return p == q
    d, r = p - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in small:
        x = pow(a, d, p)
        if x in (1, p - 1):
            continue
        for _ in range(r - 1):
            x = x * x % p
            if x == p - 1:
                break
        else:
            return False
    return True


def _check_method_prime(method: str, prime: int) -> None:
    if method not in ("randomized", "maxflow"):
        raise ValueError(f"method must be 'randomized' or 'maxflow', got {method!r}")
    if not _is_prime(int(prime)) or not 3 <= int(prime) < 1 << 62:
        raise ValueError(f"prime must be a prime number p with 3 <= p < 2**62, got {prime!r}")


def _rref(R: list[list[int]], p: int, ncols: int | None = None) -> list[int]:
    """Reduce ``R`` (a list of rows, changed in place) to reduced row echelon form over F_p.

    Only the first ``ncols`` columns (default: all) are used as pivots; returns the pivot columns, the
    pivot of row ``k`` being the ``k``-th entry.
    """
    m = len(R[0]) if R else 0
    pivots: list[int] = []
    rank = 0
    for c in range(m if ncols is None else ncols):
        piv = next((r for r in range(rank, len(R)) if R[r][c]), None)
        if piv is None:
            continue
        R[rank], R[piv] = R[piv], R[rank]
        inv = pow(R[rank][c], p - 2, p)
        R[rank] = [x * inv % p for x in R[rank]]
        for r in range(len(R)):
            f = R[r][c]
            if r != rank and f:
                R[r] = [(x - f * y) % p for x, y in zip(R[r], R[rank])]
        pivots.append(c)
        rank += 1
    return pivots


def _inverse_mod_p(A: list[list[int]], p: int) -> list[list[int]] | None:
    """Gauss-Jordan inverse of a square matrix over F_p; ``None`` if singular."""
    n = len(A)
    M = [row[:] + [int(i == j) for j in range(n)] for i, row in enumerate(A)]
    if len(_rref(M, p, ncols=n)) < n:
        return None
    return [row[n:] for row in M]


def _random_half_trek_matrix(g: _G, seed: int, prime: int) -> list[list[int]]:
    r"""Draw :math:`\Lambda, \Omega` uniformly from :math:`\{1, \dots, p-1\}` on the edges and return
    :math:`M = \Omega (I - \Lambda)^{-1} \bmod p`, redrawing while :math:`\det(I-\Lambda) \equiv 0`."""
    n = g.n
    rng = np.random.default_rng(seed)
    for _attempt in range(1000):
        lam = [int(x) for x in rng.integers(1, prime, size=len(g.directed))]
        omega_off = [int(x) for x in rng.integers(1, prime, size=len(g.bidirected))]
        omega_diag = [int(x) for x in rng.integers(1, prime, size=n)]
        I_minus_L = [[int(i == j) for j in range(n)] for i in range(n)]
        for (i, j), x in zip(g.directed, lam):
            I_minus_L[i][j] = (-x) % prime
        inv = _inverse_mod_p(I_minus_L, prime)
        if inv is not None:
            break
    else:
        raise ValueError(f"prime={prime} is too small for this graph: det(I - Lambda) vanished mod p in "
                         "1000 draws")
    Omega = [[0] * n for _ in range(n)]
    for i in range(n):
        Omega[i][i] = omega_diag[i]
    for (i, j), x in zip(g.bidirected, omega_off):
        Omega[i][j] = Omega[j][i] = x
    # M = Omega @ inv (mod p), exploiting the sparsity of Omega
    M = []
    for y in range(n):
        row = [0] * n
        for u in [y, *g.sib[y]]:
            w = Omega[y][u]
            inv_u = inv[u]
            row = [(r + w * x) % prime for r, x in zip(row, inv_u)]
        M.append(row)
    return M
