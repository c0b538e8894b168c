"""The training loop of :class:`fastnips.functional.FunctionalRegressor`: Adam on the squared error, seeded
minibatches, the weights of the epoch with the lowest validation loss kept."""

from __future__ import annotations

import copy

import numpy as np
import torch

from .networks import BottleneckNet, EqualWidthNet


def build_network(est, in_features: int) -> torch.nn.Module:
    """The network ``est.architecture`` names, on ``in_features`` coefficients."""
    if est.architecture == "bottleneck":
        return BottleneckNet(in_features, int(est.n_index), int(est.width), int(est.depth))
    return EqualWidthNet(in_features, int(est.width), int(est.depth))


def train_network(est, C: np.ndarray, y: np.ndarray) -> tuple[torch.nn.Module, dict]:
    """(trained network, {"epoch": best epoch, "val_loss": its validation loss or None}) on standardised data."""
    gen = torch.Generator().manual_seed(est.seed)
    torch.manual_seed(int(est.seed))  # the default initialisers of nn.Linear draw from the global generator
    net = build_network(est, C.shape[1])
    Ct, yt = torch.as_tensor(C, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)
    n = len(yt)
    n_val = round(est.validation_fraction * n)
    perm = torch.randperm(n, generator=gen)
    val, tr = perm[:n_val], perm[n_val:]
    if len(tr) == 0:
        raise ValueError(f"no training subjects left after the validation split (n = {n})")
    opt = torch.optim.Adam(net.parameters(), lr=est.lr, weight_decay=est.weight_decay)
    best = (float("inf"), 0, copy.deepcopy(net.state_dict()))
    for epoch in range(1, int(est.epochs) + 1):
        net.train()
        order = tr[torch.randperm(len(tr), generator=gen)]
        for s in range(0, len(order), int(est.batch_size)):
            b = order[s:s + int(est.batch_size)]
            opt.zero_grad()
            loss = torch.mean((net(Ct[b]) - yt[b]) ** 2)
            loss.backward()
            opt.step()
        if n_val and (epoch % int(est.eval_every) == 0 or epoch == est.epochs):
            net.eval()
            with torch.no_grad():
                v = float(torch.mean((net(Ct[val]) - yt[val]) ** 2))
            if v < best[0]:
                best = (v, epoch, copy.deepcopy(net.state_dict()))
            elif epoch - best[1] >= int(est.patience) * int(est.eval_every):
                break  # no improvement in `patience` checks
    if n_val:
        net.load_state_dict(best[2])
        return net.eval(), {"epoch": best[1], "val_loss": best[0]}
    return net.eval(), {"epoch": int(est.epochs), "val_loss": None}
