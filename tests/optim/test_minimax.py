"""Decentralised minimax (fastnips.optim): the centralised limit, convergence with equal steps, the GDA baseline's
failure at large kappa, topologies and mixing checks, the distributed engine against the in-process one (4 gloo
processes on loopback), refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.optim import (  # noqa: E402
    Quadratic,
    RobustLogistic,
    TorchProblem,
    check_mixing,
    complete,
    decentralized_minimax,
    erdos_renyi,
    ring,
    torus,
)
from fastnips.optim.reference import ds_gda_centralized  # noqa: E402

KW = {"lr": 0.05, "r1": 2.0, "r2": 1.0, "beta": 0.02, "mu": 0.2}


def test_one_node_is_the_centralised_method_exactly():
    p = Quadratic(10.0, nodes=1, seed=2)
    res = decentralized_minimax(p, ring(1), steps=300, record_every=300, **KW)
    x, y = ds_gda_centralized(lambda a, b, k: p.local_grad(0, a, b, k), p.x0, p.y0, steps=300, **KW)
    # equal up to the rounding of the tracker's update s + g - g_prev (= g in exact arithmetic)
    torch.testing.assert_close(res.x[0], x, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.y[0], y, rtol=0, atol=1e-12)


def test_complete_mixing_with_identical_data_is_centralised():
    p = Quadratic(10.0, nodes=4, heterogeneity=0.0, seed=2)
    res = decentralized_minimax(p, complete(4), steps=300, record_every=300, **KW)
    x, y = ds_gda_centralized(lambda a, b, k: p.local_grad(0, a, b, k), p.x0, p.y0, steps=300, **KW)
    for i in range(4):
        torch.testing.assert_close(res.x[i], x, rtol=0, atol=1e-12)
        torch.testing.assert_close(res.y[i], y, rtol=0, atol=1e-12)


def test_equal_steps_converge_on_the_deterministic_quadratic():
    p = Quadratic(5.0, nodes=8, seed=0)
    res = decentralized_minimax(p, ring(8), steps=3000, record_every=100, tol=1e-8, lr=0.1, r1=1.0, r2=1.0,
                                beta=0.5, mu=0.5)
    first, last = res.history[0], res.history[-1]
    assert last["stationarity"] < 1e-6 * max(1.0, first["stationarity"])
    assert last["consensus"] < 1e-12


def test_plain_gda_with_equal_steps_fails_at_large_kappa_where_dsgda_does_not():
    p = Quadratic(80.0, nodes=4, seed=0)
    gda = decentralized_minimax(p, ring(4), method="gda", steps=1500, lr=0.1, record_every=100)
    ds = decentralized_minimax(p, ring(4), method="dsgda", steps=1500, record_every=100, **{**KW, "lr": 0.1})
    start = ds.history[0]["stationarity"]
    assert gda.history[-1]["stationarity"] > 10 * start  # diverges
    assert ds.history[-1]["stationarity"] < 0.1 * start


def test_robust_logistic_and_torch_problem_run():
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    X = (d.data - d.data.mean(0)) / d.data.std(0)
    for split in ("iid", "label-skewed"):
        p = RobustLogistic(X, d.target, nodes=4, split=split)
        res = decentralized_minimax(p, ring(4), method="dsgda", steps=200, lr=0.1, record_every=50)
        assert res.history[-1]["stationarity"] < 0.5 * res.history[0]["stationarity"]
    m = torch.nn.Module()
    m.a = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    m.b = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    batches = [torch.randn(3, dtype=torch.float64, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    loss = lambda mod, t: 0.5 * (mod.a ** 2).sum() + (mod.a * mod.b * t).sum() - (mod.b ** 2).sum()
    res = decentralized_minimax(TorchProblem(m, [m.a], [m.b], loss, batches), ring(3), steps=400, record_every=100)
    assert res.history[-1]["stationarity"] < 0.2 * res.history[0]["stationarity"]


def test_topologies_and_mixing_checks():
    for t in (ring(6), torus(2, 3), erdos_renyi(6, 0.5, seed=3), complete(6)):
        W = t.W
        np.testing.assert_allclose(W.sum(0), 1, atol=1e-14)
        np.testing.assert_allclose(W, W.T, atol=0)
        assert 0 < t.spectral_gap <= 1 + 1e-12
    assert ring(6).spectral_gap < torus(2, 3).spectral_gap <= complete(6).spectral_gap
    with pytest.raises(ValueError, match="doubly stochastic"):
        check_mixing(np.array([[0.6, 0.4], [0.4, 0.4]]))
    with pytest.raises(ValueError, match="disconnected"):
        check_mixing(np.eye(3))
    with pytest.raises(ValueError, match="symmetric"):
        check_mixing(np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.25, 0.0, 0.75]]))


@pytest.mark.parametrize(("kw", "match"), [({"lr": 0.0}, "lr"), ({"method": "adam"}, "method"),
                                           ({"beta": -1.0}, "beta"), ({"steps": 0}, "steps"),
                                           ({"x0": torch.zeros(3)}, "x0")])
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        decentralized_minimax(Quadratic(5.0, nodes=2), ring(2), **kw)


def test_bad_problem_shapes():
    with pytest.raises(ValueError, match="split over 2 nodes"):
        decentralized_minimax(Quadratic(5.0, nodes=2), ring(3))
    m = torch.nn.Linear(2, 2).double()
    with pytest.raises(ValueError, match="disjoint"):
        TorchProblem(m, [m.weight], [m.weight], lambda *_: None, [None])


DIST = textwrap.dedent("""
    import torch, torch.distributed as dist
    from fastnips.optim import Distributed, Quadratic, decentralized_minimax, ring
    dist.init_process_group("gloo")
    p = Quadratic(10.0, nodes=4, noise=0.01, seed=1)
    res = decentralized_minimax(p, ring(4), steps=60, record_every=20, engine=Distributed(ring(4)))
    out = [torch.empty_like(res.x[0]) for _ in range(4)]
    dist.all_gather(out, res.x[0].contiguous())
    if dist.get_rank() == 0:
        torch.save(torch.stack(out), __import__("sys").argv[1])
    dist.destroy_process_group()
