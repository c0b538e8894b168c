"""Property tests of the native boundary: every binding of fastnips._C, called with one argument spoiled the way
a careless or hostile caller would (wrong dtype, object / string / big-endian arrays, strides, wrong ndim or
shape, empty, NaN / inf, extreme integers, None, lists), either raises a clean Python exception (ValueError,
TypeError, OverflowError) or returns; when the spoiled argument still holds the same values (another byte
order, a strided view, Fortran order, a list, a lossless dtype) and the call succeeds, the answer equals the
one of the valid call. A crash is the failure this file exists for, so the same examples also run in a
subprocess (`test_fuzz_survives_in_a_subprocess`), where a segfault is reported instead of ending pytest.

hypothesis draws the cases (derandomized: the same examples on every run; bounded: about 20 s on one core).
The CUDA bindings (raw device pointers) are out of scope: a pointer cannot be checked."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend

try:
    from .helpers import new_field_calls
except ImportError:  # loaded by path in test_fuzz_survives_in_a_subprocess: import the helpers by path too
    import importlib.util

    _spec = importlib.util.spec_from_file_location("fastnips_test_helpers", os.path.join(os.path.dirname(__file__),
                                                                                      "helpers.py"))
    _helpers = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_helpers)
    new_field_calls = _helpers.new_field_calls

hypothesis = pytest.importorskip("hypothesis", reason="the property tests of the native boundary use hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

WHY = _backend.why_unavailable("cpp")
pytestmark = pytest.mark.skipif(bool(WHY), reason=f"backend 'cpp' not available: {WHY}")

CLEAN = (ValueError, TypeError, OverflowError)
EXAMPLES = int(os.environ.get("FASTNIPS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# ------------------------------------------------------------------------------------------ valid calls


def laplacian(n: int) -> sp.csr_matrix:
    A = sp.random(n, n, density=4 / n, format="csr", random_state=0)
    A = ((A + A.T) > 0).astype(np.float64) + sp.eye(n)
    d = 1 / np.sqrt(np.asarray(A.sum(axis=1)).ravel())
    return (sp.eye(n) - sp.diags(d) @ A @ sp.diags(d)).tocsr()


def valid_calls() -> dict:
    """binding name -> a function returning fresh (args, kwargs) of a small valid call (fresh: some bindings
    write into their arguments)."""
    C = _backend.native()
    rng = np.random.default_rng(0)
    A = sp.random(12, 9, density=0.3, format="csr", random_state=0)
    L = laplacian(16)
    n = 16
    order, offsets = np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    cheb = np.array([1.0, 0.5])
    factors = C.tikhonov_dense_factor(L.indptr, L.indices, L.data, cheb, np.ones(n), order, offsets)
    scores = rng.standard_normal((4, 8))
    nm = scores.copy()
    C.prune_weight(nm, None, "nm", keep=2, group=4)
    values, idx = C.prune_pack_nm(nm, 2, 4)
    packed = C.prune_pack_bitmask(nm)
    X = rng.standard_normal((8, 24))
    U = np.ascontiguousarray(np.linalg.cholesky(np.linalg.inv(X @ X.T + 0.1 * np.eye(8))).T)
    W = rng.standard_normal((4, 8))
    XA = rng.standard_normal((9, 3))
    d, b = np.array([[0, 1], [1, 2], [0, 3]]), np.array([[1, 3], [0, 2]])
    return {
        "spmm_csr": lambda: ([A.indptr, A.indices, A.data, XA, 9], {}),
        "tikhonov_solve_cg": lambda: ([L.indptr, L.indices, L.data, cheb, np.ones(n), np.ones((n, 2)), 1e-10,
                                      200], {}),
        "tikhonov_poly_apply": lambda: ([L.indptr, L.indices, L.data, cheb, np.ones((n, 2))], {}),
        "tikhonov_dense_factor": lambda: ([L.indptr, L.indices, L.data, cheb, np.ones(n), order, offsets], {}),
        "tikhonov_dense_solve": lambda: ([factors, order, offsets, np.ones((n, 2))], {}),
        "diffusion_lorenz_rk4": lambda: ([np.ones((3, 5)), 10, 0.01], {"record_every": 5}),
        "diffusion_pool_draw": lambda: ([np.arange(20.0), 7, 0, 30], {}),
        "htc_identify": lambda: ([5, d, b], {}),
        "edgewise_identify": lambda: ([5, d, b], {"tian": True}),  # the Tian path: the plain one and more
        "htc_identify_many": lambda: ([[(5, d, b), (4, d, b)]], {}),
        "prune_select_mask": lambda: ([scores, "row", 3], {}),
        "prune_weight": lambda: ([W.copy(), None, "nm"], {"keep": 2, "group": 4}),
        "prune_sparsegpt_sweep": lambda: ([W.copy(), U, "nm", 4, np.zeros(0, np.int64)], {"keep": 2, "group": 4}),
        "prune_pack_nm": lambda: ([nm.copy(), 2, 4], {}),
        "prune_unpack_nm": lambda: ([values, idx, 8, 2, 4], {}),
        "prune_pack_bitmask": lambda: ([nm.copy()], {}),
        "prune_unpack_bitmask": lambda: ([*packed, 8], {}),
        "evo_run": lambda: (["lotz", 6, np.arange(7.0), np.arange(7.0), "moead", "tchebycheff", 6, 3, True, 5000,
                             0, True], {}),
        **new_field_calls(),
    }


NOT_FUZZED = {"build_info", "cuda_device_count", "cuda_probe_error",  # no arguments
              "spmm_csr_cuda", "tikhonov_cheb_step_cuda"}  # raw device pointers


def test_every_binding_is_fuzzed():
    C = _backend.native()
    bindings = {name for name in dir(C) if not name.startswith("_") and callable(getattr(C, name))}
    assert bindings - NOT_FUZZED == set(valid_calls())


# --------------------------------------------------------------------------------------------- spoilers

# Spoilers keep the values (the answer must not change when the call succeeds) or change them.
SAME = ["big_endian", "strided", "fortran", "list", "widen"]
OTHER = ["int8", "uint64", "float16", "float32", "complex", "bool", "object", "str", "datetime", "void",
         "ravel", "add_axis", "drop_row", "empty", "nan", "inf", "huge", "negative", "none", "scalar", "zero_size"]
INT_SPOILERS = [-1, 0, -(2**31) - 1, 2**64, 10**30, 1.5, None, "3"]
# Sizes a binding may take at face value (2^31 draws: a 16 GiB result): only in the subprocess, under an
# address-space cap, where an allocation that fails is a clean MemoryError instead of the machine's OOM killer.
HUGE_INTS = [2**31, 2**63 - 1]


def spoil_array(a: np.ndarray, how: str):
    """`a` spoiled by `how` (SAME or OTHER)."""
    if how == "big_endian":
        return a.astype(a.dtype.newbyteorder(">" if a.dtype.byteorder in "=<|" else "<"))
    if how == "strided":
        wide = np.repeat(a, 2, axis=-1) if a.ndim else a
        return wide[..., ::2] if a.ndim else a
    if how == "fortran":
        return np.asfortranarray(a) if a.ndim == 2 else a[::-1][::-1]
    if how == "list":
        return a.tolist()
    if how == "widen":
        return a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)
    if how in ("int8", "uint64", "float16", "float32", "complex", "bool"):
        return a.astype({"complex": np.complex128, "bool": np.bool_}.get(how, how))
    if how == "object":
        return a.astype(object)
    if how == "str":
        return a.astype("U8")
    if how == "datetime":
        return np.zeros(a.shape, "M8[s]")
    if how == "void":
        return np.zeros(a.shape, "V8")
    if how == "ravel":
        return a.ravel()
    if how == "add_axis":
        return a[None]
    if how == "drop_row":
        return a[:-1] if a.ndim and len(a) else a
    if how == "empty":
        return a[:0]
    if how == "zero_size":
        return np.zeros((0, *a.shape[1:]), a.dtype)
    b = a.copy()
    if b.size == 0:
        return b
    flat = b.reshape(-1)
    if how == "nan":
        flat[len(flat) // 2] = np.nan if b.dtype.kind in "fc" else 0
    elif how == "inf":
        flat[0] = np.inf if b.dtype.kind in "fc" else np.iinfo(b.dtype).max if b.dtype.kind in "iu" else 0
    elif how == "huge":
        flat[:] = 1e300 if b.dtype.kind == "f" and b.itemsize == 8 else (
            np.iinfo(b.dtype).max if b.dtype.kind in "iu" else flat)
    elif how == "negative":
        if b.dtype.kind in "if":
            flat[:] = -np.abs(flat) - 1
    elif how == "none":
        return None
    elif how == "scalar":
        return flat[0].item()
    return b


def same_answer(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_answer(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same_answer(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.all((a == b) | ((a != a) & (b != b))))
    return a == b


def check_call(name: str, index: int, how, calls: dict) -> None:
    """One example: the valid call of `name` with argument `index` (modulo the argument count) spoiled."""
    C = _backend.native()
    make = calls[name]
    args, kwargs = make()
    want = getattr(C, name)(*args, **kwargs)
    args, kwargs = make()
    slots = [(args, i) for i in range(len(args))] + [(kwargs, k) for k in kwargs]
    box, i = slots[index % len(slots)]
    value = box[i]
    if isinstance(how, str) and isinstance(value, np.ndarray):
        box[i] = spoil_array(value, how)
    elif isinstance(value, int | float) and not isinstance(how, str):
        box[i] = how
    elif isinstance(value, str) and not isinstance(how, str):
        box[i] = "no such mode"
    elif isinstance(value, list) and isinstance(how, str):  # htc_identify_many's graphs
        box[i] = [(g[0], spoil_array(np.asarray(g[1]), how), g[2]) for g in value]
    else:
        return
    try:
        got = getattr(C, name)(*args, **kwargs)
    except CLEAN:
        return
    if how in SAME:
        assert same_answer(want, got), (name, i, how)


def fuzz(names: list[str], huge: bool = False) -> None:
    """Run the hypothesis examples over the bindings `names` in this process (huge: HUGE_INTS as well, with
    MemoryError a clean outcome; only under an address-space cap)."""
    calls = valid_calls()
    spoilers = SAME + OTHER + INT_SPOILERS + (HUGE_INTS if huge else [])

    @FUZZ
    @given(name=st.sampled_from(names), index=st.integers(0, 8), how=st.sampled_from(spoilers))
    def run(name, index, how):
        try:
            check_call(name, index, how, calls)
        except MemoryError:
            assert huge, (name, index, how)

    run()


# The bindings that write into their arguments or copy raw bits: fuzzed in a subprocess as well.
RISKY = ["prune_pack_bitmask", "prune_pack_nm", "prune_unpack_bitmask", "prune_unpack_nm", "prune_weight",
         "prune_sparsegpt_sweep", "diffusion_lorenz_rk4", "htc_identify_many"]


@pytest.mark.parametrize("group", ["sparse", "graph", "causal", "prune", "diffusion"])
def test_fuzz_bindings(group):
    names = [n for n in valid_calls() if n.startswith({"sparse": "spmm", "graph": "tikhonov", "causal": "htc",
                                                          "prune": "prune", "diffusion": "diffusion"}[group])]
    if group == "causal":
        names.append("edgewise_identify")
    fuzz(sorted(names))


def test_fuzz_survives_in_a_subprocess():
    """The risky bindings, and every binding with huge sizes, in a subprocess capped at 4 GiB of address space
    (not under AddressSanitizer, whose shadow memory cannot live with a cap: there the huge sizes are left out)."""
    asan = "libasan" in os.environ.get("LD_PRELOAD", "")
    cap = "" if asan else "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
    code = (cap + "import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('fuzz_boundary', {__file__!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            f"m.fuzz({RISKY!r})\n"
            f"m.fuzz(sorted(m.valid_calls()), huge={not asan})\nprint('fuzz-ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-4000:])
    assert "fuzz-ok" in r.stdout, r.stdout[-2000:]
