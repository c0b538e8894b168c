"""Argument checks of :mod:`fastnips.scenegraph`: shapes, index ranges and probability vectors, each refused with a
message naming the argument before any work."""

from __future__ import annotations

import torch

from .._finite import all_finite

MODES = ("mean", "joint")
REDUCTIONS = ("mean", "sum", "none")
PROB_ATOL = 1e-6


def tensor(name: str, x, *, floating: bool = True) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


def mode(m: str) -> str:
    if m not in MODES:
        raise ValueError(f"mode must be one of {MODES} (multi-label predicates), got {m!r}")
    return m


def reduction(r: str) -> str:
    if r not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {r!r}")
    return r


def finite(name: str, x: torch.Tensor) -> None:
    if not all_finite(x):
        raise ValueError(f"{name} has NaN or infinite entries")


def probabilities(name: str, p: torch.Tensor, *, bernoulli: bool = False) -> torch.Tensor:
    """Entries in [0, 1]; rows summing to 1 (within 1e-6) unless ``bernoulli`` (independent labels)."""
    tensor(name, p)
    p0 = p
    p = p.detach()
    finite(name, p)
    if p.numel() and (bool((p < 0).any()) or bool((p > 1 + PROB_ATOL).any())):
        raise ValueError(f"{name} must hold probabilities in [0, 1]; got values in [{float(p.min()):.3g}, "
                         f"{float(p.max()):.3g}]")
    if not bernoulli and p.numel():
        dev = (p.sum(-1) - 1).abs().max()
        if float(dev) > PROB_ATOL * max(1, p.shape[-1]):
            raise ValueError(f"{name} must be probability vectors along its last dimension (summing to 1); the "
                             f"largest deviation of a row sum from 1 is {float(dev):.3g}. Pass logits to the "
                             f"loss, or normalise")
    return p0


def edge_index(ei, n_nodes: int) -> torch.Tensor:
    tensor("edge_index", ei, floating=False)
    if ei.dtype in (torch.bool,) or ei.is_floating_point() or ei.is_complex():
        raise TypeError(f"edge_index must be an integer tensor, got {ei.dtype}")
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E) (PyG convention: row 0 subjects, row 1 objects), got "
                         f"{tuple(ei.shape)}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n_nodes):
        raise ValueError(f"edge_index refers to nodes outside [0, {n_nodes}): min {int(ei.min())}, "
                         f"max {int(ei.max())}")
    return ei.long()


def labels_or_probs(name: str, t, n: int, k: int, *, bernoulli: bool = False, extra: tuple = ()) -> torch.Tensor:
    """Targets: class indices (n,) in [0, k) -> one-hot, or probabilities (n, *extra, k); returned as probabilities
    in ``dtype`` float64 or the input's floating dtype."""
    tensor(name, t, floating=False)
    if not t.is_floating_point() and not bernoulli:
        if t.dim() != 1 or t.shape[0] != n:
            raise ValueError(f"{name} as class indices must have shape ({n},), got {tuple(t.shape)}")
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= k):
            raise ValueError(f"{name} has class indices outside [0, {k}): min {int(t.min())}, max {int(t.max())}")
        return torch.nn.functional.one_hot(t.long(), k)
    want = (n, k)
    if tuple(t.shape) not in (want, (n, *extra, k)):
        alt = f" or {(n, *extra, k)}" if extra else ""
        kind = "label probabilities (multi-hot)" if bernoulli else "probabilities"
        raise ValueError(f"{name} as {kind} must have shape {want}{alt}, got {tuple(t.shape)}")
    return probabilities(name, t.to(torch.get_default_dtype()) if not t.is_floating_point() else t,
                         bernoulli=bernoulli)


def logits(name: str, x, *, dims: tuple[int, ...]) -> torch.Tensor:
    tensor(name, x)
    if x.dim() not in dims:
        raise ValueError(f"{name} must have {' or '.join(map(str, dims))} dimensions, got shape {tuple(x.shape)}")
    return x


def node_weight(w: float) -> float:
    if not isinstance(w, (int, float)) or not 0 <= w <= 1:
        raise ValueError(f"node_weight must be a number in [0, 1] (the weight of the node term), got {w!r}")
    return float(w)


def batch(b, n_nodes: int, device) -> torch.Tensor:
    if b is None:
        return torch.zeros(n_nodes, dtype=torch.long, device=device)
    tensor("batch", b, floating=False)
    if b.is_floating_point() or b.dim() != 1 or b.shape[0] != n_nodes:
        raise ValueError(f"batch must be an integer tensor of shape ({n_nodes},) (the graph of each node, PyG "
                         f"convention), got {b.dtype} {tuple(b.shape)}")
    if b.numel() and int(b.min()) < 0:
        raise ValueError(f"batch has a negative graph id {int(b.min())}")
    return b.long()
