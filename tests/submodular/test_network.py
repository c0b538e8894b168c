"""fastnips.submodular.PairwiseSubmodularNet: its forward equals the numpy function it exports (float64,
1e-12 relative), random and trained networks have zero certificate violations, training from (set, value)
pairs and from preferences fits held-out data better than chance / the initial network."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch model needs torch")

from fastnips.submodular import (  # noqa: E402
    FacilityLocation,
    PairwiseSubmodularNet,
    certify,
    fit_preferences,
    fit_values,
    greedy,
)
from fastnips.submodular.reference import all_masks  # noqa: E402


def _random_masks(n, count, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(count, n)) < rng.uniform(0.1, 0.7, (count, 1))


@pytest.mark.parametrize(("hidden", "alpha"), [((), 1.0), ((6,), 1.0), ((5, 3), 1.0), ((), 0.6)])
def test_forward_equals_export_and_certifies(hidden, alpha):
    torch.manual_seed(0)
    net = PairwiseSubmodularNet(4, hidden=hidden, alpha=alpha).double()
    for p in net.parameters():  # push the parameters away from their initial values
        p.data += torch.randn_like(p)
    x = torch.randn(10, 4, dtype=torch.float64)
    masks = all_masks(10)
    fn = net.export(x)
    with torch.no_grad():
        got = net(x, torch.as_tensor(masks)).numpy()
    np.testing.assert_allclose(got, fn.values(masks), rtol=1e-12, atol=1e-12 * np.abs(got).max())
    c = certify(fn)
    assert c.ok, str(c)
    assert c.alpha_observed >= alpha - 1e-12


def _facility_target(n=12, seed=0):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(n, 2))
    K = np.exp(-((pts[:, None] - pts[None]) ** 2).sum(-1))
    return pts, FacilityLocation(K)


def test_fit_values_learns_facility_location_and_stays_submodular():
    pts, target = _facility_target()
    x = torch.as_tensor(pts, dtype=torch.float32)
    train, test = _random_masks(12, 300, 1), _random_masks(12, 200, 2)
    y_train, y_test = target.values(train), target.values(test)
    torch.manual_seed(0)
    net = PairwiseSubmodularNet(2, hidden=(6,))
    with torch.no_grad():
        before = float(np.mean((net(x, torch.as_tensor(test)).numpy() - y_test) ** 2))
    hist = fit_values(net, x, train, y_train, epochs=250, lr=0.03)
    with torch.no_grad():
        after = float(np.mean((net(x, torch.as_tensor(test)).numpy() - y_test) ** 2))
    assert hist[-1] < hist[0]
    assert after < 0.05 * before, (before, after)
    fn = net.export(x)
    assert certify(fn).ok
    # the learned function's greedy picks are nearly as good for the target as the target's own greedy
    for k in (2, 3, 4):
        ours = target.values(np.isin(np.arange(12), greedy(fn, k).selected)[None])[0]
        assert ours >= 0.9 * greedy(target, k).value


def test_fit_preferences_ranks_held_out_pairs():
    pts, target = _facility_target(seed=3)
    x = torch.as_tensor(pts, dtype=torch.float32)

    def pairs(seed, count):
        a, b = _random_masks(12, count, seed), _random_masks(12, count, seed + 100)
        better = target.values(a) >= target.values(b)
        return np.where(better[:, None], a, b), np.where(better[:, None], b, a)

    win, lose = pairs(5, 400)
    twin, tlose = pairs(6, 300)
    torch.manual_seed(0)
    net = PairwiseSubmodularNet(2, hidden=())
    fit_preferences(net, x, win, lose, epochs=200, lr=0.03)
    with torch.no_grad():
        acc = float((net(x, torch.as_tensor(twin)) > net(x, torch.as_tensor(tlose))).float().mean())
    assert acc >= 0.85
    assert certify(net.export(x)).ok


def test_training_refuses_bad_input():
    net = PairwiseSubmodularNet(2, hidden=())
    x = torch.randn(4, 2)
    with pytest.raises(ValueError, match="masks must have shape"):
        fit_values(net, x, np.ones((3, 5), bool), np.ones(3))
    with pytest.raises(ValueError, match="y must hold 3 finite"):
        fit_values(net, x, np.ones((3, 4), bool), [1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="same shape"):
        fit_preferences(net, x, np.ones((3, 4), bool), np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="epochs"):
        fit_values(net, x, np.ones((3, 4), bool), np.ones(3), epochs=0)
    with pytest.raises(ValueError, match="x must be a finite"):
        fit_values(net, x * np.nan, np.ones((3, 4), bool), np.ones(3))
    with pytest.raises(ValueError, match="hidden"):
        PairwiseSubmodularNet(2, hidden=(3,), alpha=0.5)
