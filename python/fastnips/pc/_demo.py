"""``fastnips demo`` row of the pc package: predictive coding and Approx PC trained on scikit-learn's digits
for a fixed number of epochs; test accuracy, inference iterations per batch and seconds."""

from __future__ import annotations

import time

__all__ = ["demo_pc"]

EPOCHS = 3


def demo_pc(seed: int, epochs: int = EPOCHS) -> list[dict]:
    """One row: PC vs Approx PC on digits (64-64-10 tanh, Adam 3e-3, batch 64)."""
    import torch

    from ..data.images import digits
    from . import ApproxPC, PCNet, PredictiveCoding, fit_classifier
    from .inference import resolve_pc_backend

    out = {}
    Xtr, ytr = digits("train")
    Xte, yte = digits("test")
    Xtr, Xte = (torch.from_numpy(a.reshape(len(a), -1).copy()) for a in (Xtr, Xte))
    ytr, yte = torch.from_numpy(ytr.copy()), torch.from_numpy(yte.copy())
    for name in ("pc", "approx-pc"):
        net = PCNet([64, 64, 10], activation="tanh", seed=seed)
        learner = (PredictiveCoding(net, gamma=1.0, steps=50, lr=0.2, tol=1e-3) if name == "pc"
                   else ApproxPC(net, gamma=1.0, subgoals=4))
        t0 = time.perf_counter()
        h = fit_classifier(learner, Xtr, ytr, Xte, yte, epochs=epochs, lr=3e-3, seed=seed, probe=0)
        out[name] = (h.accuracy[-1], sum(h.iterations) / len(h.iterations), time.perf_counter() - t0)
    backend = resolve_pc_backend("auto", net, Xtr)
    (a_pc, i_pc, s_pc), (a_ap, i_ap, s_ap) = out["pc"], out["approx-pc"]
    return [{"task": "pc", "backend": f"{backend}+torch", "measure": "test accuracy ↑ PC / Approx PC",
             "result": f"acc {a_pc:.3f} / {a_ap:.3f}",
             "detail": f"64-64-10 tanh MLP on digits, {epochs} epochs of Adam: PC (soft clamp, {i_pc:.0f} inference "
                       f"steps per batch, {s_pc:.1f} s) vs Approx PC (4 subgoals, {i_ap:.0f} controller steps per "
                       f"batch, {s_ap:.1f} s)",
             "values": {"acc_pc": a_pc, "acc_approx_pc": a_ap, "iterations_pc": i_pc, "iterations_approx_pc": i_ap,
                        "seconds_pc": s_pc, "seconds_approx_pc": s_ap}}]
