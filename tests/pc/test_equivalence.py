"""PC = DFC (Q = J^T, alpha = gamma) = the closed form in deep linear networks; the O(|e|^2) deviation with
tanh; Approx PC's updates approaching PC's at the small-nudge limit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastnips.pc import approx_pc_inference, dfc_inference, pc_inference, update_similarity
from fastnips.pc.reference import feedforward_jacobians, linear_equilibrium, weight_updates

from .conftest import make_batch


def _maxdiff(a, b):
    return max(float((s - t).abs().max()) for s, t in zip(a, b))


def _norm(a, b=None):
    return float(np.sqrt(sum(float(((s - (0 if b is None else t)) ** 2).sum())
                             for s, t in zip(a, b if b is not None else a))))


def _closed_form_by_hand(net, x, y, gamma):
    """eps = J^T (J J^T + gamma I)^-1 e0 with J = [W_L..W_2, ..., W_L, I] built from the weights directly."""
    Ws = [lin.weight.detach() for lin in net.layers]
    L = len(Ws)
    Js = []
    for l in range(1, L + 1):
        J = torch.eye(Ws[-1].shape[0], dtype=x.dtype)
        for W in reversed(Ws[l:]):
            J = J @ W
        Js.append(J)
    Jfull = torch.cat(Js, dim=1)
    e0 = (y - net(x)).detach()
    u = torch.linalg.solve(Jfull @ Jfull.T + gamma * torch.eye(Jfull.shape[0], dtype=x.dtype), e0.T)
    eps = (Jfull.T @ u).T
    return list(torch.split(eps, [W.shape[0] for W in Ws], dim=1))


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
@pytest.mark.parametrize("gamma", [1.0, 0.1])
def test_pc_equals_dfc_in_deep_linear_nets(depth, gamma):
    sizes = [4] + [5] * (depth - 1) + [3]
    net, x, y = make_batch(sizes, "linear", seed=depth)
    ref = _closed_form_by_hand(net, x, y, gamma)
    pc = pc_inference(net, x, y, gamma=gamma, steps=50_000, lr=0.2, tol=1e-14, backend="reference")
    dfc = dfc_inference(net, x, y, alpha=gamma, steps=50_000, dt=0.2, tol=1e-14)
    assert pc.converged
    assert dfc.converged
    assert _maxdiff(pc.errors, ref) < 1e-8
    assert _maxdiff(dfc.errors, ref) < 1e-8
    assert _maxdiff(pc.states, dfc.states) < 1e-8  # presynaptic activities too: the weight updates coincide
    assert _maxdiff([w for w, _ in weight_updates(net, pc)], [w for w, _ in weight_updates(net, dfc)]) < 1e-8
    xs, J = feedforward_jacobians(net, x)
    assert _maxdiff(linear_equilibrium(J, y - xs[-1], gamma=gamma), ref) < 1e-12
    assert _maxdiff(approx_pc_inference(net, x, y, gamma=gamma, subgoals=3).errors, ref) < 1e-10


def test_hard_clamp_is_the_gamma_to_zero_limit():
    net, x, y = make_batch([4, 6, 6, 3], "linear", seed=2)
    hard = pc_inference(net, x, y, clamp="hard", steps=50_000, lr=0.2, tol=1e-14, backend="reference")
    assert torch.equal(hard.states[-1], y)
    ref = _closed_form_by_hand(net, x, y, 1e-12)  # J^T (J J^T)^-1 e0
    assert _maxdiff(hard.errors, ref) < 1e-8


def test_dfc_with_other_feedback_differs():
    net, x, y = make_batch([4, 6, 3], "linear", seed=3)
    ref = _closed_form_by_hand(net, x, y, 0.5)
    xs, J = feedforward_jacobians(net, x)
    g = torch.Generator().manual_seed(5)  # J^T plus a perturbation (J is the same for every sample: linear)
    Q = [j[0].T + 0.3 * torch.randn(j.shape[2], 3, dtype=x.dtype, generator=g) for j in J]
    dfc = dfc_inference(net, x, y, alpha=0.5, Q=Q, steps=20_000, dt=0.1, tol=1e-14)
    Qb = [q.expand(x.shape[0], *q.shape) for q in Q]
    assert _maxdiff(dfc.errors, linear_equilibrium(J, y - xs[-1], gamma=0.5, Q=Qb)) < 1e-8
    assert _maxdiff(dfc.errors, ref) > 1e-3


def test_tanh_deviation_scales_as_error_squared():
    net, x, d = make_batch([5, 8, 8, 3], "tanh", seed=1)
    yhat = net(x).detach()
    nudges = [1e-1, 3e-2, 1e-2, 3e-3]
    dev = []
    for s in nudges:
        y = yhat + s * (d - yhat)
        pc = pc_inference(net, x, y, gamma=0.5, steps=50_000, lr=0.3, tol=1e-14, backend="reference")
        dfc = dfc_inference(net, x, y, alpha=0.5, steps=50_000, dt=0.3, tol=1e-14)
        dev.append(_norm(pc.errors, dfc.errors))
        assert dev[-1] < 0.05 * _norm(pc.errors)  # the same to first order
    slope = np.polyfit(np.log(nudges), np.log(dev), 1)[0]
    assert 1.8 < slope < 2.2


def test_approx_pc_updates_approach_pc_at_small_nudges():
    net, x, d = make_batch([5, 8, 8, 3], "tanh", seed=4)
    yhat = net(x).detach()
    rel, cos = [], []
    for s in (1e-1, 1e-2, 1e-3):
        y = yhat + s * (d - yhat)
        wp = weight_updates(net, pc_inference(net, x, y, gamma=0.5, steps=50_000, lr=0.3, tol=1e-15))
        wa = weight_updates(net, approx_pc_inference(net, x, y, gamma=0.5, subgoals=4))
        rel.append(_norm([w for w, _ in wa], [w for w, _ in wp]) / _norm([w for w, _ in wp]))
        cos.append(update_similarity(wp, wa))
    assert rel[0] > rel[1] > rel[2]
    assert rel[2] < 2e-3
    assert rel[0] / rel[2] > 30  # relative difference O(|e|): absolute O(|e|^2)
    assert cos[2] > 1 - 1e-5
