r"""Ranks of submatrices of the half-trek matrix over :math:`\mathbb{F}_p` (the randomized tests).

Non-incremental and with Python integers: each test eliminates from scratch; the native core keeps
incremental echelon forms instead.
"""

from __future__ import annotations

from ._ref_modp import _rref


def _independent_rows(M: list[list[int]], rows: list[int], cols: list[int], p: int,
                      need: int) -> list[int]:
    """Greedy row basis of ``M[rows, cols]`` over F_p, scanning ``rows`` in order; stops at ``need`` rows.

    Returns the rows that raised the rank (so their submatrix is nonsingular when ``len == len(cols)``).
    """
    basis: list[tuple[int, list[int]]] = []  # (pivot column, row normalised to 1 at the pivot)
    chosen = []
    for r in rows:
        x = [M[r][c] for c in cols]
        for c, b in basis:
            f = x[c]
            if f:
                x = [(xi - f * bi) % p for xi, bi in zip(x, b)]
        piv = next((c for c, xi in enumerate(x) if xi), None)
        if piv is None:
            continue
        inv = pow(x[piv], p - 2, p)
        basis.append((piv, [xi * inv % p for xi in x]))
        chosen.append(r)
        if len(chosen) == need:
            break
    return chosen


def _unit_vectors_in_rowspace(M: list[list[int]], rows: list[int], cols: list[int], p: int) -> list[int]:
    """Columns ``w`` of ``cols`` with :math:`e_w` in the row space of ``M[rows, cols]`` over F_p.

    :math:`e_w` lies in the row space iff every null-space vector vanishes at :math:`w`, i.e. iff in the
    reduced row echelon form :math:`w` is a pivot column whose row is exactly :math:`e_w`.
    """
    R = [[M[r][c] for c in cols] for r in rows]
    pivots = _rref(R, p, ncols=len(cols))
    return [cols[c] for r, c in enumerate(pivots) if all(R[r][k] == 0 for k in range(len(cols)) if k != c)]
