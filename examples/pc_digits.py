"""Predictive coding, deep feedback control and Approx PC side by side (``fastnips.pc``).

1. A deep linear network: PC's equilibrium equals DFC's with Q = J^T, alpha = gamma, and the closed form
   J^T (J J^T + gamma I)^-1 e (printed: the largest difference).
2. With tanh: the PC-DFC difference shrinks as |e|^2 when the target nudge shrinks.
3. scikit-learn's digits: one epoch-budgeted run per learning rule (Adam, one-hot MSE), with test accuracy,
   inference iterations per batch and the cosine similarity of each rule's updates to backprop's.

Run: ``python examples/pc_digits.py`` (torch, scikit-learn; under a minute on one core). Seeded.
"""

from __future__ import annotations

import numpy as np
import torch

from fastnips.data.images import digits
from fastnips.pc import (
    ApproxPC,
    Backprop,
    DeepFeedbackControl,
    PCNet,
    PredictiveCoding,
    dfc_inference,
    fit_classifier,
    pc_inference,
)
from fastnips.pc.reference import feedforward_jacobians, linear_equilibrium

torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)

net = PCNet([6, 8, 8, 8, 3], activation="linear", dtype=torch.float64)
x, y = torch.randn(5, 6, generator=g, dtype=torch.float64), torch.randn(5, 3, generator=g, dtype=torch.float64)
pc = pc_inference(net, x, y, gamma=0.5, steps=50_000, lr=0.2, tol=1e-14)
dfc = dfc_inference(net, x, y, alpha=0.5, steps=50_000, dt=0.2, tol=1e-14)
xs, J = feedforward_jacobians(net, x)
cf = linear_equilibrium(J, y - xs[-1], gamma=0.5)
gap_pc = max(float((a - b).abs().max()) for a, b in zip(pc.errors, cf))
gap_dfc = max(float((a - b).abs().max()) for a, b in zip(dfc.errors, cf))
print(f"linear, depth 4: max |PC - closed form| = {gap_pc:.1e}, max |DFC - closed form| = {gap_dfc:.1e}")

net = PCNet([6, 8, 8, 3], activation="tanh", dtype=torch.float64, seed=1)
yhat, d = net(x).detach(), torch.randn(5, 3, generator=g, dtype=torch.float64)
for s in (1e-1, 1e-2, 1e-3):
    t = yhat + s * d
    a = pc_inference(net, x, t, gamma=0.5, steps=50_000, lr=0.3, tol=1e-14).errors
    b = dfc_inference(net, x, t, alpha=0.5, steps=50_000, dt=0.3, tol=1e-14).errors
    diff = np.sqrt(sum(float(((u - v) ** 2).sum()) for u, v in zip(a, b)))
    print(f"tanh, nudge {s:g}: |PC - DFC| = {diff:.2e}")

Xtr, ytr = digits("train")
Xte, yte = digits("test")
Xtr, Xte = (torch.from_numpy(v.reshape(len(v), -1).copy()) for v in (Xtr, Xte))
ytr, yte = torch.from_numpy(ytr.copy()), torch.from_numpy(yte.copy())
rules = {"backprop": lambda n: Backprop(n), "PC": lambda n: PredictiveCoding(n, gamma=1.0, steps=50, lr=0.2, tol=1e-3),
         "DFC": lambda n: DeepFeedbackControl(n, alpha=1.0, steps=50, dt=0.3, tol=1e-3),
         "Approx PC": lambda n: ApproxPC(n, gamma=1.0, subgoals=4)}
for name, make in rules.items():
    h = fit_classifier(make(PCNet([64, 64, 10], seed=0)), Xtr, ytr, Xte, yte, epochs=3, lr=3e-3)
    print(f"digits, {name:9s}: acc {h.accuracy[-1]:.3f}, {np.mean(h.iterations):5.1f} iterations/batch, "
          f"{sum(h.seconds):.1f} s, cos(update, backprop) {np.mean(h.similarity):.3f}")
