"""2:4 inference through PyTorch's semi-structured sparse tensors (:func:`torch.sparse.to_sparse_semi_structured`,
the sparse tensor cores of NVIDIA GPUs from compute capability 8.0): no kernel of our own.

:func:`to_semi_structured_` swaps the weight of every selected linear that follows 2:4 (at most 2 nonzeros in
each group of 4 consecutive input columns, the pattern :func:`fastnips.prune.sparsegpt` and
:func:`fastnips.prune.wanda` produce with ``pattern=NM(2, 4)``) for its semi-structured form, in place. The
checks that need no GPU (the pattern, the dtype, the module kind) run first and name the offending layer; a
CPU model is refused with the reason, since the format only exists on CUDA.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

__all__ = ["follows_2_4", "to_semi_structured_"]

_DTYPES = (torch.float16, torch.bfloat16)


def follows_2_4(weight: torch.Tensor) -> bool:
    """Whether every group of 4 consecutive input columns of each row holds at most 2 nonzeros."""
    if weight.dim() != 2 or weight.shape[1] % 4:
        return False
    return bool(((weight != 0).reshape(weight.shape[0], -1, 4).sum(-1) <= 2).all())


def to_semi_structured_(model: nn.Module, names: Iterable[str] | None = None) -> list[str]:
    """Replace, in place, the weights of 2:4-sparse linears by ``to_sparse_semi_structured`` tensors.

    Parameters
    ----------
    model : torch.nn.Module
        On a CUDA device, float16 or bfloat16.
    names : iterable of str, optional
        Qualified linear names; default every ``nn.Linear`` of the decoder blocks that follows 2:4 (the others
        are left dense). Named linears that do not follow 2:4 raise.

    Returns
    -------
    list[str]
        The names converted.

    Raises
    ------
    ValueError
        A named module that is not an ``nn.Linear``, a weight that is not 2:4, not float16/bfloat16, or not on a
        CUDA device (the semi-structured format exists only there).
    """
    from .criteria import block_linears

    lin = block_linears(model)
    if names is None:
        chosen = [n for n, m in lin.items() if isinstance(m, nn.Linear) and follows_2_4(m.weight)]
    else:
        chosen = list(names)
        for n in chosen:
            m = lin.get(n)
            if not isinstance(m, nn.Linear):
                raise ValueError(f"{n!r} is not an nn.Linear of the decoder blocks")
            if not follows_2_4(m.weight):
                raise ValueError(f"{n}: the weight does not follow 2:4 (at most 2 nonzeros per group of 4 columns)")
    for n in chosen:
        w = lin[n].weight
        if w.dtype not in _DTYPES:
            raise ValueError(f"{n}: semi-structured 2:4 needs float16 or bfloat16 weights, got {w.dtype}")
        if w.device.type != "cuda":
            raise ValueError(f"{n}: torch.sparse.to_sparse_semi_structured needs a CUDA device (sparse tensor "
                             f"cores, compute capability >= 8.0); the weight is on {w.device}")
    from torch.sparse import to_sparse_semi_structured

    for n in chosen:
        m = lin[n]
        m.weight = nn.Parameter(to_sparse_semi_structured(m.weight.detach()), requires_grad=False)
    return chosen
