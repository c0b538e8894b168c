r"""Triton kernel of GRACE's Gram-matching term (:mod:`fastnips.concepts.gram`): the value and the gradient in one
pass, block by block, without any :math:`B \times B` matrix.

For unit-row matrices :math:`\hat X` (B, d) and :math:`\hat A` (B, K), one program owns a block I of
``BLOCK_I`` rows and walks over the column blocks J:

.. math:: D_{IJ} = \hat A_I \hat A_J^\top - \hat X_I \hat X_J^\top, \qquad
          s_I = \sum_J \lVert D_{IJ} \rVert_F^2, \qquad G_I = \sum_J D_{IJ} \hat A_J,

with the two products accumulated over ``BLOCK_D`` / ``BLOCK_K`` slices (``tl.dot`` with
``input_precision="ieee"``: no TF32), and :math:`G_I` added into its rows of the output slice by slice (the
program is the only writer of rows I, so no atomics). The caller sums :math:`s_I` into
:math:`\lVert D \rVert_F^2` and scales :math:`G` by :math:`4 / B^2` for the gradient of the mean. float32 only.

Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _gram_kernel(x_ptr, a_ptr, s_ptr, g_ptr, B, d, K, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr,
                 BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    ri = pid * BLOCK_I + tl.arange(0, BLOCK_I)
    mi = ri < B
    total = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for j0 in range(0, B, BLOCK_J):
        rj = j0 + tl.arange(0, BLOCK_J)
        mj = rj < B
        acc = tl.zeros((BLOCK_I, BLOCK_J), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ck = k0 + tl.arange(0, BLOCK_K)
            mk = ck < K
            ai = tl.load(a_ptr + ri[:, None] * K + ck[None, :], mask=mi[:, None] & mk[None, :], other=0.0)
            aj = tl.load(a_ptr + rj[:, None] * K + ck[None, :], mask=mj[:, None] & mk[None, :], other=0.0)
            acc += tl.dot(ai, tl.trans(aj), input_precision="ieee")
        for k0 in range(0, d, BLOCK_D):
            cd = k0 + tl.arange(0, BLOCK_D)
            md = cd < d
            xi = tl.load(x_ptr + ri[:, None] * d + cd[None, :], mask=mi[:, None] & md[None, :], other=0.0)
            xj = tl.load(x_ptr + rj[:, None] * d + cd[None, :], mask=mj[:, None] & md[None, :], other=0.0)
            acc -= tl.dot(xi, tl.trans(xj), input_precision="ieee")
        acc = tl.where(mi[:, None] & mj[None, :], acc, 0.0)
        total += tl.sum(acc * acc, 1)
        for k0 in range(0, K, BLOCK_K):
            ck = k0 + tl.arange(0, BLOCK_K)
            mk = ck < K
            aj = tl.load(a_ptr + rj[:, None] * K + ck[None, :], mask=mj[:, None] & mk[None, :], other=0.0)
            gp = g_ptr + ri[:, None] * K + ck[None, :]
            m2 = mi[:, None] & mk[None, :]
            tl.store(gp, tl.load(gp, mask=m2, other=0.0) + tl.dot(acc, aj, input_precision="ieee"), mask=m2)
    tl.store(s_ptr + ri, total, mask=mi)


def gram_value_and_grad(Xn: torch.Tensor, An: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum of squares of D, D @ An) for contiguous float32 Xn (B, d) and An (B, K) on one device."""
    B, d = Xn.shape
    K = An.shape[1]
    s = torch.empty(B, device=An.device, dtype=torch.float32)
    g = torch.zeros(B, K, device=An.device, dtype=torch.float32)
    if B == 0:
        return s.sum(), g
    BI = BJ = 32
    _gram_kernel[(triton.cdiv(B, BI),)](Xn, An, s, g, B, d, K, BLOCK_I=BI, BLOCK_J=BJ, BLOCK_D=32, BLOCK_K=32)
    return s.sum(), g
