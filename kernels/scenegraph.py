r"""Triton kernels of the contextual Hellinger triplet loss (:mod:`fastnips.scenegraph.contextual`): the predicate
Bhattacharyya coefficient of every (edge, subject class, object class) row, fused with the softmax (or the
sigmoids) of the predicate logits, so neither the probabilities nor their square roots exist in memory.

For a row of logits :math:`z \in \mathbb{R}^R` and the square roots of the target :math:`\sqrt{q}` (and
:math:`\sqrt{1 - q}` for multi-label predicates):

* categorical: :math:`p = \mathrm{softmax}(z)`, :math:`u_r = \sqrt{p_r q_r} = \exp(\tfrac12 \log p_r)\sqrt{q_r}`,
  :math:`c = \sum_r u_r`, and :math:`\partial c / \partial z_r = \tfrac12 (u_r - p_r c)`;
* multi-label (``mode="mean"``): :math:`p = \sigma(z)`, :math:`u_r = \sqrt{p_r q_r} + \sqrt{(1-p_r)(1-q_r)}`,
  :math:`c = \frac1R \sum_r u_r`, and :math:`\partial c / \partial z_r = \frac{1}{2R}\big(\sqrt{p_r}(1 - p_r)
  \sqrt{q_r} - \sqrt{1 - p_r}\, p_r \sqrt{1 - q_r}\big)`.

Rows are (E * C * C); the target of row k is row ``k // rows_per_target`` of the target roots (C * C when the
target predicate is per edge, 1 when it is per row). One program handles ``BLOCK_ROWS`` rows with all R
predicates in registers (R <= 1024). Computation in float32 (inputs float16, bfloat16 or float32).

Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_R = 1024


@triton.jit
def _load(l_ptr, sq_ptr, sq1_ptr, rows, R, rows_per_q, pid, MULTI: tl.constexpr, BLOCK_ROWS: tl.constexpr,
          BLOCK_R: tl.constexpr):
    offs = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    k = tl.arange(0, BLOCK_R)
    rmask = offs < rows
    kmask = k < R
    m = rmask[:, None] & kmask[None, :]
    z = tl.load(l_ptr + offs[:, None] * R + k[None, :], mask=m, other=0.0).to(tl.float32)
    qrow = offs // rows_per_q
    sq = tl.load(sq_ptr + qrow[:, None] * R + k[None, :], mask=m, other=0.0).to(tl.float32)
    sq1 = sq
    if MULTI:
        sq1 = tl.load(sq1_ptr + qrow[:, None] * R + k[None, :], mask=m, other=0.0).to(tl.float32)
    return offs, rmask, kmask, m, z, sq, sq1


@triton.jit
def _terms(z, kmask, sq, sq1, MULTI: tl.constexpr):
    """(u, a, b): the row terms u and, for multi-label rows, (log p, log(1 - p)); else (p, log p)."""
    if MULTI:
        ls = tl.minimum(z, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(z)))  # log sigmoid(z)
        lsn = ls - z  # log sigmoid(-z)
        u = tl.exp(0.5 * ls) * sq + tl.exp(0.5 * lsn) * sq1
        return tl.where(kmask[None, :], u, 0.0), ls, lsn
    zm = tl.where(kmask[None, :], z, float("-inf"))
    mx = tl.max(zm, 1)
    e = tl.exp(zm - mx[:, None])
    lse = tl.log(tl.sum(e, 1))
    lsm = zm - mx[:, None] - lse[:, None]
    u = tl.where(kmask[None, :], tl.exp(0.5 * lsm) * sq, 0.0)
    return u, tl.where(kmask[None, :], tl.exp(lsm), 0.0), lsm


@triton.jit
def _predicate_bc_fwd(l_ptr, sq_ptr, sq1_ptr, c_ptr, rows, R, rows_per_q, MULTI: tl.constexpr,
                      BLOCK_ROWS: tl.constexpr, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    offs, rmask, kmask, _, z, sq, sq1 = _load(l_ptr, sq_ptr, sq1_ptr, rows, R, rows_per_q, pid, MULTI, BLOCK_ROWS,
                                              BLOCK_R)
    u, _, _ = _terms(z, kmask, sq, sq1, MULTI)
    c = tl.sum(u, 1)
    if MULTI:
        c = c / R
    tl.store(c_ptr + offs, c, mask=rmask)


@triton.jit
def _predicate_bc_bwd(l_ptr, sq_ptr, sq1_ptr, g_ptr, dl_ptr, rows, R, rows_per_q, MULTI: tl.constexpr,
                      BLOCK_ROWS: tl.constexpr, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    offs, rmask, kmask, m, z, sq, sq1 = _load(l_ptr, sq_ptr, sq1_ptr, rows, R, rows_per_q, pid, MULTI, BLOCK_ROWS,
                                              BLOCK_R)
    g = tl.load(g_ptr + offs, mask=rmask, other=0.0).to(tl.float32)
    u, a, b = _terms(z, kmask, sq, sq1, MULTI)
    if MULTI:
        # sqrt(p)(1-p) sqrt(q) - sqrt(1-p) p sqrt(1-q), from a = log p and b = log(1 - p)
        d = tl.exp(0.5 * a + b) * sq - tl.exp(0.5 * b + a) * sq1
        d = 0.5 * d / R
    else:
        c = tl.sum(u, 1)
        d = 0.5 * (u - a * c[:, None])
    d = tl.where(kmask[None, :], d * g[:, None], 0.0)
    tl.store(dl_ptr + offs[:, None] * R + tl.arange(0, BLOCK_R)[None, :], d.to(dl_ptr.dtype.element_ty), mask=m)


def _launch_shape(rows: int, R: int) -> tuple[int, int, tuple]:
    block_r = max(triton.next_power_of_2(R), 2)
    block_rows = max(1, min(64, 4096 // block_r))
    return block_rows, block_r, (triton.cdiv(rows, block_rows),)


def predicate_bc_forward(z: torch.Tensor, sq: torch.Tensor, sq1: torch.Tensor | None, rows_per_q: int) -> torch.Tensor:
    """c (rows,) float32 from contiguous logits z (rows, R) and target roots sq, sq1 (rows // rows_per_q, R)."""
    rows, R = z.shape
    c = torch.empty(rows, device=z.device, dtype=torch.float32)
    if rows == 0:
        return c
    br, bk, grid = _launch_shape(rows, R)
    multi = sq1 is not None
    _predicate_bc_fwd[grid](z, sq, sq1 if multi else sq, c, rows, R, rows_per_q, MULTI=multi, BLOCK_ROWS=br,
                            BLOCK_R=bk)
    return c


def predicate_bc_backward(z: torch.Tensor, sq: torch.Tensor, sq1: torch.Tensor | None, rows_per_q: int,
                          g: torch.Tensor) -> torch.Tensor:
    """dL/dz (rows, R) in z's dtype from the upstream gradient g (rows,) of c."""
    rows, R = z.shape
    dz = torch.empty_like(z)
    if rows == 0:
        return dz
    br, bk, grid = _launch_shape(rows, R)
    multi = sq1 is not None
    _predicate_bc_bwd[grid](z, sq, sq1 if multi else sq, g.contiguous().float(), dz, rows, R, rows_per_q,
                            MULTI=multi, BLOCK_ROWS=br, BLOCK_R=bk)
    return dz
