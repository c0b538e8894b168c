r"""Approx PC: one central controller drives every layer toward a sequence of intermediate subgoals.

Choices (the abstract says "a centralized feedback controller operating over a sequence of intermediate
subgoals" and no more):

* Feedback :math:`Q_l = J_l^\top`, the per-sample Jacobian of the output at the feedforward state, computed once
  per batch (the controller is the only place errors travel: no layer-wise error propagation).
* Subgoals :math:`y_k = \hat y + \tfrac kS (y - \hat y)`, k = 1..S.
* The network settles instantly given u (one forward sweep :math:`x_l = \mu_l(x_{l-1}) + Q_l u`: DFC's fast
  network limit), and the controller takes model-based steps
  :math:`u \leftarrow u + G(y_k - x_L - \gamma u)` with :math:`G = (J Q + \gamma I)^{-1}` (n_L x n_L per sample).
  In a linear network one step per subgoal lands exactly on PC's equilibrium for that subgoal; with
  nonlinearities the subgoals are a continuation that keeps each step where the linear model G is accurate.
* The learning signal is PC's: :math:`\varepsilon_l = x_l - \mu_l = Q_l u`.
"""

from __future__ import annotations

import torch

from .network import PCNet
from .reference import Inference, _apply_q, errors_of, feedforward_jacobians, forward_injected

__all__ = ["approx_pc_infer"]


def approx_pc_infer(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, gamma: float, subgoals: int,
                    steps_per_subgoal: int = 1) -> Inference:
    """Approx PC inference (module docstring); ``iterations`` counts forward sweeps."""
    with torch.no_grad():
        xs, J = feedforward_jacobians(net, x)
        Q = [j.transpose(1, 2) for j in J]
        eye = torch.eye(y.shape[1], dtype=y.dtype, device=y.device)
        G = torch.linalg.inv(sum(j @ q for j, q in zip(J, Q)) + gamma * eye)
        yhat = xs[-1]
        u = torch.zeros_like(y)
        sweeps = 0
        for k in range(1, subgoals + 1):
            yk = yhat + (k / subgoals) * (y - yhat)
            for _ in range(steps_per_subgoal):
                vs = forward_injected(net, x, [_apply_q(q, u) for q in Q]) if sweeps else xs
                sweeps += 1
                u = u + (G @ (yk - vs[-1] - gamma * u)[..., None])[..., 0]
        vs = forward_injected(net, x, [_apply_q(q, u) for q in Q])
        return Inference(vs, errors_of(net, vs), sweeps, False, {"u": u})
