"""The device Tikhonov solver on CUDA (skipped without a device and the binding) and the public entry points
(`tikhonov_solve(backend="triton"|"cuda")`, the layer on the device); tolerances as in test_tikhonov_device.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips.graph import chebyshev_coefficients, normalized_laplacian
from fastnips.graph import reference as ref

from ._builders import assert_close, erdos_renyi
from ._device_builders import (
    _INTERPRETED,
    _TRITON_WHY,
    DEV,
    GRAPHS,
    REL,
    SOLVE_REL,
    SOLVE_TOL,
    TDT,
    _device,
    csr_tensors,
    needs_cuda,
    needs_triton,
    problem,
    t,
)

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------------------
# CUDA (skipped without a device and the binding)


@needs_cuda
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_cuda_step_and_poly_apply(dtype, index_dtype):
    dev = _device()
    rng = np.random.default_rng(0)
    for graph in ("erdos-renyi", "isolated+empty-rows", "star"):
        L = GRAPHS[graph]()
        n = L.shape[0]
        for K in (0, 1, 2, 4):
            theta = rng.uniform(0, 1, K + 1)
            P = ref.poly_matrix_reference(L, theta).toarray()
            q = rng.uniform(0.5, 2.0, n)
            for F in (1, 3, 8, 40, 100):
                V = rng.standard_normal((n, F))
                args = (*csr_tensors(L, dtype, index_dtype, device="cuda"), chebyshev_coefficients(theta),
                        t(V, dtype, device="cuda"))
                Y = dev.device_poly_apply(*args, q=t(q, dtype, device="cuda"), backend="cuda")
                assert Y.device.type == "cuda"
                assert_close(Y, P @ V + q[:, None] * V, REL[dtype], f"{graph} K={K} F={F}")


@needs_cuda
@pytest.mark.parametrize("graph", list(GRAPHS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_solve_matches_reference(graph, dtype):
    dev = _device()
    L = GRAPHS[graph]()
    n = L.shape[0]
    for F in (1, 3, 8, 64):
        theta, q, X = problem(n, F, seed=F)
        cheb = chebyshev_coefficients(theta)
        Yref = ref.tikhonov_solve_reference(L, theta, q, X)[0]
        args = (*csr_tensors(L, dtype, device="cuda"), cheb, t(q, dtype, device="cuda"), t(X, dtype, device="cuda"))
        Y, its, res = dev.device_tikhonov_solve(*args, tol=SOLVE_TOL[dtype], maxiter=500, backend="cuda")
        assert Y.device.type == "cuda"
        assert Y.dtype == TDT[dtype]
        assert_close(Y, Yref, SOLVE_REL[dtype], f"F={F}")
        assert (res <= SOLVE_TOL[dtype]).all()
        # the convergence test's lag changes nothing but idle iterations
        Y0, its0, _ = dev.device_tikhonov_solve(*args, tol=SOLVE_TOL[dtype], maxiter=500, backend="cuda",
                                                check_lag=0)
        np.testing.assert_array_equal(its0, its)
        assert torch.equal(Y0, Y)
        # the Triton kernels on the GPU, when Triton runs there
        if not _TRITON_WHY and not _INTERPRETED:
            Yt, _, _ = dev.device_tikhonov_solve(*args, tol=SOLVE_TOL[dtype], maxiter=500, backend="triton")
            assert_close(Yt, Yref, SOLVE_REL[dtype], f"triton on the GPU, F={F}")


@needs_cuda
def test_cuda_indefinite_operator_raises():
    dev = _device()
    L = sp.csr_matrix(np.array([[1.0, -3.0], [-3.0, 1.0]]))
    with pytest.raises(ValueError, match="not positive definite"):
        dev.device_tikhonov_solve(*csr_tensors(L, np.float64, device="cuda"), np.array([1.0, -1.0]),
                                  t(np.ones(2), np.float64, device="cuda"),
                                  t(np.array([1.0, -1.0]), np.float64, device="cuda"), tol=1e-10, maxiter=50,
                                  backend="cuda")


# ---------------------------------------------------------------------------------------------------
# the public entry points: tikhonov_solve(backend="triton"|"cuda") and the layer on the device


def _public_problem(seed=11, n=48, F=3):
    rng = np.random.default_rng(seed)
    ei, n = erdos_renyi(n, 0.1, seed)
    L = normalized_laplacian(ei, n)
    theta = rng.uniform(0.0, 1.0, 5)
    q = rng.uniform(0.2, 2.0, n)
    X = rng.standard_normal((n, F))
    want = ref.tikhonov_solve_reference(L, theta, q, X, tol=1e-14, maxiter=10_000)[0]
    return L, theta, q, X, want


def _public_backends():
    return [pytest.param("triton", marks=needs_triton), pytest.param("cuda", marks=needs_cuda)]


@pytest.mark.parametrize("backend", _public_backends())
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_tikhonov_solve_public_device_backends_match_reference(backend, dt):
    from fastnips.graph import tikhonov_solve

    L, theta, q, X, want = _public_problem()
    dev = DEV if backend == "triton" else "cuda"
    Xt = torch.as_tensor(X.astype(dt), device=dev)
    Y, info = tikhonov_solve(L, theta, q, Xt, backend=backend, tol=SOLVE_TOL[dt], return_info=True)
    assert isinstance(Y, torch.Tensor)
    assert Y.device.type == dev
    assert Y.dtype == TDT[dt]
    assert info.backend == backend
    assert info.method == "cg-jacobi"
    assert info.converged.all()
    err = float(np.abs(Y.cpu().numpy() - want).max()) / float(np.abs(want).max())
    assert err < SOLVE_REL[dt], err
    # numpy in, numpy out; q as a tensor on the device; a vector right-hand side
    Yn = tikhonov_solve(L, theta, torch.as_tensor(q, device=dev), X[:, 0].astype(dt), backend=backend,
                        tol=SOLVE_TOL[dt])
    assert isinstance(Yn, np.ndarray)
    assert Yn.shape == (X.shape[0],)
    assert float(np.abs(Yn - want[:, 0]).max()) / float(np.abs(want[:, 0]).max()) < SOLVE_REL[dt]


@needs_triton
def test_tikhonov_solve_device_checks_inputs_like_the_host():
    from fastnips.graph import tikhonov_solve

    L, theta, q, X, _ = _public_problem()
    Xt = torch.as_tensor(X, device=DEV)
    bad_q = torch.as_tensor(q, device=DEV).clone()
    bad_q[3] = 0.0
    with pytest.raises(ValueError, match=r"q must be > 0 everywhere \(q\[3\]"):
        tikhonov_solve(L, theta, bad_q, Xt, backend="triton")
    nan_x = Xt.clone()
    nan_x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN"):
        tikhonov_solve(L, theta, q, nan_x, backend="triton")
    with pytest.raises(ValueError, match=r"X must have shape \(n,\) or \(n, F\) with n = 48"):
        tikhonov_solve(L, theta, q, Xt[:-1], backend="triton")
    with pytest.raises(ValueError, match="Bernstein coefficients must be >= 0"):
        tikhonov_solve(L, -theta, q, Xt, backend="triton")
    with pytest.raises(ValueError, match="method='dense' has no 'triton' backend"):
        tikhonov_solve(L, theta, q, Xt, backend="triton", method="dense")


def test_auto_keeps_host_tensors_on_the_host():
    """backend="auto" with a CPU tensor is a host solve (cpp or reference), never the Triton interpreter."""
    from fastnips.graph import tikhonov_solve

    L, theta, q, X, want = _public_problem()
    Y, info = tikhonov_solve(L, theta, q, torch.as_tensor(X), return_info=True)
    assert info.backend in ("cpp", "reference")
    assert float(np.abs(Y.numpy() - want).max()) < 1e-8


@pytest.mark.parametrize("backend", _public_backends())
def test_layer_on_device_matches_host_gradients_and_gradcheck(backend):
    from fastnips.graph import tikhonov_prop

    L, theta, q, X, _ = _public_problem(seed=5, n=24, F=2)
    dev = DEV if backend == "triton" else "cuda"
    g = torch.as_tensor(np.random.default_rng(0).standard_normal(X.shape), device=dev)

    def grads(b, device):
        x = torch.as_tensor(X, device=device).requires_grad_()
        qt = torch.as_tensor(q, device=device).requires_grad_()
        th = torch.as_tensor(theta, device=device).requires_grad_()
        y = tikhonov_prop(x, qt, th, L, backend=b, tol=1e-13)
        (y * g.to(device)).sum().backward()
        return [t.detach().cpu() for t in (y, x.grad, qt.grad, th.grad)]

    host = grads("reference", "cpu")
    dev_out = grads(backend, dev)
    for name, a, b in zip(("y", "dx", "dq", "dtheta"), host, dev_out):
        assert float((a - b).abs().max()) <= 1e-9 * max(float(a.abs().max()), 1.0), name
    # finite differences through the device path too; theta only under the interpreter (each of the
    # 2(n F + n + K + 1) perturbed solves is an interpreted CG), everything on a GPU
    x = torch.as_tensor(X, device=dev).requires_grad_(backend == "cuda")
    qt = torch.as_tensor(q, device=dev).requires_grad_(backend == "cuda")
    th = torch.as_tensor(theta, device=dev).requires_grad_()
    def f(a, b, c):
        y = tikhonov_prop(a, b, c, L, backend=backend, tol=1e-13)
        return y if backend == "cuda" else (y * g).sum()  # interpreter: one output, one backward pass

    assert torch.autograd.gradcheck(f, (x, qt, th), eps=1e-6, atol=1e-6)
