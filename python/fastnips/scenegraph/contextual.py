r"""The hot path of the contextual form: the predicate Bhattacharyya coefficient of every (edge, subject class,
object class) from the predicate logits,

.. math:: c_{e s o} = BC\big(P_e(\cdot \mid s, o), Q_e(\cdot \mid s, o)\big), \qquad
          P_e(\cdot \mid s, o) = \mathrm{softmax}(z_{e s o \cdot}) \text{ (or sigmoids, multi-label)},

shape (E, C, C) from logits (E, C, C, R): the :math:`O(C^2 R)` part of the contextual triplet BC
(:mod:`fastnips.scenegraph.metric`); the remaining :math:`\sum_{s,o} a_{es} b_{eo} c_{eso}` is one einsum of
:math:`O(C^2)` per edge.

Backends (``backend=``, through :func:`fastnips._backend.resolve`):

``"reference"``
    torch: :math:`\sqrt{p} = \exp(\tfrac12 \log\mathrm{softmax}(z))` (or log-sigmoids), times the target roots,
    summed; autograd through torch. Materialises two (E, C, C, R) temporaries. Any floating dtype, any device.
``"triton"``
    :mod:`fastnips.kernels.scenegraph`: softmax (sigmoids), square roots, product with the target roots and the
    sum fused in one pass per row, forward and backward (its own kernel; the derivative is in the kernel's
    docstring), so no (E, C, C, R) temporary exists. float16 / bfloat16 / float32 logits, computed in float32;
    multi-label only in ``"mean"`` mode; the target is a constant (no gradient). CUDA tensors, or CPU tensors
    under ``TRITON_INTERPRET=1`` (tests).
``"auto"``
    ``"triton"`` for CUDA tensors it can take, else ``"reference"``.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from .. import _backend

#: The backends of :func:`predicate_bc`.
CONTEXTUAL_BACKENDS = ("reference", "triton")
_OP = "contextual predicate BC"


def _target_roots(q: torch.Tensor, multilabel: bool, dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
    q = q.to(dtype)
    return (torch.sqrt(q), torch.sqrt(1 - q)) if multilabel else (torch.sqrt(q), None)


def predicate_bc_reference(z: torch.Tensor, q: torch.Tensor, *, multilabel: bool = False,
                           mode: str = "mean") -> torch.Tensor:
    """The torch form (module docstring); q is (E, R) (broadcast over (s, o)) or (E, C, C, R)."""
    sq, sq1 = _target_roots(q, multilabel, z.dtype)
    if q.dim() == 2:
        sq = sq[:, None, None, :]
        sq1 = None if sq1 is None else sq1[:, None, None, :]
    if not multilabel:
        return (torch.exp(0.5 * F.log_softmax(z, dim=-1)) * sq).sum(-1)
    u = torch.exp(0.5 * F.logsigmoid(z)) * sq + torch.exp(0.5 * F.logsigmoid(-z)) * sq1
    return u.mean(-1) if mode == "mean" else u.prod(-1)


class _PredicateBcTriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, sq, sq1, rows_per_q):
        from ..kernels import scenegraph as ks  # lazy: defining kernels reads TRITON_INTERPRET

        z2 = z.reshape(-1, z.shape[-1]).contiguous()
        c = ks.predicate_bc_forward(z2, sq, sq1, rows_per_q)
        ctx.save_for_backward(z2, sq, *(() if sq1 is None else (sq1,)))
        ctx.rows_per_q, ctx.zshape, ctx.multi = rows_per_q, z.shape, sq1 is not None
        return c.reshape(z.shape[:-1]).to(z.dtype)

    @staticmethod
    def backward(ctx, g):
        from ..kernels import scenegraph as ks

        z2, sq, *rest = ctx.saved_tensors
        sq1 = rest[0] if ctx.multi else None
        dz = ks.predicate_bc_backward(z2, sq, sq1, ctx.rows_per_q, g.reshape(-1))
        return dz.reshape(ctx.zshape), None, None, None


def _triton_check(z: torch.Tensor, q: torch.Tensor, multilabel: bool, mode: str):
    def check(name: str) -> str:
        if name != "triton":
            return ""
        if not (z.is_cuda or (z.device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "") not in ("", "0"))):
            return f"the triton kernel runs on CUDA tensors (or CPU tensors under TRITON_INTERPRET=1), got {z.device}"
        if z.dtype not in (torch.float16, torch.bfloat16, torch.float32):
            return f"the triton kernel takes float16, bfloat16 or float32 logits, got {z.dtype}"
        if multilabel and mode != "mean":
            return "the triton kernel computes the multi-label 'mean' mode only"
        if q.requires_grad:
            return "the triton kernel treats the target as a constant; this target requires grad"
        if z.shape[-1] > 1024:
            return f"the triton kernel takes at most 1024 predicates, got {z.shape[-1]}"
        return ""

    return check


def predicate_bc(z: torch.Tensor, q: torch.Tensor, *, multilabel: bool = False, mode: str = "mean",
                 backend: str = "auto") -> torch.Tensor:
    r"""Per-(edge, subject class, object class) predicate BC from logits (module docstring).

    Parameters
    ----------
    z : torch.Tensor, shape (E, C, C, R)
        Predicate logits conditioned on the subject and object classes.
    q : torch.Tensor, shape (E, R) or (E, C, C, R)
        Target predicate probabilities (label probabilities for ``multilabel``), per edge or per (s, o).
    multilabel : bool, default False
    mode : {"mean", "joint"}, default "mean"
    backend : {"auto", "reference", "triton"}, default "auto"

    Returns
    -------
    torch.Tensor, shape (E, C, C)
        In z's dtype; differentiable in z.

    Examples
    --------
    >>> import torch
    >>> z = torch.zeros(1, 2, 2, 3); q = torch.full((1, 3), 1 / 3)
    >>> torch.allclose(predicate_bc(z, q), torch.ones(1, 2, 2))
    True
    """
    backend = _backend.resolve(backend, op=_OP, supported=CONTEXTUAL_BACKENDS, like=z,
                               check=_triton_check(z, q, multilabel, mode))
    if backend == "reference":
        return predicate_bc_reference(z, q, multilabel=multilabel, mode=mode)
    C, R = z.shape[1], z.shape[-1]
    sq, sq1 = _target_roots(q.detach(), multilabel, torch.float32)
    rows_per_q = C * C if q.dim() == 2 else 1
    return _PredicateBcTriton.apply(z, sq.reshape(-1, R).contiguous(),
                                    None if sq1 is None else sq1.reshape(-1, R).contiguous(), rows_per_q)
