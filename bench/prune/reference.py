r"""Plain-PyTorch peers for the pruning benchmarks, written from the formulas of the SparseGPT (arXiv 2301.00774)
and Wanda (arXiv 2306.11695) papers, not copied from their repositories: what a user would write without
fastnips.

* :func:`sparsegpt_loop` -- SparseGPT as the algorithm is usually written: float64 Cholesky preparation, then
  blocks of 128 columns with a Python loop over the block's columns, vectorised over rows, and one GEMM per
  block for the lazy update. Its mask rule is fastnips' exact-count rule (the lowest (score, column) pairs per
  row and block, or per N:M group), so the two can be compared entry by entry.
* :func:`nm_mask_loop` -- Wanda's N:M selection: a Python loop over column groups, ``topk`` of the lowest
  scores in each (about in_features / group kernel launches).
* :func:`nm_mask_sort` -- the vectorised alternative: one ``reshape`` and a stable sort over all groups.
* :func:`row_mask_sort` -- per-row unstructured selection by a stable sort (Wanda's per-row rule).
"""

from __future__ import annotations

import math

import torch


def sparsegpt_loop(W: torch.Tensor, H: torch.Tensor, *, sparsity: float | None = None, keep: int = 0, group: int = 0,
                   blocksize: int = 128, percdamp: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """Prune ``W`` (float32, updated in place) with Hessian ``H``; return ``(W, keep_mask)``.

    Unstructured per row with ``sparsity``, or N:M keeping ``keep`` of every ``group`` columns.
    """
    rows, cols = W.shape
    H = H.to(torch.float64).clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    H += percdamp * torch.mean(torch.diag(H)) * torch.eye(cols, dtype=torch.float64)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True).to(W.dtype)
    mask = torch.ones(rows, cols, dtype=torch.bool)
    if group:
        blocksize = blocksize // group * group
    for i1 in range(0, cols, blocksize):
        i2 = min(i1 + blocksize, cols)
        n = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        d = torch.diag(Hinv1)
        prune1 = torch.zeros_like(W1, dtype=torch.bool)
        if not group:  # prune the k lowest W^2 / d^2 of each row in this block
            k = math.floor(sparsity * i2) - math.floor(sparsity * i1)
            order = torch.sort(W1**2 / d**2, dim=1, stable=True).indices
            prune1.scatter_(1, order[:, :k], True)
        for i in range(n):
            if group and i % group == 0:
                order = torch.sort(W1[:, i : i + group] ** 2 / d[i : i + group] ** 2, dim=1, stable=True).indices
                prune1[:, i : i + group].scatter_(1, order[:, : group - keep], True)
            w = W1[:, i]
            q = w.clone()
            q[prune1[:, i]] = 0
            Q1[:, i] = q
            err = (w - q) / d[i]
            W1[:, i:] -= err.unsqueeze(1) @ Hinv1[i, i:].unsqueeze(0)
            Err1[:, i] = err
        W[:, i1:i2] = Q1
        mask[:, i1:i2] = ~prune1
        W[:, i2:] -= Err1 @ Hinv[i1:i2, i2:]
    return W, mask


def nm_mask_loop(scores: torch.Tensor, keep: int, group: int) -> torch.Tensor:
    """Keep-mask: in every group of ``group`` columns, zero the ``group - keep`` lowest (Wanda's loop)."""
    prune = torch.zeros_like(scores, dtype=torch.bool)
    for ii in range(0, scores.shape[1], group):
        tmp = scores[:, ii : ii + group].float()
        prune.scatter_(1, ii + torch.topk(tmp, group - keep, dim=1, largest=False)[1], True)
    return ~prune


def nm_mask_sort(scores: torch.Tensor, keep: int, group: int) -> torch.Tensor:
    """The same mask with one vectorised stable sort over all groups."""
    rows, cols = scores.shape
    g = scores.reshape(rows, cols // group, group)
    order = torch.sort(g, dim=-1, stable=True).indices
    mask = torch.ones_like(g, dtype=torch.bool)
    mask.scatter_(-1, order[..., : group - keep], False)
    return mask.reshape(rows, cols)


def row_mask_sort(scores: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Per-row unstructured keep-mask: prune the floor(sparsity * cols) lowest of each row (stable sort)."""
    k = math.floor(sparsity * scores.shape[1])
    order = torch.sort(scores, dim=1, stable=True).indices
    mask = torch.ones_like(scores, dtype=torch.bool)
    mask.scatter_(1, order[:, :k], False)
    return mask
