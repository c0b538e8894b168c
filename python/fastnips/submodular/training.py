r"""Training :class:`~fastnips.submodular.PairwiseSubmodularNet` from (set, value) pairs and from (set, set)
preferences. Full-batch Adam; any parameter value is a valid (submodular) model, so no projection step."""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike

from .network import PairwiseSubmodularNet

__all__ = ["fit_preferences", "fit_values"]


def _as_masks(masks, n: int, name: str) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(masks))
    if t.ndim != 2 or t.shape[1] != n:
        raise ValueError(f"{name} must have shape (B, {n}) (one boolean row per set), got {tuple(t.shape)}")
    return t.bool()


def _features(x: ArrayLike) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=torch.get_default_dtype())
    if t.ndim != 2 or not torch.isfinite(t).all():
        raise ValueError(f"x must be a finite (n, in_features) array of item features, got shape {tuple(t.shape)}"
                         + ("" if t.ndim != 2 else " with NaN or inf"))
    return t


def _loop(net, loss_fn, epochs: int, lr: float, seed: int) -> list[float]:
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    torch.manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    history = []
    for _ in range(epochs):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return history


def fit_values(net: PairwiseSubmodularNet, x: ArrayLike, masks: ArrayLike, y: ArrayLike, *, epochs: int = 300,
               lr: float = 0.02, seed: int = 0) -> list[float]:
    r"""Fit :math:`f(S_i) \approx y_i` by the mean squared error.

    Parameters
    ----------
    net : PairwiseSubmodularNet
    x : tensor or array, shape (n, in_features)
        Item features.
    masks : bool array, shape (B, n)
        The training sets.
    y : array, shape (B,)
        Their values (finite).
    epochs, lr, seed : int, float, int
        Full-batch Adam steps, its step size, the torch seed.

    Returns
    -------
    list of float
        The loss after each step.

    Examples
    --------
    >>> net = PairwiseSubmodularNet(4, hidden=())
    >>> x = torch.eye(4)
    >>> masks = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    >>> hist = fit_values(net, x, masks, [1.0, 1.5], epochs=50)
    >>> hist[-1] < hist[0]
    True
    """
    x = _features(x)
    masks = _as_masks(masks, x.shape[0], "masks")
    y = torch.as_tensor(np.asarray(y, dtype=np.float64), dtype=x.dtype)
    if y.shape != (masks.shape[0],) or not torch.isfinite(y).all():
        raise ValueError(f"y must hold {masks.shape[0]} finite values (one per set), got shape {tuple(y.shape)}")
    return _loop(net, lambda: torch.mean((net(x, masks) - y) ** 2), epochs, lr, seed)


def fit_preferences(net: PairwiseSubmodularNet, x: ArrayLike, better: ArrayLike, worse: ArrayLike, *,
                    epochs: int = 300, lr: float = 0.02, seed: int = 0) -> list[float]:
    r"""Fit from preferences "set :math:`A_i` is better than :math:`B_i`" by the Bradley-Terry likelihood,
    minimising :math:`\frac1N \sum_i \log(1 + e^{-(f(A_i) - f(B_i))})`.

    Parameters
    ----------
    net : PairwiseSubmodularNet
    x : tensor or array, shape (n, in_features)
    better, worse : bool arrays, shape (N, n)
        The preferred and the other set of each pair.
    epochs, lr, seed : int, float, int

    Returns
    -------
    list of float
        The loss after each step.

    Examples
    --------
    >>> net = PairwiseSubmodularNet(3, hidden=())
    >>> x = torch.eye(3)
    >>> hist = fit_preferences(net, x, [[1, 1, 0]], [[0, 0, 1]], epochs=30)
    >>> hist[-1] < hist[0]
    True
    """
    x = _features(x)
    better = _as_masks(better, x.shape[0], "better")
    worse = _as_masks(worse, x.shape[0], "worse")
    if better.shape != worse.shape:
        raise ValueError(f"better and worse must have the same shape, got {tuple(better.shape)} and "
                         f"{tuple(worse.shape)}")
    return _loop(net, lambda: torch.nn.functional.softplus(net(x, worse) - net(x, better)).mean(), epochs, lr, seed)
