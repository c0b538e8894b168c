"""The metric of fastnips.scenegraph against the explicit joint distributions (reference.py), its axioms, its
gradients near zero probabilities and its refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastnips.scenegraph import bernoulli_hellinger, hellinger, sqrt_prob, triplet_hellinger  # noqa: E402
from fastnips.scenegraph import reference as ref  # noqa: E402

from .conftest import graph, simplex  # noqa: E402


def _bern(g, *shape):
    return torch.rand(*shape, generator=g, dtype=torch.float64)


@pytest.mark.parametrize(("multilabel", "mode", "R"), [(False, "mean", 8), (True, "mean", 8), (True, "joint", 5)])
def test_factorised_equals_bruteforce(multilabel, mode, R):
    g = torch.Generator().manual_seed(0)
    C, N, E = 20, 7, 11
    ei = graph(g, N, E)
    P, Q = simplex(g, N, C), simplex(g, N, C)
    pe, qe = (_bern(g, E, R), _bern(g, E, R)) if multilabel else (simplex(g, E, R), simplex(g, E, R))
    got = triplet_hellinger(P, pe, Q, qe, ei, multilabel=multilabel, mode=mode, squared=True)
    want = 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei, multilabel=multilabel, mode=mode)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("multilabel", "mode"), [(False, "mean"), (True, "mean"), (True, "joint")])
@pytest.mark.parametrize("target_per_edge", [True, False])
def test_contextual_equals_bruteforce(multilabel, mode, target_per_edge):
    g = torch.Generator().manual_seed(1)
    C, R, N, E = 5, 4, 6, 8
    ei = graph(g, N, E)
    P, Q = simplex(g, N, C), simplex(g, N, C)
    pe = _bern(g, E, C, C, R) if multilabel else simplex(g, E, C, C, R)
    qshape = (E, R) if target_per_edge else (E, C, C, R)
    qe = _bern(g, *qshape) if multilabel else simplex(g, *qshape)
    got = triplet_hellinger(P, pe, Q, qe, ei, contextual=True, multilabel=multilabel, mode=mode, squared=True)
    want = 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei, multilabel=multilabel, mode=mode)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_contextual_with_class_independent_predicate_is_the_factorised_form():
    g = torch.Generator().manual_seed(2)
    C, R, N, E = 4, 3, 5, 6
    ei = graph(g, N, E)
    P, Q, pe, qe = simplex(g, N, C), simplex(g, N, C), simplex(g, E, R), simplex(g, E, R)
    ctx = triplet_hellinger(P, pe[:, None, None].expand(-1, C, C, -1), Q, qe, ei, contextual=True)
    torch.testing.assert_close(ctx, triplet_hellinger(P, pe, Q, qe, ei), rtol=0, atol=1e-12)


@pytest.mark.parametrize("multilabel", [False, True])
def test_metric_axioms_on_triplet_fields(multilabel):
    g = torch.Generator().manual_seed(3)
    C, R, N, E = 6, 5, 8, 40
    ei = graph(g, N, E)
    fields = [(simplex(g, N, C, sharp=3.0), _bern(g, E, R) if multilabel else simplex(g, E, R, sharp=3.0))
              for _ in range(3)]
    d = lambda a, b: triplet_hellinger(*a[:1], a[1], b[0], b[1], ei, multilabel=multilabel)
    (A, B, S) = fields
    assert torch.all(d(A, A).abs() < 1e-7)
    torch.testing.assert_close(d(A, B), d(B, A), rtol=0, atol=1e-14)
    assert torch.all(d(A, S) <= d(A, B) + d(B, S) + 1e-12)
    for x, y in ((A, B), (A, S), (B, S)):
        v = d(x, y)
        assert torch.all((v > 0) & (v <= 1))


def test_hellinger_values_and_triangle():
    assert float(hellinger(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))) == 1.0
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    q = torch.tensor([0.9, 0.1], dtype=torch.float64)
    want = (1 - (0.45 ** 0.5 + 0.05 ** 0.5)) ** 0.5
    assert abs(float(hellinger(p, q)) - want) < 1e-15
    g = torch.Generator().manual_seed(4)
    a, b, c = (simplex(g, 1000, 7, sharp=2.0) for _ in range(3))
    assert torch.all(hellinger(a, c) <= hellinger(a, b) + hellinger(b, c) + 1e-12)
    torch.testing.assert_close(hellinger(a, b), ref.hellinger_bruteforce(a, b), rtol=0, atol=1e-12)


def test_bernoulli_modes_equal_their_explicit_distributions():
    g = torch.Generator().manual_seed(5)
    p, q = _bern(g, 9, 6), _bern(g, 9, 6)
    for mode, explicit in (("mean", ref.bernoulli_mixture), ("joint", ref.bernoulli_joint)):
        got = bernoulli_hellinger(p, q, mode=mode)
        torch.testing.assert_close(got, ref.hellinger_bruteforce(explicit(p), explicit(q)), rtol=0, atol=1e-12)
    assert float(bernoulli_hellinger(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]), squared=True)) == 0.5


def test_gradients_finite_at_zero_probability_and_gradcheck():
    p = torch.tensor([0.0, 1e-300, 0.3, 0.7 - 1e-300], dtype=torch.float64, requires_grad=True)
    q = torch.tensor([0.5, 0.0, 0.25, 0.25], dtype=torch.float64)
    hellinger(p, q, squared=True).backward()
    assert torch.isfinite(p.grad).all()
    x = torch.tensor([1e-4, 0.3, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: sqrt_prob(t), (x,))
    g = torch.Generator().manual_seed(6)
    P = simplex(g, 4, 3).requires_grad_(True)
    Q, pe, qe, ei = simplex(g, 4, 3), simplex(g, 5, 2), simplex(g, 5, 2), graph(g, 4, 5)
    assert torch.autograd.gradcheck(lambda a: triplet_hellinger(a / a.sum(-1, keepdim=True), pe, Q, qe, ei,
                                                                squared=True), (P,))


@pytest.mark.parametrize(("call", "match"), [
    (lambda: hellinger(torch.tensor([0.5, 0.6]), torch.tensor([0.5, 0.5])), "summing to 1"),
    (lambda: hellinger(torch.tensor([-0.1, 1.1]), torch.tensor([0.5, 0.5])), r"in \[0, 1\]"),
    (lambda: hellinger(torch.tensor([float("nan"), 1.0]), torch.tensor([0.5, 0.5])), "NaN"),
    (lambda: hellinger([0.5, 0.5], torch.tensor([0.5, 0.5])), "torch.Tensor"),
    (lambda: bernoulli_hellinger(torch.tensor([0.5]), torch.tensor([0.5]), mode="max"), "mode"),
    (lambda: triplet_hellinger(torch.eye(2), torch.ones(1, 1), torch.eye(2), torch.ones(1, 1),
                               torch.tensor([[0], [2]])), "outside"),
    (lambda: triplet_hellinger(torch.eye(2), torch.ones(1, 1), torch.eye(2), torch.ones(1, 1),
                               torch.tensor([[0.0], [1.0]])), "integer"),
    (lambda: triplet_hellinger(torch.eye(2), torch.ones(2, 1), torch.eye(2), torch.ones(2, 1),
                               torch.tensor([[0], [1]])), "shape"),
    (lambda: triplet_hellinger(torch.eye(2), torch.ones(1, 1), torch.eye(3), torch.ones(1, 1),
                               torch.tensor([[0], [1]])), "same shape"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
