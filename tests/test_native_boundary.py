"""The native boundary (fastnips._C) refuses what it cannot handle with a clear error, never a crash or a silent
wrong answer: thread counts, object and big-endian arrays, integer ids narrowed to int32, Python objects made
only with the GIL held. Crashes are proven gone in a subprocess (`sys.executable -c`, bounded by a timeout)."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend

from .helpers import new_field_calls

WHY = _backend.why_unavailable("cpp")
pytestmark = pytest.mark.skipif(bool(WHY), reason=f"backend 'cpp' not available: {WHY}")


def native():
    return _backend.native()


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter; the test fails on a crash (signal, libgomp exit) or a hang."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def assert_survived(r: subprocess.CompletedProcess, marker: str) -> None:
    assert r.returncode == 0, r.stderr[-2000:]
    assert marker in r.stdout, r.stdout[-2000:]


# ------------------------------------------------------------------------------------------- builders


def laplacian(n: int = 300, seed: int = 0) -> sp.csr_matrix:
    """A normalised Laplacian of a random graph (eigenvalues in [0, 2], so 1 + 0.5 (L - I) is SPD)."""
    A = sp.random(n, n, density=8 / n, format="csr", random_state=seed)
    A = ((A + A.T) > 0).astype(np.float64) + sp.eye(n)
    d = 1 / np.sqrt(np.asarray(A.sum(axis=1)).ravel())
    return (sp.eye(n) - sp.diags(d) @ A @ sp.diags(d)).tocsr()


CHEB = np.array([1.0, 0.5])


def sparsegpt_inputs(rows: int = 64, cols: int = 64):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((cols, 4 * cols))
    H = X @ X.T + 0.1 * np.eye(cols)
    U = np.ascontiguousarray(np.linalg.cholesky(np.linalg.inv(H)).T)
    return rng.standard_normal((rows, cols)), U


def thread_calls():
    """name -> (f(n_threads) -> result, exact): one call of every binding taking n_threads, sized so that
    several threads are used (the kernels run small inputs on one thread)."""
    C = native()
    rng = np.random.default_rng(1)
    A = sp.random(2000, 300, density=0.05, format="csr", random_state=1)
    X = rng.standard_normal((300, 8))
    L = laplacian()
    q, XL = np.ones(L.shape[0]), rng.standard_normal((L.shape[0], 3))
    n = L.shape[0]
    order, offsets = np.arange(n), np.array([0, n])
    factors = C.tikhonov_dense_factor(L.indptr, L.indices, L.data, CHEB, q, order, offsets)
    scores = rng.standard_normal((128, 512))
    nm = scores.copy()
    C.prune_weight(nm, None, "nm", keep=2, group=4)  # 2:4 sparse
    bits = nm.view(np.uint64)
    values, idx = C.prune_pack_nm(bits, 2, 4)
    packed = C.prune_pack_bitmask(bits)
    W, U = sparsegpt_inputs()
    lorenz = lambda t: (lambda s: (C.diffusion_lorenz_rk4(s, 400, 0.01, record_every=10, n_threads=t), s))(
        np.tile([[1.0], [1.0], [1.0]], (1, 256)) + np.arange(256) * 1e-3)
    return {
        "spmm_csr": (lambda t: C.spmm_csr(A.indptr, A.indices, A.data, X, 300, n_threads=t), True),
        "tikhonov_solve_cg": (lambda t: C.tikhonov_solve_cg(L.indptr, L.indices, L.data, CHEB, q, XL, 1e-12, 500,
                                                            n_threads=t)[0], False),
        "tikhonov_poly_apply": (lambda t: C.tikhonov_poly_apply(L.indptr, L.indices, L.data, CHEB, XL, n_threads=t),
                                True),
        "tikhonov_dense_factor": (lambda t: C.tikhonov_dense_factor(L.indptr, L.indices, L.data, CHEB, q, order,
                                                                    offsets, n_threads=t), True),
        "tikhonov_dense_solve": (lambda t: C.tikhonov_dense_solve(factors, order, offsets, XL, n_threads=t), True),
        "diffusion_lorenz_rk4": (lorenz, True),
        "diffusion_pool_draw": (lambda t: C.diffusion_pool_draw(scores.ravel(), 7, 0, 50_000, n_threads=t), True),
        "prune_select_mask": (lambda t: C.prune_select_mask(scores, "row", 100, n_threads=t), True),
        "prune_weight": (lambda t: (lambda w: (C.prune_weight(w, None, "nm", keep=2, group=4, n_threads=t), w))(
            scores.copy()), True),
        "prune_sparsegpt_sweep": (lambda t: (lambda w: (C.prune_sparsegpt_sweep(
            w, U, "nm", 16, np.zeros(0, np.int64), keep=2, group=4, n_threads=t), w))(W.copy()), True),
        "prune_pack_nm": (lambda t: C.prune_pack_nm(bits, 2, 4, n_threads=t), True),
        "prune_unpack_nm": (lambda t: C.prune_unpack_nm(values, idx, 512, 2, 4, n_threads=t), True),
        "prune_pack_bitmask": (lambda t: C.prune_pack_bitmask(bits, n_threads=t), True),
        "prune_unpack_bitmask": (lambda t: C.prune_unpack_bitmask(*packed, 512, n_threads=t), True),
        **{name: (_with_threads(C, name, call), True) for name, call in new_field_calls().items()
           if name in THREAD_CALLS},
    }


def _with_threads(C, name: str, call):
    """f(n_threads) for a captured valid call (functional_coefficients takes it as its 13th positional argument)."""
    def f(t):
        args, kwargs = call()
        if name == "functional_coefficients":
            args[12] = t
        else:
            kwargs["n_threads"] = t
        return getattr(C, name)(*args, **kwargs)

    return f


def assert_same(a, b, exact: bool) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key], exact)
    elif isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y, exact)
    elif a is None or isinstance(a, bool | int | float):
        assert a == b
    elif exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


THREAD_CALLS = ("diffusion_lorenz_rk4", "diffusion_pool_draw", "prune_pack_bitmask", "prune_pack_nm",
                "prune_select_mask", "prune_sparsegpt_sweep", "prune_unpack_bitmask", "prune_unpack_nm",
                "prune_weight", "spmm_csr", "tikhonov_dense_factor", "tikhonov_dense_solve", "tikhonov_poly_apply",
                "tikhonov_solve_cg", "functional_coefficients", "submodular_certify", "submodular_greedy_facility",
                "submodular_greedy_feature", "submodular_greedy_pairwise")


# -------------------------------------------------------------------------------------------- threads


@pytest.mark.parametrize("name", THREAD_CALLS)
def test_thread_counts_are_checked_by_every_binding(name):
    f, exact = thread_calls()[name]
    for bad in (100_000, 1025, -1, 2**40):
        with pytest.raises(ValueError, match=r"n_threads must lie in \[0, 1024\].*got " + str(bad)):
            f(bad)
    assert_same(f(64), f(1), exact)  # capped at the hardware threads, same answer
    assert_same(f(0), f(1), exact)


def test_every_binding_with_n_threads_is_covered():
    """Each binding of _C that takes n_threads appears in thread_calls (a new one must be added there)."""
    C = native()
    taking = {name for name in dir(C) if "n_threads" in (getattr(C, name).__doc__ or "").split("\n")[0]}
    assert taking == set(THREAD_CALLS) == set(thread_calls())


def test_public_functions_refuse_huge_thread_counts():
    from fastnips.graph import tikhonov_solve
    from fastnips.ops import spmm
    A = sp.random(50, 40, density=0.2, format="csr", random_state=0)
    X = np.ones((40, 2))
    with pytest.raises(ValueError, match="n_threads"):
        spmm(A, X, backend="cpp", n_threads=100_000)
    np.testing.assert_array_equal(spmm(A, X, backend="cpp", n_threads=64), spmm(A, X, backend="cpp", n_threads=1))
    L = laplacian(60)
    with pytest.raises(ValueError, match="n_threads"):
        tikhonov_solve(L, [1.0, 0.5], np.ones(60), np.ones((60, 2)), backend="cpp", n_threads=100_000)


def test_public_sparsegpt_refuses_huge_thread_counts():
    torch = pytest.importorskip("torch", reason="sparsegpt_prune_ takes torch tensors")
    from fastnips.prune import NM, sparsegpt_prune_
    W, _ = sparsegpt_inputs(8, 16)
    X = np.random.default_rng(0).standard_normal((16, 64))
    H = torch.from_numpy(X @ X.T)
    with pytest.raises(ValueError, match="n_threads"):
        sparsegpt_prune_(torch.from_numpy(W), H, pattern=NM(2, 4), backend="cpp", n_threads=100_000)


def test_huge_thread_count_does_not_kill_the_process():
    r = run_python("""
        import numpy as np, scipy.sparse as sp
        from fastnips.ops import spmm
        from fastnips import _backend
        A = sp.random(2000, 300, density=0.05, format="csr", random_state=1)
        C = _backend.native()
        for n in (100_000, 2_000):
            try:
                spmm(A, np.ones((300, 4)), backend="cpp", n_threads=n)
            except ValueError as e:
                assert "n_threads" in str(e), e
            else:
                raise SystemExit("no ValueError")
        print("survived")
    """)
    assert_survived(r, "survived")


# ------------------------------------------------------------------------------------ dtypes, objects


def test_object_arrays_are_refused_by_pack_and_unpack():
    r = run_python("""
        import gc
        import numpy as np
        from fastnips import _C
        obj = np.array([[object(), object(), object(), object()]], dtype=object)
        calls = [
            ("weight", lambda: _C.prune_pack_bitmask(obj)),
            ("weight", lambda: _C.prune_pack_nm(obj, 2, 4)),
            ("values", lambda: _C.prune_unpack_nm(obj[:, :2], np.zeros((1, 2), np.uint8), 4, 2, 4)),
            ("values", lambda: _C.prune_unpack_bitmask(obj[0], np.full((1, 1), 15, np.uint8),
                                                       np.array([0, 4]), 4)),
        ]
        for name, call in calls:
            try:
                call()
            except TypeError as e:
                assert str(e).startswith(name) and "non-numeric dtype object" in str(e), e
            else:
                raise SystemExit("accepted an object array")
        del obj, calls
        gc.collect()
        print("refused")
    """)
    assert_survived(r, "refused")


@pytest.mark.parametrize("dtype", ["U2", "S8", "M8[s]", "m8[s]", "V8"])
def test_non_numeric_arrays_are_refused(dtype):
    a = np.zeros((2, 4), dtype=dtype)
    with pytest.raises(TypeError, match="weight must be a numeric array"):
        native().prune_pack_bitmask(a)


def test_big_endian_arrays_are_refused_by_the_binding_with_the_byte_order():
    C = native()
    A = sp.random(30, 20, density=0.3, format="csr", random_state=0)
    X = np.ones((20, 2))
    with pytest.raises(TypeError, match=r"indices must be .*byte order; got >i4"):
        C.spmm_csr(A.indptr, A.indices.astype(">i4"), A.data, X, 20)
    with pytest.raises(TypeError, match=r"data must be .*byte order; got >f8"):
        C.spmm_csr(A.indptr, A.indices, A.data.astype(">f8"), X, 20)
    with pytest.raises(TypeError, match=r"scores must be float32 or float64.*>f4, not in the native byte order"):
        C.prune_select_mask(np.ones((4, 8), dtype=">f4"), "row", 2)


def test_packing_moves_big_endian_bits_unchanged():
    C = native()
    W = np.where(np.random.default_rng(0).random((8, 16)) < 0.5, 0, np.arange(128.0).reshape(8, 16)).astype(">f4")
    values, bitmask, offsets = C.prune_pack_bitmask(W)
    back = C.prune_unpack_bitmask(values, bitmask, offsets, 16)
    assert back.dtype == W.dtype
    np.testing.assert_array_equal(back, W)


@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_spmm_accepts_big_endian_arrays(backend):
    from fastnips.ops import spmm
    A = sp.random(40, 30, density=0.2, format="csr", random_state=0)
    X = np.random.default_rng(0).standard_normal((30, 3))
    Ab = sp.csr_matrix((A.data.astype(">f8"), A.indices.astype(">i4"), A.indptr.astype(">i8")), shape=A.shape)
    want = A @ X
    np.testing.assert_allclose(spmm(Ab, X.astype(">f8"), backend=backend), want, rtol=1e-12)
    got = spmm(A.indptr.astype(">i4"), A.indices.astype(">i4"), A.data.astype(">f4"), X, backend=backend)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------ int64 narrowing


@pytest.mark.parametrize("bad", [2**32 + 1, 2**31, -(2**33)])
def test_ids_beyond_int32_are_refused_not_wrapped(bad):
    C = native()
    edges = np.array([[0, bad]], dtype=np.int64)
    with pytest.raises(ValueError, match=f"directed holds {bad}, outside int32"):
        C.htc_identify(3, edges, np.zeros((0, 2), np.int64))
    with pytest.raises(ValueError, match=f"bidirected holds {bad}, outside int32"):
        C.edgewise_identify(3, [(0, 1)], edges)
    with pytest.raises(ValueError, match=f"directed holds {bad}, outside int32"):
        C.htc_identify_many([(3, [(0, 1)], []), (3, edges, [])])


def test_ids_of_every_integer_dtype_and_lists_agree():
    C = native()
    want = C.htc_identify(3, [(0, 1), (1, 2)], [(1, 2)])["solved"]
    for dt in (np.int8, np.int32, np.int64, np.uint32, np.uint64, ">i4", ">i8"):
        d, b = np.array([[0, 1], [1, 2]], dtype=dt), np.array([[1, 2]], dtype=dt)
        np.testing.assert_array_equal(C.htc_identify(3, d, b)["solved"], want)
    # int32 arrays go in without a copy when C-ordered; other layouts are copied in order
    wide = np.array([[0, 7, 1], [1, 7, 2]], dtype=np.int32)
    for d in (np.asfortranarray(wide[:, ::2]), wide[:, ::2]):
        np.testing.assert_array_equal(C.htc_identify(3, d, np.array([[1, 2]], np.int32))["solved"], want)
    with pytest.raises(ValueError, match="holds 18446744073709551615, outside int32"):
        C.htc_identify(3, np.array([[0, 2**64 - 1]], dtype=np.uint64), [])
    with pytest.raises(TypeError, match="directed must hold integers, got float64"):
        C.htc_identify(3, np.array([[0.0, 1.5]]), [])


# ------------------------------------------------------------------------------- Python objects, GIL


def test_lorenz_without_records_returns_none_from_many_threads():
    """The None of record_every=0 is made with the GIL held (it once was made inside the released region)."""
    r = run_python("""
        import threading
        import numpy as np
        from fastnips import _C
        out = []
        def work():
            for _ in range(200):
                out.append(_C.diffusion_lorenz_rk4(np.ones((3, 64)), 50, 0.01, record_every=0))
        ts = [threading.Thread(target=work) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(out) == 1600 and all(o is None for o in out)
        print("none")
    """)
    assert_survived(r, "none")


def test_lorenz_records_and_none_in_process():
    C = native()
    s = np.ones((3, 16))
    assert C.diffusion_lorenz_rk4(s.copy(), 20, 0.01) is None
    rec = C.diffusion_lorenz_rk4(s.copy(), 20, 0.01, record_every=5)
    assert rec.shape == (4, 16)
    done = []
    t = threading.Thread(target=lambda: done.append(C.diffusion_lorenz_rk4(s.copy(), 20, 0.01, record_every=0)))
    t.start()
    t.join()
    assert done == [None]


# ------------------------------------------------------------------------------------ numerical honesty


def dense_operator(L: sp.csr_matrix, q: np.ndarray) -> np.ndarray:
    """p(L) + diag(q) for p = CHEB (1 + 0.5 (L - I)), dense: the reference of the Tikhonov tests."""
    n = L.shape[0]
    return (CHEB[0] * sp.eye(n) + CHEB[1] * (L - sp.eye(n))).toarray() + np.diag(q)


@pytest.mark.parametrize("size", [1e-170, 1e-160, 1e-300, 1e300])
def test_cg_solves_tiny_and_huge_right_hand_sides(size):
    """||q x||^2 underflows for 1e-170 e_0 (the column was taken for zero: Y = 0, residual 0) and is denormal
    for 1e-160 (10% off); the solve now runs on the column scaled by a power of two. By linearity the answer
    is size * A^{-1} q e_0, computed densely on the unit problem."""
    C = native()
    L = laplacian(80)
    q = np.full(80, 0.5)
    X = np.zeros((80, 2))
    X[0, 0] = size
    X[5, 1] = size * 3
    Y, iters, res, _, _ = C.tikhonov_solve_cg(L.indptr, L.indices, L.data, CHEB, q, X, 1e-12, 500)
    unit = np.linalg.solve(dense_operator(L, q), q[:, None] * (X / size))
    np.testing.assert_allclose(Y / size, unit, rtol=1e-9, atol=1e-12 * np.abs(unit).max())
    assert (iters > 0).all(), iters
    assert (res <= 1e-12).all(), res


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_residuals_are_relative_and_scale_free(dtype):
    """The same system at scales 1 and 2^-500 (float32: 2^-100) gives the same Y up to the scale, the same
    iteration counts and residuals: scaling by a power of two is exact."""
    C = native()
    L = laplacian(60)
    q = np.linspace(0.1, 1.0, 60).astype(dtype)
    X = np.random.default_rng(0).standard_normal((60, 3)).astype(dtype)
    s = 2.0 ** (-100 if dtype == np.float32 else -500)
    Ld = L.data.astype(dtype)
    a = C.tikhonov_solve_cg(L.indptr, L.indices, Ld, CHEB, q, X, 1e-6, 500)
    b = C.tikhonov_solve_cg(L.indptr, L.indices, Ld, CHEB, q, (X * s).astype(dtype), 1e-6, 500)
    np.testing.assert_array_equal(b[0] / dtype(s), a[0])
    np.testing.assert_array_equal(b[1], a[1])
    np.testing.assert_array_equal(b[2], a[2])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_tikhonov_bindings_refuse_non_finite_input(bad):
    """Through _C, NaN in X or q returned zeros with residual 0; every Tikhonov solve now refuses NaN and inf
    in each float input, naming it."""
    C = native()
    L = laplacian(40)
    q, X = np.ones(40), np.ones((40, 2))
    n = 40
    order, offsets = np.arange(n), np.array([0, n])

    def spoil(a, at=(3,)):
        a = a.copy()
        a[at] = bad
        return a

    cg = lambda data=L.data, cheb=CHEB, q=q, X=X: C.tikhonov_solve_cg(L.indptr, L.indices, data, cheb, q, X, 1e-10,
                                                                       100)
    for name, call in [("X", lambda: cg(X=spoil(X, (3, 1)))), ("q", lambda: cg(q=spoil(q))),
                       ("data", lambda: cg(data=spoil(L.data))), ("cheb", lambda: cg(cheb=spoil(CHEB, (1,)))),
                       ("q", lambda: C.tikhonov_dense_factor(L.indptr, L.indices, L.data, CHEB, spoil(q), order,
                                                             offsets))]:
        with pytest.raises(ValueError, match=rf"^{name} must be finite"):
            call()
    factors = C.tikhonov_dense_factor(L.indptr, L.indices, L.data, CHEB, q, order, offsets)
    with pytest.raises(ValueError, match=r"^B must be finite"):
        C.tikhonov_dense_solve(factors, order, offsets, spoil(X, (0, 0)))
    with pytest.raises(ValueError, match=r"^scale must be finite"):
        C.tikhonov_dense_solve(factors, order, offsets, X, scale=spoil(q))


def test_cg_kernel_refuses_an_overflowing_right_hand_side():
    """q * X finite in each factor but not as a product (1e300 * 1e300): the kernel names row and column."""
    C = native()
    L = laplacian(30)
    X = np.zeros((30, 1))
    X[7, 0] = 1e300
    with pytest.raises(ValueError, match=r"q \* X is not finite at row 7, column 0"):
        C.tikhonov_solve_cg(L.indptr, L.indices, L.data, CHEB, np.full(30, 1e300), X, 1e-10, 100)


def test_spmm_refuses_inputs_that_require_grad():
    """spmm records no autograd graph: a torch input requiring grad was silently cut off; now a TypeError
    naming the argument, while detached inputs and torch.no_grad() give the product."""
    torch = pytest.importorskip("torch", reason="autograd needs torch")
    from fastnips.ops import spmm
    torch.set_num_threads(1)
    A = sp.random(20, 10, density=0.3, format="csr", random_state=0)
    At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr), torch.from_numpy(A.indices), torch.from_numpy(A.data),
                                 size=A.shape, check_invariants=True)
    X = torch.ones(10, 3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match=r"argument 1 requires grad.*no autograd"):
        spmm(At, X, backend="cpp")
    with pytest.raises(TypeError, match="argument 3 requires grad"):
        spmm(At.crow_indices(), At.col_indices(), At.values(), X, backend="reference")
    want = A @ np.ones((10, 3))
    np.testing.assert_allclose(spmm(At, X.detach(), backend="cpp").numpy(), want, rtol=1e-12)
    with torch.no_grad():
        np.testing.assert_allclose(spmm(At, X, backend="cpp").numpy(), want, rtol=1e-12)
