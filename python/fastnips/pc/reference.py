r"""Plain torch inference of predictive coding (autograd on the energy), deep feedback control and Approx PC,
and the closed-form equilibria of deep linear networks. The oracle of the tests and the ``reference`` backend.

Notation of :class:`fastnips.pc.PCNet`: :math:`\mu_l = W_l f(x_{l-1}) + b_l`, :math:`\varepsilon_l = x_l - \mu_l`.

* PC energy (soft clamp): :math:`E = \tfrac12\sum_{l=1}^L \|\varepsilon_l\|^2 + \tfrac1{2\gamma}\|y - x_L\|^2`;
  hard clamp: :math:`x_L = y` and the last term dropped. Inference is gradient descent on E in
  :math:`x_1..x_{L-1}` (and :math:`x_L` when soft) from the feedforward state.
* DFC: :math:`\tau_v \dot v_l = -v_l + \mu_l(v_{l-1}) + Q_l u`, :math:`\tau_u \dot u = e - \alpha u`,
  :math:`e = y - v_L`, Euler steps of size ``dt``.
* Linear equilibria: with :math:`J = [J_1 \dots J_L]`, :math:`J_l = W_L \cdots W_{l+1}`, PC gives
  :math:`\varepsilon = J^\top (J J^\top + \gamma I)^{-1} e_0` and DFC
  :math:`\delta = Q (J Q + \alpha I)^{-1} e_0` (:math:`e_0 = y - \hat y`): equal for :math:`Q = J^\top`,
  :math:`\alpha = \gamma`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .network import PCNet

__all__ = ["Inference", "dfc_infer", "energy", "linear_equilibrium", "pc_infer", "weight_updates"]


@dataclass
class Inference:
    """The settled state of one inference: ``states`` ``[x_0..x_L]``, ``errors`` ``[eps_1..eps_L]`` (the
    perturbation that drives learning: :math:`x_l - \\mu_l`), ``iterations`` run, ``converged`` (the tolerance
    was met; always False without one) and ``extra`` (e.g. the controller ``u``)."""

    states: list[torch.Tensor]
    errors: list[torch.Tensor]
    iterations: int
    converged: bool
    extra: dict


def errors_of(net: PCNet, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    r""":math:`\varepsilon_l = x_l - \mu_l(x_{l-1})`, l = 1..L."""
    return [xs[l] - net.mu(xs[l - 1], l) for l in range(1, net.depth + 1)]


def energy(net: PCNet, xs: list[torch.Tensor], y: torch.Tensor, gamma: float | None) -> torch.Tensor:
    """The PC energy summed over the batch; ``gamma=None`` is the hard clamp (``xs[-1]`` is y)."""
    E = 0.5 * sum((e * e).sum() for e in errors_of(net, xs))
    if gamma is not None:
        E = E + 0.5 / gamma * ((y - xs[-1]) ** 2).sum()
    return E


def output_step_scale(gamma: float | None) -> float:
    """Step size multiplier of the soft-clamped output node: 1 / (its self-curvature 1 + 1/gamma), so one step
    size serves every gamma (a diagonal preconditioner; it does not move the equilibrium)."""
    return 1.0 if gamma is None else 1.0 / (1.0 + 1.0 / gamma)


def pc_infer(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, gamma: float | None, steps: int, lr: float,
             tol: float = 0.0) -> Inference:
    """PC inference by gradient descent on :func:`energy` (autograd), from the feedforward state.

    ``gamma=None`` is the hard clamp. Stops early when the largest state change of a step is below ``tol``.
    """
    with torch.no_grad():
        xs = [s.detach() for s in net.states(x)]
    if gamma is None:
        xs[-1] = y.detach().clone()
    free = list(range(1, net.depth + (0 if gamma is None else 1)))
    scale = {l: (output_step_scale(gamma) if l == net.depth else 1.0) for l in free}
    it, converged = 0, False
    for it in range(1, steps + 1):  # noqa: B007
        leaves = [xs[l].requires_grad_(True) for l in free]
        with torch.enable_grad():
            grads = torch.autograd.grad(energy(net, xs, y, gamma), leaves) if leaves else []
        with torch.no_grad():
            change = 0.0
            for l, g in zip(free, grads):
                d = lr * scale[l] * g
                xs[l] = (xs[l] - d).detach()
                change = max(change, float(d.abs().max()))
        if tol > 0 and change < tol:
            converged = True
            break
    xs = [s.detach() for s in xs]
    with torch.no_grad():
        errs = errors_of(net, xs)
    return Inference(xs, errs, it, converged, {})


def feedforward_jacobians(net: PCNet, x: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(feedforward states, per-sample Jacobians J_l at them)."""
    with torch.no_grad():
        xs = net.states(x)
        return xs, net.jacobians(xs)


