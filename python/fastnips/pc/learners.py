r"""The four learning rules as torch modules over one :class:`fastnips.pc.PCNet`, with one interface:
``learner.set_grads(x, y)`` writes ``p.grad`` for every parameter of the network (so any ``torch.optim``
optimizer takes the step) and returns the :class:`~fastnips.pc.reference.Inference` (or None for backprop).

The gradient written is minus the local update, :math:`-\Delta W_l = -\varepsilon_l^\top f(x_{l-1})/B`
(batch mean). For backprop it is the gradient of :math:`\tfrac12\|y - \hat y\|^2` (batch mean), which
:math:`\Delta W` of PC approaches, scaled by :math:`1/\gamma`, as :math:`\gamma\to\infty`; so lr times gamma plays
backprop's learning rate in the weak-nudge regime.
"""

from __future__ import annotations

import torch
from torch import nn

from .inference import approx_pc_inference, dfc_inference, pc_inference
from .network import PCNet, check_count, check_positive
from .reference import Inference, feedforward_jacobians, forward_injected, weight_updates

__all__ = ["ApproxPC", "Backprop", "DeepFeedbackControl", "PredictiveCoding", "update_similarity"]


def _write_grads(net: PCNet, updates: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for lin, (dW, db) in zip(net.layers, updates):
        lin.weight.grad = -dW.to(lin.weight.dtype)
        if lin.bias is not None:
            lin.bias.grad = -db.to(lin.bias.dtype)


class _Learner(nn.Module):
    def __init__(self, net: PCNet) -> None:
        super().__init__()
        if not isinstance(net, PCNet):
            raise TypeError(f"net must be a fastnips.pc.PCNet, got {type(net).__name__}")
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The network's feedforward prediction."""
        return self.net(x)

    def infer(self, x: torch.Tensor, y: torch.Tensor) -> Inference:  # pragma: no cover - overridden
        raise NotImplementedError

    def weight_updates(self, x: torch.Tensor, y: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        r"""The local updates :math:`(\Delta W_l, \Delta b_l)`, l = 1..L, after inference on (x, y)."""
        return weight_updates(self.net, self.infer(x, y))

    def set_grads(self, x: torch.Tensor, y: torch.Tensor) -> Inference | None:
        """Infer, then write minus the local updates into ``p.grad``; returns the inference."""
        inf = self.infer(x, y)
        _write_grads(self.net, weight_updates(self.net, inf))
        return inf


class Backprop(_Learner):
    r"""The baseline: exact gradients of :math:`\tfrac12\|y - \hat y\|^2` (batch mean) by autograd.

    Parameters
    ----------
    net : PCNet
    """

    def __init__(self, net: PCNet) -> None:
        super().__init__(net)

    def weight_updates(self, x: torch.Tensor, y: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Minus the loss gradient per layer, as ``(dW, db)`` (``db`` zeros when the layer has no bias)."""
        self.net.check_batch(x, y)
        params = [p for lin in self.net.layers for p in (lin.weight, lin.bias) if p is not None]
        with torch.enable_grad():
            loss = 0.5 * ((y - self.net(x)) ** 2).sum(1).mean()
            grads = iter(torch.autograd.grad(loss, params))
        out = []
        for lin in self.net.layers:
            gW = next(grads)
            gb = next(grads) if lin.bias is not None else torch.zeros(lin.weight.shape[0], dtype=gW.dtype)
            out.append((-gW, -gb))
        return out

    def set_grads(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """Write the loss gradient into ``p.grad``."""
        _write_grads(self.net, self.weight_updates(x, y))


class PredictiveCoding(_Learner):
    r"""Predictive coding (:func:`fastnips.pc.pc_inference`); learns :math:`\Delta W_l = \varepsilon_l f(x_{l-1})^\top`.

    Parameters
    ----------
    net : PCNet
    gamma, clamp, steps, lr, tol, backend
        As :func:`fastnips.pc.pc_inference` (``lr`` is the inference step size).

    Examples
    --------
    >>> net = PCNet([4, 8, 2])
    >>> pc = PredictiveCoding(net, gamma=1.0, steps=10)
    >>> _ = pc.set_grads(torch.randn(5, 4), torch.zeros(5, 2))
    >>> net.layers[0].weight.grad.shape
    torch.Size([8, 4])
    """

    def __init__(self, net: PCNet, *, gamma: float = 1.0, clamp: str = "soft", steps: int = 20, lr: float = 0.1,
                 tol: float = 0.0, backend: str = "auto") -> None:
        super().__init__(net)
        self.kw = {"gamma": gamma, "clamp": clamp, "steps": steps, "lr": lr, "tol": tol, "backend": backend}

    def infer(self, x: torch.Tensor, y: torch.Tensor) -> Inference:
        """PC inference on (x, y)."""
        return pc_inference(self.net, x, y, **self.kw)


class DeepFeedbackControl(_Learner):
    r"""Deep feedback control (:func:`fastnips.pc.dfc_inference`) with :math:`Q = J^\top` or learned feedback.

    ``feedback="jacobian"``: per-sample :math:`Q_l = J_l^\top` at the feedforward state (the exact-equivalence
    setting). ``"learned"``: shared matrices :math:`Q_l` (n_l, n_L), trained by :meth:`learn_feedback` with a
    noise-correlation rule (a simplified form of DFC's feedback learning: inject noise :math:`\xi_l` in every
    layer, read the output fluctuation :math:`r`, move :math:`Q_l` toward :math:`\xi_l r^\top/\sigma^2`, whose
    mean is :math:`J_l^\top` averaged over the data).

    Parameters
    ----------
    net : PCNet
    alpha, steps, dt, tau_v, tau_u, tol
        As :func:`fastnips.pc.dfc_inference`.
    feedback : {"jacobian", "learned"}
    seed : int
        Seeds the initial learned feedback and its noise.
    """

    def __init__(self, net: PCNet, *, alpha: float = 1.0, feedback: str = "jacobian", steps: int = 100,
                 dt: float = 0.2, tau_v: float = 1.0, tau_u: float = 1.0, tol: float = 0.0, seed: int = 0) -> None:
        super().__init__(net)
        if feedback not in ("jacobian", "learned"):
            raise ValueError(f"feedback must be 'jacobian' or 'learned', got {feedback!r}")
        check_positive("alpha", alpha, what=" (the controller leak)")
        check_count("steps (inference steps)", steps)
        self.feedback = feedback
        self.kw = {"alpha": alpha, "steps": steps, "dt": dt, "tau_v": tau_v, "tau_u": tau_u, "tol": tol}
        self._gen = torch.Generator().manual_seed(int(seed))
        w = net.layers[0].weight
        self.Q = [0.01 * torch.randn(n, net.sizes[-1], generator=self._gen, dtype=w.dtype).to(w.device)
                  for n in net.sizes[1:]] if feedback == "learned" else None

    def infer(self, x: torch.Tensor, y: torch.Tensor) -> Inference:
        """DFC inference on (x, y)."""
        return dfc_inference(self.net, x, y, Q=self.Q, **self.kw)

    def learn_feedback(self, x: torch.Tensor, *, steps: int = 20, noise: float = 0.01, lr: float = 0.2) -> float:
        """Train the learned feedback on inputs ``x``; returns the relative distance of Q to the batch-mean
        :math:`J^\\top` afterwards (a diagnostic; the rule itself does not use J)."""
        if self.Q is None:
            raise ValueError("learn_feedback needs feedback='learned'")
        self.net.check_batch(x)
        check_count("steps", steps)
        noise, lr = check_positive("noise", noise), check_positive("lr", lr)
        with torch.no_grad():
            clean, J = feedforward_jacobians(self.net, x)
            for _ in range(steps):
                xi = [noise * torch.randn(s.shape, generator=self._gen, dtype=s.dtype).to(s.device)
                      for s in clean[1:]]
                r = forward_injected(self.net, x, xi)[-1] - clean[-1]
                for q, z in zip(self.Q, xi):
                    q.mul_(1 - lr).add_(z.T @ r / (x.shape[0] * noise**2), alpha=lr)
            target = [j.mean(0).T for j in J]
            num = sum(float(((q - t) ** 2).sum()) for q, t in zip(self.Q, target))
            return (num / sum(float((t**2).sum()) for t in target)) ** 0.5


class ApproxPC(_Learner):
    """Approx PC (:func:`fastnips.pc.approx_pc_inference`): one controller over intermediate subgoals.

    Parameters
    ----------
    net : PCNet
    gamma, subgoals, steps_per_subgoal
        As :func:`fastnips.pc.approx_pc_inference`.
    """

    def __init__(self, net: PCNet, *, gamma: float = 1.0, subgoals: int = 4, steps_per_subgoal: int = 1) -> None:
        super().__init__(net)
        self.kw = {"gamma": gamma, "subgoals": subgoals, "steps_per_subgoal": steps_per_subgoal}

    def infer(self, x: torch.Tensor, y: torch.Tensor) -> Inference:
        """Approx PC inference on (x, y)."""
        return approx_pc_inference(self.net, x, y, **self.kw)


def update_similarity(a: list[tuple[torch.Tensor, torch.Tensor]], b: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Cosine similarity of two sets of weight updates, all layers' weights and biases concatenated."""
    if len(a) != len(b):
        raise ValueError(f"the two updates have {len(a)} and {len(b)} layers")
    va = torch.cat([t.reshape(-1) for pair in a for t in pair])
    vb = torch.cat([t.reshape(-1) for pair in b for t in pair])
    if va.shape != vb.shape:
        raise ValueError("the two updates have different shapes")
    den = float(va.norm() * vb.norm())
    return float(va @ vb) / den if den > 0 else 0.0
