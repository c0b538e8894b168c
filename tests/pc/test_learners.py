"""Learners: backprop's gradient by hand, PC -> backprop direction for a weak nudge, the grads written, learned
DFC feedback aligning with J^T, bad input refused with a message naming the argument."""

from __future__ import annotations

import pytest
import torch

from fastnips.pc import (
    ApproxPC,
    Backprop,
    DeepFeedbackControl,
    PCNet,
    PredictiveCoding,
    approx_pc_inference,
    dfc_inference,
    pc_inference,
    update_similarity,
)

from .conftest import make_batch


def test_backprop_updates_by_hand():
    net, x, y = make_batch([3, 4, 2], "tanh", seed=0)
    (dW1, db1), (dW2, db2) = Backprop(net).weight_updates(x, y)
    W1, b1, W2, b2 = (p.detach() for p in (net.layers[0].weight, net.layers[0].bias, net.layers[1].weight,
                                            net.layers[1].bias))
    h = x @ W1.T + b1
    e = y - (torch.tanh(h) @ W2.T + b2)
    d1 = (e @ W2) * (1 - torch.tanh(h) ** 2)
    torch.testing.assert_close(dW2, e.T @ torch.tanh(h) / x.shape[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dW1, d1.T @ x / x.shape[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(db1, d1.mean(0), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(db2, e.mean(0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda n: PredictiveCoding(n, gamma=100.0, steps=3000, lr=0.2),
    lambda n: DeepFeedbackControl(n, alpha=100.0, steps=3000, dt=0.3, tau_u=100.0),
    lambda n: ApproxPC(n, gamma=100.0, subgoals=2),
])
def test_weak_nudge_limit_is_backprop_direction(make):
    net, x, y = make_batch([5, 7, 7, 3], "tanh", seed=1)
    bp = Backprop(net).weight_updates(x, y)
    ours = make(net).weight_updates(x, y)
    assert update_similarity(bp, ours) > 0.999
    scaled = [(100.0 * w, 100.0 * b) for w, b in ours]
    gap = max(float((a[0] - b[0]).abs().max()) for a, b in zip(scaled, bp))
    assert gap < 0.05 * max(float(w.abs().max()) for w, _ in bp)  # gamma * update = gradient + O(|J|^2 / gamma)


def test_set_grads_feeds_an_optimizer_and_lowers_the_loss():
    net, x, y = make_batch([5, 8, 3], "tanh", B=16, seed=2)
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    learner = PredictiveCoding(net, gamma=1.0, steps=30, lr=0.2)
    before = float(((y - net(x)) ** 2).sum().detach())
    for _ in range(60):
        opt.zero_grad()
        inf = learner.set_grads(x, y)
        opt.step()
    assert inf.iterations == 30
    assert float(((y - net(x)) ** 2).sum().detach()) < 0.5 * before
    assert learner(x).shape == (16, 3)


def test_learned_feedback_aligns_with_jacobian():
    net, x, _ = make_batch([5, 8, 3], "tanh", B=64, seed=3)
    dfc = DeepFeedbackControl(net, feedback="learned", seed=0)
    first = dfc.learn_feedback(x, steps=1, lr=0.05)
    after = dfc.learn_feedback(x, steps=200, lr=0.05)
    assert after < 0.5 * first
    assert after < 0.3
    _, x2, y2 = make_batch([5, 8, 3], "tanh", B=8, seed=3)
    assert dfc.infer(x2, y2).extra["u"].shape == (8, 3)


def test_similarity_edge_cases():
    a = [(torch.ones(2, 2), torch.ones(2))]
    assert update_similarity(a, a) == pytest.approx(1.0)
    assert update_similarity(a, [(torch.zeros(2, 2), torch.zeros(2))]) == 0.0
    with pytest.raises(ValueError, match="layers"):
        update_similarity(a, a + a)


@pytest.mark.parametrize(("call", "match"), [
    (lambda n, x, y: pc_inference(n, x, y, gamma=0.0), "gamma"),
    (lambda n, x, y: pc_inference(n, x, y, gamma=-1.0), "gamma"),
    (lambda n, x, y: pc_inference(n, x, y, steps=0), "steps"),
    (lambda n, x, y: pc_inference(n, x, y, clamp="firm"), "clamp"),
    (lambda n, x, y: pc_inference(n, x, y, lr=0.0), "lr"),
    (lambda n, x, y: pc_inference(n, x[:, :2], y), "x must"),
    (lambda n, x, y: pc_inference(n, x, y[:, :2]), "y must"),
    (lambda n, x, y: pc_inference(n, x, y[:3]), "y must"),
    (lambda n, x, y: pc_inference(n, x.float(), y), "dtype"),
    (lambda n, x, y: pc_inference(n, x * float("nan"), y), "NaN"),
    (lambda n, x, y: dfc_inference(n, x, y, alpha=0.0), "alpha"),
    (lambda n, x, y: dfc_inference(n, x, y, steps=0), "steps"),
    (lambda n, x, y: dfc_inference(n, x, y, dt=-1.0), "dt"),
    (lambda n, x, y: dfc_inference(n, x, y, Q=[torch.zeros(2, 2)]), "Q must"),
    (lambda n, x, y: approx_pc_inference(n, x, y, gamma=0.0), "gamma"),
    (lambda n, x, y: approx_pc_inference(n, x, y, subgoals=0), "subgoals"),
    (lambda n, x, y: PredictiveCoding(n, gamma=0.0).infer(x, y), "gamma"),
    (lambda n, x, y: DeepFeedbackControl(n, feedback="random"), "feedback"),
    (lambda n, x, y: DeepFeedbackControl(n).learn_feedback(x), "learned"),
    (lambda n, x, y: PCNet([3]), "sizes"),
    (lambda n, x, y: PCNet([3, 2], activation="gelu"), "activation"),
])
def test_bad_input(call, match):
    net, x, y = make_batch([4, 5, 3], "tanh", seed=0)
    with pytest.raises(ValueError, match=match):
        call(net, x, y)


def test_bad_net_type():
    with pytest.raises(TypeError, match="PCNet"):
        PredictiveCoding(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="PCNet"):
        pc_inference(torch.nn.Linear(2, 2), torch.zeros(1, 2), torch.zeros(1, 2))
