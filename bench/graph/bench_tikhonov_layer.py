"""The Tikhonov layer's graph handling: the cached Laplacian, and the cost of edge-weight gradients.

Random graphs (edges drawn uniformly, both directions listed, average degree 8), n = 1e4 and 1e5; F = 16
channels; K = 4 (Bernstein, simplex); q ~ U[0.1, 1]; float32 as in training; cpp CG at the default tol.

* group ``layer-forward-<n>``: one forward of ``TikhonovProp`` on a graph seen before.
  ``cached``: ``prop(x, q, edge_index)`` (the pattern of L cached in the module, values recomputed);
  ``rebuilt``: ``prop(x, q, L=normalized_laplacian(edge_index, n))``, L built and checked on every call
  (what the layer did before the cache). Checked equal (the same solve, relative 1e-5 in float32).
* group ``layer-backward-<n>``: forward + backward, ``x`` and ``phi`` requiring grad, with
  (``edge-weight-grad``) and without (``no-edge-grad``) edge weights that require grad; checked: the same
  output and x gradient.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.graph import TikhonovProp, normalized_laplacian  # noqa: E402

SIZES = {"1e4": 10_000, "1e5": 100_000}
F, K, AVG_DEGREE = 16, 4, 8


@functools.lru_cache(maxsize=2)
def problem(size: str):
    n = SIZES[size]
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, n, size=(2, n * AVG_DEGREE // 2))
    ei = torch.as_tensor(np.concatenate([pairs, pairs[::-1]], axis=1))
    x = torch.as_tensor(rng.standard_normal((n, F)), dtype=torch.float32)
    q = torch.as_tensor(rng.uniform(0.1, 1.0, n), dtype=torch.float32)
    w = torch.ones(ei.shape[1], dtype=torch.float32)
    return ei, x, q, w


@pytest.mark.parametrize("impl", ["cached", "rebuilt"])
@pytest.mark.parametrize("size", list(SIZES))
def test_layer_forward(benchmark, size, impl):
    torch.set_num_threads(1)
    ei, x, q, _ = problem(size)
    n = x.shape[0]
    benchmark.group = f"layer-forward-{size}"
    prop = TikhonovProp(K=K)
    want = prop(x, q, L=normalized_laplacian(ei, n)).detach()
    with torch.no_grad():
        if impl == "cached":
            prop(x, q, ei)  # the first call builds the pattern
            y = benchmark(prop, x, q, ei)
        else:
            y = benchmark(lambda: prop(x, q, L=normalized_laplacian(ei, n)))
    assert float((y - want).abs().max()) <= 1e-5 * float(want.abs().max())


@pytest.mark.parametrize("impl", ["no-edge-grad", "edge-weight-grad"])
@pytest.mark.parametrize("size", list(SIZES))
def test_layer_backward(benchmark, size, impl):
    torch.set_num_threads(1)
    ei, x0, q, w0 = problem(size)
    benchmark.group = f"layer-backward-{size}"
    prop = TikhonovProp(K=K)
    g = torch.ones_like(x0)

    def step():
        x = x0.clone().requires_grad_()
        w = w0.clone().requires_grad_(impl == "edge-weight-grad")
        y = prop(x, q, ei, edge_weight=w)
        y.backward(g)
        return y.detach(), x.grad

    y, gx = benchmark(step)
    prop_ref = TikhonovProp(K=K)
    x = x0.clone().requires_grad_()
    y_ref = prop_ref(x, q, ei, edge_weight=w0)
    y_ref.backward(g)
    y_ref = y_ref.detach()
    assert float((y - y_ref).abs().max()) <= 1e-5 * float(y_ref.abs().max())
    assert float((gx - x.grad).abs().max()) <= 1e-4 * float(x.grad.abs().max())
