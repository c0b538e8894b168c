r"""The Gram-matching term of GRACE, computed block by block so that a batch of :math:`10^4` samples never forms
its :math:`B \times B` Gram matrices.

.. math:: \mathcal{G}(X, A) = \frac{1}{B^2} \big\lVert \hat X \hat X^\top - \hat A \hat A^\top \big\rVert_F^2,
          \qquad \hat x_i = x_i / \lVert x_i \rVert,\; \hat a_i = a_i / \max(\lVert a_i \rVert, \epsilon),

the mean squared difference between the cosine-similarity matrices of the embeddings and of their concept
codes (:math:`\hat a_i = 0` for an all-zero code). With :math:`D = \hat A \hat A^\top - \hat X \hat X^\top`
(symmetric), :math:`\partial \mathcal{G} / \partial \hat A = \frac{4}{B^2} D \hat A`, so forward and backward
both run over row blocks I and column blocks J of size ``block``, holding one :math:`|I| \times |J|` tile of D
at a time: memory :math:`O(\mathrm{block} \cdot B)` instead of :math:`O(B^2)`, and the same
:math:`O(B^2 (d + K))` arithmetic as the dense form. The normalisation of A is differentiated by autograd
around this function. The embeddings are constants (no gradient).

Backends (``backend=``, through :func:`fastnips._backend.resolve`): ``"reference"``, the blockwise torch loops
above (any device and dtype); ``"triton"``, :mod:`fastnips.kernels.gram`, value and gradient in one pass with
32 x 32 tiles (float32; CUDA tensors, or CPU tensors under ``TRITON_INTERPRET=1`` for the tests); ``"auto"``
picks Triton for float32 CUDA tensors.
"""

from __future__ import annotations

import os

import torch

from .. import _backend

#: Default rows per block.
BLOCK = 1024
#: The backends of :func:`gram_mismatch`.
GRAM_BACKENDS = ("reference", "triton")


def gram_mismatch_dense(Xn: torch.Tensor, An: torch.Tensor) -> torch.Tensor:
    """The dense oracle: ``((An An^T - Xn Xn^T) ** 2).mean()`` (forms both B x B matrices)."""
    return ((An @ An.T - Xn @ Xn.T) ** 2).mean()


class _GramMismatch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Xn, An, block):
        B = An.shape[0]
        total = An.new_zeros(())
        for i in range(0, B, block):
            ai, xi = An[i:i + block], Xn[i:i + block]
            for j in range(0, B, block):
                d = ai @ An[j:j + block].T - xi @ Xn[j:j + block].T
                total = total + (d * d).sum()
        ctx.save_for_backward(Xn, An)
        ctx.block = block
        return total / (B * B)

    @staticmethod
    def backward(ctx, g):
        Xn, An = ctx.saved_tensors
        B, block = An.shape[0], ctx.block
        grad = torch.empty_like(An)
        for i in range(0, B, block):
            ai, xi = An[i:i + block], Xn[i:i + block]
            acc = torch.zeros_like(ai)
            for j in range(0, B, block):
                aj = An[j:j + block]
                acc += (ai @ aj.T - xi @ Xn[j:j + block].T) @ aj
            grad[i:i + block] = acc
        return None, grad * (4 * g / (B * B)), None


class _GramMismatchTriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Xn, An):
        from ..kernels import gram as kg  # lazy: defining kernels reads TRITON_INTERPRET

        B = An.shape[0]
        total, grad = kg.gram_value_and_grad(Xn.contiguous(), An.contiguous())
        ctx.save_for_backward(grad)
        ctx.B = B
        return total / (B * B)

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return None, grad * (4 * g / (ctx.B * ctx.B))


def _triton_check(A: torch.Tensor):
    def check(name: str) -> str:
        if name != "triton":
            return ""
        if not (A.is_cuda or (A.device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "") not in ("", "0"))):
            return f"the triton kernel runs on CUDA tensors (or CPU tensors under TRITON_INTERPRET=1), got {A.device}"
        if A.dtype != torch.float32:
            return f"the triton kernel takes float32, got {A.dtype}"
        return ""

    return check


def normalize_rows(M: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Rows divided by their norm (rows of norm below ``eps`` become 0, with a finite gradient)."""
    n = M.norm(dim=1, keepdim=True)
    return M / n.clamp(min=eps)


def gram_mismatch(X: torch.Tensor, A: torch.Tensor, *, block: int = BLOCK, backend: str = "auto") -> torch.Tensor:
    r"""Blockwise mean squared difference of the cosine Gram matrices of X and A (module docstring).

    Parameters
    ----------
    X : torch.Tensor, shape (B, d)
        Embeddings (treated as constants).
    A : torch.Tensor, shape (B, K)
        Concept codes; the gradient flows to A.
    block : int, default 1024
        Rows per block of the reference: peak extra memory about ``block * B`` numbers.
    backend : {"auto", "reference", "triton"}, default "auto"

    Returns
    -------
    torch.Tensor
        A scalar in [0, 4].

    Examples
    --------
    >>> import torch
    >>> X = torch.randn(50, 8); A = torch.relu(torch.randn(50, 20))
    >>> d = gram_mismatch(X, A, block=7)
    >>> bool(torch.isclose(d, gram_mismatch_dense(normalize_rows(X), normalize_rows(A))))
    True
    """
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive integer, got {block!r}")
    if X.dim() != 2 or A.dim() != 2 or X.shape[0] != A.shape[0]:
        raise ValueError(f"X (B, d) and A (B, K) must be matrices with the same number of rows, got {tuple(X.shape)} "
                         f"and {tuple(A.shape)}")
    if X.dtype != A.dtype or X.device != A.device:
        raise ValueError(f"X and A must share dtype and device, got {X.dtype} on {X.device} and {A.dtype} on "
                         f"{A.device}")
    backend = _backend.resolve(backend, op="gram_mismatch", supported=GRAM_BACKENDS, like=A, check=_triton_check(A))
    Xn, An = normalize_rows(X.detach()), normalize_rows(A)
    if backend == "triton":
        return _GramMismatchTriton.apply(Xn, An)
    return _GramMismatch.apply(Xn, An, block)
