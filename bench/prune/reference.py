r"""Plain-PyTorch peers for the pruning benchmarks, written from the formulas of the SparseGPT (arXiv 2301.00774)
and Wanda (arXiv 2306.11695) papers, not copied from their repositories: what a user would write without
fastnips.

* :func:`sparsegpt_as_run` -- our reading of the reference SparseGPT code (IST-DASLab/sparsegpt, ``sparsegpt.py``,
  ``fasterprune``) as it runs: the preparation in float32 (Cholesky, ``cholesky_inverse``, upper Cholesky), the
  unstructured mask per block of 128 columns over all rows by the threshold rule
  ``score <= sort(score.flatten())[int(numel * s)]`` (at least one entry more than ``int(numel * s)`` per block),
  N:M by ``topk`` of the n lowest ("n" counts zeroed weights there). Checked bit for bit against the real code
  when ``FASTNIPS_SPARSEGPT_REPO`` names a checkout of it (bench_layer.py), which is never copied here.
* :func:`nm_mask_loop` -- Wanda's N:M selection: a Python loop over column groups, ``topk`` of the lowest
  scores in each (about in_features / group kernel launches).
* :func:`nm_mask_sort` -- the vectorised alternative: one ``reshape`` and a stable sort over all groups.
* :func:`row_mask_sort` -- per-row unstructured selection by a stable sort (Wanda's per-row rule).
"""

from __future__ import annotations

import math

import torch


def sparsegpt_as_run(W: torch.Tensor, H: torch.Tensor, *, sparsity: float = 0.5, zero_n: int = 0, of_m: int = 0,
                     blocksize: int = 128, percdamp: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference algorithm as it runs, float32 throughout; ``W`` updated in place. Returns ``(W, keep_mask)``.

    ``zero_n:of_m`` N:M zeroes ``zero_n`` of every ``of_m`` (the reference's ``prunen:prunem``); else unstructured.
    """
    rows, cols = W.shape
    H = H.float().clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    idx = torch.arange(cols)
    H[idx, idx] += percdamp * torch.mean(torch.diag(H))
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    pruned = torch.zeros(rows, cols, dtype=torch.bool)
    for i1 in range(0, cols, blocksize):
        i2 = min(i1 + blocksize, cols)
        W1, U1 = W[:, i1:i2].clone(), U[i1:i2, i1:i2]
        d = torch.diag(U1)
        Q1, E1 = torch.zeros_like(W1), torch.zeros_like(W1)
        if zero_n:
            p1 = torch.zeros_like(W1, dtype=torch.bool)
        else:
            score = W1**2 / d.reshape(1, -1) ** 2
            p1 = score <= torch.sort(score.flatten())[0][int(score.numel() * sparsity)]
        for i in range(i2 - i1):
            if zero_n and i % of_m == 0:
                score = W1[:, i : i + of_m] ** 2 / d[i : i + of_m].reshape(1, -1) ** 2
                p1.scatter_(1, i + torch.topk(score, zero_n, dim=1, largest=False)[1], True)
            w = W1[:, i]
            q = w.clone()
            q[p1[:, i]] = 0
            Q1[:, i] = q
            e = (w - q) / U1[i, i]
            W1[:, i:] -= e.unsqueeze(1).matmul(U1[i, i:].unsqueeze(0))
            E1[:, i] = e
        W[:, i1:i2] = Q1
        pruned[:, i1:i2] = p1
        W[:, i2:] -= E1.matmul(U[i1:i2, i2:])
    return W, ~pruned


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
