"""The Brownian-tree noise sampler (issue 14 item 1d): one Brownian path per seed, in both backends."""

from __future__ import annotations

import math

import pytest
import torch

from fastnips.diffusion.brownian import BrownianTreeNoiseSampler

F64 = torch.float64


def _backends():
    out = ["torch"]
    try:
        import torchsde  # noqa: F401
        out.append("torchsde")
    except ImportError:
        pass
    return out


@pytest.fixture(params=["torch", "torchsde"])
def backend(request):
    if request.param not in _backends():
        pytest.skip("torchsde is not installed (pip install torchsde)")
    return request.param


def _t(v):
    return torch.tensor(v, dtype=F64)


def test_increments_add_up_and_repeat(backend):
    x = torch.zeros(5, 3, dtype=F64)
    ns = BrownianTreeNoiseSampler(x, 0.01, 10.0, seed=4, backend=backend)
    a, b, c = 10.0, 2.5, 0.3
    w_ab = ns(_t(a), _t(b)) * math.sqrt(a - b)
    w_bc = ns(_t(b), _t(c)) * math.sqrt(b - c)
    w_ac = ns(_t(a), _t(c)) * math.sqrt(a - c)
    torch.testing.assert_close(w_ab + w_bc, w_ac, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ns(_t(b), _t(a)), -ns(_t(a), _t(b)), rtol=0, atol=1e-15)
    assert torch.equal(ns(_t(a), _t(b)), ns(_t(a), _t(b)))
    again = BrownianTreeNoiseSampler(x, 0.01, 10.0, seed=4, backend=backend)
    assert torch.equal(again(_t(b), _t(c)), ns(_t(b), _t(c)))         # another query order, the same path
    other = BrownianTreeNoiseSampler(x, 0.01, 10.0, seed=5, backend=backend)
    assert not torch.allclose(other(_t(a), _t(b)), ns(_t(a), _t(b)))


def test_law_of_the_increments(backend):
    """Standard normal increments; overlapping ones correlated as |I cap J| / sqrt(|I||J|), disjoint ones
    not (100,000 coordinates: 4.5 standard errors of 0.0032)."""
    n = 100_000
    x = torch.zeros(n, dtype=F64)
    ns = BrownianTreeNoiseSampler(x, 0.002, 80.0, seed=1, backend=backend)
    e1 = ns(_t(80.0), _t(10.0))
    e2 = ns(_t(80.0), _t(2.0))
    e3 = ns(_t(2.0), _t(0.05))
    se = 1 / math.sqrt(n)
    for e in (e1, e2, e3):
        assert abs(float(e.mean())) < 4.5 * se
        assert abs(float(e.var()) - 1) < 4.5 * math.sqrt(2) * se
    assert abs(float((e1 * e2).mean()) - math.sqrt(70.0 / 78.0)) < 4.5 * se
    assert abs(float((e2 * e3).mean())) < 4.5 * se


def test_batched_seeds_are_per_item_trees(backend):
    x = torch.zeros(3, 4, dtype=F64)
    ns = BrownianTreeNoiseSampler(x, 0.1, 5.0, seed=[7, 8, 9], backend=backend)
    out = ns(_t(5.0), _t(1.0))
    for k, s in enumerate([7, 8, 9]):
        one = BrownianTreeNoiseSampler(x[:1], 0.1, 5.0, seed=s, backend=backend)
        torch.testing.assert_close(out[k], one(_t(5.0), _t(1.0))[0], rtol=0, atol=1e-15)


def test_dtype_follows_x_and_floats_accepted():
    for dtype in (torch.float32, F64):
        ns = BrownianTreeNoiseSampler(torch.zeros(2, dtype=dtype), 0.1, 1.0, seed=0, backend="torch")
        assert ns(1.0, 0.5).dtype == dtype
        assert torch.equal(ns(1.0, 0.5), ns(torch.tensor(1.0, dtype=dtype), torch.tensor(0.5, dtype=dtype)))


def test_transform_log_sigma():
    x = torch.zeros(4, dtype=F64)
    ns = BrownianTreeNoiseSampler(x, 0.1, 10.0, seed=2, transform=torch.log, backend="torch")
    w = ns(_t(10.0), _t(1.0)) * math.sqrt(math.log(10.0)) + ns(_t(1.0), _t(0.1)) * math.sqrt(math.log(10.0))
    torch.testing.assert_close(w, ns(_t(10.0), _t(0.1)) * math.sqrt(math.log(100.0)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"sigma_min": 1.0, "sigma_max": 1.0}, "transform"),
    ({"sigma_min": -1.0}, "sigma_min"),
    ({"seed": [1, 2]}, "seed"),
    ({"seed": "a"}, "seed"),
    ({"backend": "cuda"}, "backend"),
    ({"tol": 0.0}, "tol"),
])
def test_bad_arguments(kwargs, match):
    args = dict(sigma_min=0.1, sigma_max=1.0, seed=0, backend="torch") | kwargs
    with pytest.raises(ValueError, match=match):
        BrownianTreeNoiseSampler(torch.zeros(3, 2), **args)


def test_bad_queries():
    ns = BrownianTreeNoiseSampler(torch.zeros(3), 0.1, 1.0, seed=0, backend="torch")
    with pytest.raises(ValueError, match="outside"):
        ns(2.0, 0.5)
    with pytest.raises(ValueError, match="differ"):
        ns(0.5, 0.5)
    with pytest.raises(ValueError, match="x must be"):
        BrownianTreeNoiseSampler(torch.zeros(3, dtype=torch.long), 0.1, 1.0)