def forward_injected(net: PCNet, x: torch.Tensor, inject: list[torch.Tensor]) -> list[torch.Tensor]:
    """States of the network with ``inject[l-1]`` added to layer l: :math:`x_l = \\mu_l(x_{l-1}) + q_l`."""
    xs = [x]
    for l in range(1, net.depth + 1):
        xs.append(net.mu(xs[-1], l) + inject[l - 1])
    return xs


def dfc_infer(net: PCNet, x: torch.Tensor, y: torch.Tensor, Q: list[torch.Tensor], *, alpha: float, steps: int,
              dt: float, tau_v: float = 1.0, tau_u: float = 1.0, tol: float = 0.0) -> Inference:
    """DFC dynamics (Euler) from the feedforward state with u = 0. ``Q[l-1]`` is (B, n_l, n_L) (per sample) or
    (n_l, n_L) (shared). Errors returned are :math:`v_l - \\mu_l(v_{l-1})`."""
    with torch.no_grad():
        vs = net.states(x)
        u = torch.zeros_like(y)
        it, converged = 0, False
        for it in range(1, steps + 1):  # noqa: B007
            fb = [_apply_q(q, u) for q in Q]
            e = y - vs[-1]
            new = [vs[0]] + [vs[l] + dt / tau_v * (net.mu(vs[l - 1], l) + fb[l - 1] - vs[l])
                             for l in range(1, net.depth + 1)]
            du = dt / tau_u * (e - alpha * u)
            change = max(float(du.abs().max()), max(float((a - b).abs().max()) for a, b in zip(new[1:], vs[1:])))
            vs, u = new, u + du
            if tol > 0 and change < tol:
                converged = True
                break
        return Inference(vs, errors_of(net, vs), it, converged, {"u": u})


def _apply_q(q: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return (q @ u[..., None])[..., 0] if q.ndim == 3 else u @ q.T


def weight_updates(net: PCNet, inf: Inference) -> list[tuple[torch.Tensor, torch.Tensor]]:
    r"""The local updates :math:`\Delta W_l = \varepsilon_l^\top f(x_{l-1}) / B`, :math:`\Delta b_l = \bar\varepsilon_l`
    (batch means): the descent direction of the energy in the weights (PC), and DFC's rule
    :math:`(v_l - W_l r_{l-1}) r_{l-1}^\top` in the same notation."""
    B = inf.states[0].shape[0]
    return [(e.T @ net.f(inf.states[l - 1], l - 1) / B, e.mean(0)) for l, e in enumerate(inf.errors, start=1)]


def linear_equilibrium(J: list[torch.Tensor], e0: torch.Tensor, *, gamma: float,
                       Q: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    r"""Closed-form layer perturbations of a linear network: :math:`Q (J Q + \gamma I)^{-1} e_0` with
    :math:`Q = J^\top` by default (PC's equilibrium). ``J[l-1]`` (B, n_L, n_l), ``e0`` (B, n_L)."""
    Q = [j.transpose(1, 2) for j in J] if Q is None else Q
    JQ = sum(j @ q for j, q in zip(J, Q))
    eye = torch.eye(e0.shape[1], dtype=e0.dtype, device=e0.device)
    u = torch.linalg.solve(JQ + gamma * eye, e0[..., None])
    return [(q @ u)[..., 0] for q in Q]
