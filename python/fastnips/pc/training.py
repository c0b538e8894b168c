"""The classification loop of the evaluation: one-hot MSE targets, Adam on the grads a learner writes, and the
per-epoch costs (inference iterations, wall time) and the similarity of the updates to backprop's."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .learners import Backprop, _Learner, update_similarity
from .network import PCNet, check_count, check_positive

__all__ = ["FitHistory", "accuracy", "fit_classifier"]


@dataclass
class FitHistory:
    """Per epoch: test accuracy, mean inference iterations per batch (0 for backprop), wall seconds, and the
    cosine similarity of the learner's updates to backprop's on a fixed probe batch at the epoch's start."""

    accuracy: list[float] = field(default_factory=list)
    iterations: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    similarity: list[float] = field(default_factory=list)


def accuracy(net: PCNet, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows of ``X`` whose arg-max prediction equals the label ``y`` (int64)."""
    with torch.no_grad():
        return float((net(X).argmax(1) == y).to(torch.float64).mean())


def fit_classifier(learner: _Learner, X: torch.Tensor, y: torch.Tensor, X_test: torch.Tensor, y_test: torch.Tensor,
                   *, epochs: int = 10, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
                   probe: int = 256) -> FitHistory:
    """Train ``learner.net`` on (X, y) with Adam; targets are one-hot rows.

    Parameters
    ----------
    learner : Backprop, PredictiveCoding, DeepFeedbackControl or ApproxPC
    X, y : Tensor (N, n_0) and int64 labels (N,)
    X_test, y_test : held-out set for the accuracy
    epochs, batch_size, lr, seed : the loop (``seed`` shuffles)
    probe : int
        Size of the fixed training batch on which updates are compared with backprop's (0: skip).

    Returns
    -------
    FitHistory
    """
    if not isinstance(learner, _Learner):
        raise TypeError(f"learner must be one of the fastnips.pc learners, got {type(learner).__name__}")
    check_count("epochs", epochs)
    check_count("batch_size", batch_size)
    check_positive("lr", lr)
    net = learner.net
    n_out = net.sizes[-1]
    if y.ndim != 1 or y.shape[0] != X.shape[0] or int(y.max()) >= n_out or int(y.min()) < 0:
        raise ValueError(f"y must hold {X.shape[0]} labels in [0, {n_out})")
    Y = torch.nn.functional.one_hot(y, n_out).to(X.dtype)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(int(seed))
    hist = FitHistory()
    bp = Backprop(net)
    for _ in range(epochs):
        if probe:
            xp, yp = X[:probe], Y[:probe]
            hist.similarity.append(update_similarity(bp.weight_updates(xp, yp), learner.weight_updates(xp, yp)))
        perm = torch.randperm(X.shape[0], generator=gen)
        its, t0 = [], time.perf_counter()
        for i in range(0, X.shape[0], batch_size):
            idx = perm[i:i + batch_size]
            opt.zero_grad()
            inf = learner.set_grads(X[idx], Y[idx])
            its.append(0 if inf is None else inf.iterations)
            opt.step()
        hist.seconds.append(time.perf_counter() - t0)
        hist.iterations.append(float(np.mean(its)))
        hist.accuracy.append(accuracy(net, X_test, y_test))
    return hist