""")


def test_distributed_engine_equals_in_process_bitwise(tmp_path):
    pytest.importorskip("torch.distributed")
    script = tmp_path / "run.py"
    script.write_text(DIST)
    out = tmp_path / "x.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    with socket.socket() as sk:  # a free loopback port for the rendezvous
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=4", f"--master-port={port}",
                        str(script), str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    p = Quadratic(10.0, nodes=4, noise=0.01, seed=1)
    res = decentralized_minimax(p, ring(4), steps=60, record_every=20)
    assert torch.equal(torch.load(out), res.x)


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    return (d.data - d.data.mean(0)) / d.data.std(0), d.target


def test_auc_gradients_match_autograd_and_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    from fastnips.optim import AUCMaximization

    X, labels = _breast_cancer()
    p = AUCMaximization(X, labels, nodes=3, split="label-skewed")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(p.n_x, dtype=torch.float64, generator=g)
    y = torch.randn(1, dtype=torch.float64, generator=g)
    for i in range(3):
        gx, gy = p.local_grad(i, x, y, 0)
        xx, yy = x.clone().requires_grad_(), y.clone().requires_grad_()
        ax, ay = torch.autograd.grad(p._objective(xx, yy[0], p.parts[i], 3 / p.N), (xx, yy))
        torch.testing.assert_close(gx, ax, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(gy, ay, rtol=1e-12, atol=1e-12)
    # alpha* maximises the global objective: the y-gradient vanishes there
    a = torch.tensor([p.alpha_star(x)], dtype=torch.float64)
    assert abs(float(p._grad(x, a, slice(None), 1.0 / p.N)[1][0])) < 1e-12
    assert p.auc(x) == pytest.approx(roc_auc_score(labels, (p.X @ x[:-2]).numpy()), abs=1e-12)
    res = decentralized_minimax(p, ring(3), method="gda", steps=1000, lr=0.01, record_every=100)
    assert res.history[-1]["stationarity"] < 0.05 * res.history[0]["stationarity"]
    assert p.auc(res.x.mean(0)) > 0.98


def test_in_process_mixing_equals_the_dense_product():
    from fastnips.optim import InProcess

    U = torch.randn(9, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for t in (ring(9), torus(3, 3), erdos_renyi(9, 0.3, seed=2), complete(9)):
        torch.testing.assert_close(InProcess(t).mix(U), torch.from_numpy(t.W) @ U, rtol=1e-14, atol=1e-14)


def test_batched_quadratic_gradients_do_not_depend_on_the_batch():
    p = Quadratic(10.0, nodes=5, noise=0.1, seed=3)
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(5, 10, dtype=torch.float64, generator=g), torch.randn(5, 10, dtype=torch.float64, generator=g)
    gx, gy = p.local_grads(list(range(5)), X, Y, 7)
    for i in range(5):
        a, b = p.local_grad(i, X[i], Y[i], 7)
        assert torch.equal(a, gx[i])
        assert torch.equal(b, gy[i])
        ref = p.A_i[i] @ X[i] + p.B @ Y[i]
        assert 0 < float((a - ref).norm()) < 1.0  # the noise: sigma 0.1 in 10 dimensions


def test_periodic_mixing_is_not_called_disconnected_and_traffic_counts_neighbours():
    """A connected bipartite W without self-weights has spectral gap 0 because it is periodic, not disconnected;
    a zero self-weight must not shrink the counted traffic (each node here sends to two neighbours)."""
    with pytest.raises(ValueError, match="periodic"):
        check_mixing(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="disconnected"):
        check_mixing(np.eye(2))
    t = check_mixing(np.array([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]]))
    res = decentralized_minimax(Quadratic(5.0, nodes=3), t, steps=2)
    assert res.floats_sent_per_step == 2 * 2 * (10 + 10)  # dsgda mixes x, y and both trackers: 2 vectors per side
    assert t.edges == 3
    assert ring(4).edges == 4
    assert decentralized_minimax(Quadratic(5.0, nodes=3), ring(3), steps=2).floats_sent_per_step == 80


@pytest.mark.parametrize(("kw", "match"), [({"lr": float("inf")}, "lr must be a finite"),
                                           ({"r1": float("nan")}, "r1"), ({"lr": True}, "lr"),
                                           ({"tol": float("nan")}, "tol"), ({"tol": -1.0}, "tol"),
                                           ({"x0": torch.full((10,), float("nan"))}, "x0 must be finite"),
                                           ({"steps": 2.5}, "steps")])
def test_non_finite_arguments_are_refused(kw, match):
    """lr=inf and a NaN start used to run and return a NaN history; tol=NaN silently never stopped."""
    with pytest.raises(ValueError, match=match):
        decentralized_minimax(Quadratic(5.0, nodes=2), ring(2), **{"steps": 3, **kw})
    with pytest.raises(ValueError, match="kappa must be finite"):
        Quadratic(float("inf"), nodes=2)  # was numpy's LinAlgError


def test_numpy_integer_steps_are_accepted():
    r = decentralized_minimax(Quadratic(5.0, nodes=2), ring(2), steps=np.int64(3), record_every=np.int64(1))
    assert [h["step"] for h in r.history] == [1, 2, 3]


def test_the_last_step_is_always_recorded():
    """steps=25, record_every=10 used to end the history at step 20, so summaries (`fastnips minimax --steps 5`
    printed steps=1) reported an earlier iterate than the one returned."""
    p = Quadratic(5.0, nodes=2)
    r = decentralized_minimax(p, ring(2), steps=25, record_every=10)
    assert [h["step"] for h in r.history] == [1, 10, 20, 25]
    assert r.history[-1]["stationarity"] == p.stationarity(r.x.mean(0), r.y.mean(0))
    from fastnips.optim.launch import run

    assert run("quadratic", nodes=4, steps=5)["steps"] == 5  # the command's summary line (it said steps=1)
