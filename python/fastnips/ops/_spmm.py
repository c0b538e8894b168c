r"""CSR sparse x dense matrix multiply (SpMM) on every backend.

.. math:: Y = A X, \qquad Y_{i,:} = \sum_{p=\mathrm{indptr}_i}^{\mathrm{indptr}_{i+1}-1}
          \mathrm{data}_p \, X_{\mathrm{indices}_p,:}

The shared kernel under graph propagation (GNN message passing, Tikhonov solves) and pruning.

Choices the usual tools leave open, and what fastnips does:

* **Column order and repeats.** Column indices may be unsorted within a row and may repeat; repeats add
  up. This is scipy's convention, and the product is well defined either way, so such matrices (which
  scipy itself produces) are accepted rather than refused. What is refused is a malformed structure:
  ``indptr`` not starting at 0, decreasing, or not ending at ``len(indices)``, and column indices outside
  ``[0, n_cols)``. The ``cpp`` backend checks this on the fly at no measurable cost; the others check
  with vectorised passes before the launch.
* **Non-finite values.** NaN and inf propagate by IEEE arithmetic, as in scipy and torch. Pass
  ``check_finite=True`` to have them refused instead (costs one pass over ``data`` and ``X``).
* **Dtypes.** Values are float32 or float64 (integer and bool inputs count as exact and take the other
  operand's float type, float64 if neither is floating); the result has the wider float type. Indices
  are any integer type and are used as int32 where they fit, else int64.
* **Where the work runs.** Every backend accepts numpy, scipy, torch (CPU or CUDA) and cupy inputs;
  data move to where the backend runs and the result comes back in the input's kind and device.
  ``backend="auto"`` picks the backend that runs where the data already are: ``cpp`` for host arrays,
  ``cuda`` (then ``triton``) for CUDA torch tensors, ``cupy`` for cupy arrays.
* **Autograd.** ``spmm`` is a forward kernel: no backend records a graph for torch autograd. A torch input
  that requires grad (with grad mode on) is refused with a TypeError rather than returning a result
  silently cut off from the graph; call it under ``torch.no_grad()`` or on detached tensors, or use
  ``torch.sparse.mm`` where gradients are needed.
* **Threads.** ``cpp`` splits rows across OpenMP threads by equal work (nonzeros + rows), so power-law
  degree distributions balance; set ``OMP_NUM_THREADS`` or ``n_threads`` to pin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _backend, _optional
from .reference import spmm_reference

SPMM_BACKENDS = ("reference", "cpp", "triton", "cuda", "cupy")


@dataclass
class _Csr:
    """Normalised inputs: host numpy, or torch/cupy arrays on their device."""

    indptr: object
    indices: object
    data: object
    X: object
    n_rows: int
    n_cols: int
    kind: str  # "numpy" | "torch" | "cupy"
    device: object  # torch device for kind == "torch"
    vector: bool  # X was 1-D: return 1-D


def spmm(*args: Any, n_cols: int | None = None, backend: str = "auto", check_finite: bool = False,
         n_threads: int = 0):
    r"""Multiply a CSR sparse matrix by a dense matrix (or vector): ``Y = A @ X``.

    .. math:: Y_{i,:} = \sum_{p=\mathrm{indptr}_i}^{\mathrm{indptr}_{i+1}-1} \mathrm{data}_p\,
              X_{\mathrm{indices}_p,:}

    Call it as ``spmm(indptr, indices, data, X)`` or ``spmm(A, X)``.

    Parameters
    ----------
    *args : (A, X) or (indptr, indices, data, X)
        ``A``: a scipy.sparse matrix/array or torch sparse tensor of shape (n_rows, n_cols) (non-CSR
        formats are converted, a copy); or its CSR arrays: ``indptr`` (int, shape (n_rows + 1,)),
        ``indices`` (int, shape (nnz,); may be unsorted and repeated within a row, repeats add up) and
        ``data`` (float, shape (nnz,)), as numpy, torch or cupy arrays. ``X``: dense right-hand sides of
        shape (n_cols, k) or (n_cols,); a 1-D ``X`` gives a 1-D result.
    n_cols : int, optional
        Columns of A, for the three-array form (default ``X.shape[0]``, which it must equal).
    backend : {"auto", "reference", "cpp", "triton", "cuda", "cupy"}
        See the module docstring; ``"reference"`` is scipy.
    check_finite : bool, default False
        Refuse NaN or inf in ``data`` or ``X`` with a ValueError instead of propagating them.
    n_threads : int, default 0
        OpenMP threads for ``cpp`` (0: the OpenMP default, i.e. ``OMP_NUM_THREADS``).

    Returns
    -------
    Y : same kind and device as the inputs, shape (n_rows, k) or (n_rows,)

    Raises
    ------
    ValueError
        Mismatched shapes, malformed CSR structure (names the row and position), out-of-range column
        indices, non-finite values with ``check_finite``, or an unknown/unavailable backend.
    TypeError
        Unsupported dtypes (complex, half precision, non-integer indices), mixed torch/cupy inputs, or a
        torch input that requires grad while grad mode is on (no backend records autograd).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fastnips.ops import spmm
    >>> A = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    >>> X = np.ones((4, 3))
    >>> np.allclose(spmm(A, X), A @ X)
    True
    """
    _refuse_autograd(args)
    if len(args) == 2:
        csr = _from_matrix(args[0], args[1])
    elif len(args) == 4:
        csr = _from_arrays(*args, n_cols=n_cols)
    else:
        raise TypeError(f"spmm takes (A, X) or (indptr, indices, data, X); got {len(args)} positional arguments")
    if len(args) == 2 and n_cols is not None and n_cols != csr.n_cols:
        raise ValueError(f"n_cols={n_cols} disagrees with A.shape[1]={csr.n_cols}")
    if not isinstance(n_threads, int | np.integer) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")

    b = _backend.resolve(backend, op="spmm", supported=SPMM_BACKENDS, like=csr.X)
    if check_finite:
        _check_finite(csr)

    if b in ("reference", "cpp"):
        indptr, indices, data, X = (_to_numpy(a) for a in (csr.indptr, csr.indices, csr.data, csr.X))
        if b == "cpp":
            Y = _backend.native().spmm_csr(indptr, indices, data, X, csr.n_cols, n_threads=int(n_threads))
        else:
            _check_structure(csr.n_cols, indptr, indices)
            Y = spmm_reference(indptr, indices, data, X, csr.n_cols)
    elif b in ("triton", "cuda"):
        Y = _run_torch_device(b, csr)
    else:  # cupy
        Y = _run_cupy(csr)
    return _to_caller(Y.reshape(-1) if csr.vector else Y, csr)


# ---------------------------------------------------------------------------------------------------
# input normalisation


def _refuse_autograd(args: tuple) -> None:
    """A TypeError when a torch input requires grad and grad mode is on: the result would silently carry no
    gradient (the kernels are not differentiable here)."""
    for pos, a in enumerate(args):
        if _optional.is_torch_tensor(a) and a.requires_grad and _optional.torch().is_grad_enabled():
            raise TypeError(f"spmm: argument {pos} requires grad, but spmm records no autograd graph (its result "
                            "would carry no gradient); call it under torch.no_grad() or on detached tensors "
                            "(.detach()), or use torch.sparse.mm for gradients")


def _kind_of(*arrays):
    kinds = {"torch" if _optional.is_torch_tensor(a) else "cupy" if _optional.is_cupy_array(a) else "numpy"
             for a in arrays}
    if {"torch", "cupy"} <= kinds:
        raise TypeError("spmm: inputs mix torch tensors and cupy arrays; convert them to one kind")
    return "torch" if "torch" in kinds else "cupy" if "cupy" in kinds else "numpy"


def _from_matrix(A, X) -> _Csr:
    if _optional.is_scipy_sparse(A):
        if A.format != "csr":
            A = A.tocsr()
        return _from_arrays(A.indptr, A.indices, A.data, X, n_cols=A.shape[1], _what="A")
    if _optional.is_torch_tensor(A):
        torch = _optional.torch()
        if A.layout == torch.strided:
            raise TypeError("spmm: A is a dense torch tensor; pass a sparse one (A.to_sparse_csr()) or use A @ X")
        if A.layout != torch.sparse_csr:
            A = A.to_sparse_csr()
        if A.dim() != 2:
            raise ValueError(f"spmm: A must be 2-D, got shape {tuple(A.shape)}")
        return _from_arrays(A.crow_indices(), A.col_indices(), A.values(), X, n_cols=A.shape[1], _what="A")
    if _optional.cupy_or_none() is not None:
        import cupyx.scipy.sparse as csp

        if csp.issparse(A):
            A = A.tocsr()
            return _from_arrays(A.indptr, A.indices, A.data, X, n_cols=A.shape[1], _what="A")
    raise TypeError(
        f"spmm(A, X): A must be a scipy.sparse or torch sparse matrix, got {type(A).__name__}; "
        "or call spmm(indptr, indices, data, X)"
    )


_FLOATS = ("float32", "float64")


_DTYPE_NAMES: dict = {}


def _dtype_name(a) -> str:
    """'float32', 'int64', ... for numpy, torch and cupy dtypes (str(dtype) is slow: cache it).

    Either byte order has the same name ('>i4' is 'int32'): the cast to the common dtype converts a
    big-endian array to the machine's order, as scipy does.
    """
    dt = a.dtype
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = dt.name if isinstance(dt, np.dtype) else str(dt).replace("torch.", "")
    return name


def _value_dtype(data, X) -> str:
    names = []
    for name, a in (("data", data), ("X", X)):
        dt = _dtype_name(a)
        if dt in _FLOATS:
            names.append(dt)
        elif dt == "bool" or dt.startswith(("int", "uint")):
            continue
        else:
            raise TypeError(f"spmm: {name} has dtype {dt}; expected float32 or float64 (or an integer/bool type)")
    return "float64" if not names or "float64" in names else "float32"


def _index_dtype(indptr, indices, nnz: int, n_cols: int) -> str:
    for name, a in (("indptr", indptr), ("indices", indices)):
        dt = _dtype_name(a)
        if not (dt.startswith(("int", "uint")) and dt != "uint64"):
            raise TypeError(f"spmm: {name} has dtype {dt}; expected an integer type")
    fits32 = max(nnz, n_cols) < 2**31 - 1 and all(_dtype_name(a) in ("int8", "int16", "int32", "uint8", "uint16")
                                                 for a in (indptr, indices))
    return "int32" if fits32 else "int64"


def _from_arrays(indptr, indices, data, X, *, n_cols=None, _what="the CSR arrays") -> _Csr:
    kind = _kind_of(indptr, indices, data, X)
    if kind == "torch":
        torch = _optional.torch()
        dev = next(a.device for a in (X, data, indices, indptr) if _optional.is_torch_tensor(a))
        conv = lambda a: a.to(dev) if _optional.is_torch_tensor(a) else torch.as_tensor(np.asarray(a), device=dev)
        cast = lambda a, dt: a.to(getattr(torch, dt)).contiguous()
    elif kind == "cupy":
        cp = _optional.require("cupy")
        dev = None
        conv = cp.asarray
        cast = lambda a, dt: cp.ascontiguousarray(a.astype(dt, copy=False))
    else:
        dev = None
        conv = np.asarray
        cast = lambda a, dt: np.ascontiguousarray(a, dtype=dt)
    indptr, indices, data, X = (conv(a) for a in (indptr, indices, data, X))
    for name, a, nd in (("indptr", indptr, 1), ("indices", indices, 1), ("data", data, 1)):
        if a.ndim != nd:
            raise ValueError(f"spmm: {name} must be 1-D, got shape {tuple(a.shape)}")
    if X.ndim not in (1, 2):
        raise ValueError(f"spmm: X must be 1-D or 2-D, got shape {tuple(X.shape)}")
    if indptr.shape[0] < 1:
        raise ValueError("spmm: indptr must have at least one entry (n_rows + 1)")
    if indices.shape[0] != data.shape[0]:
        raise ValueError(f"spmm: indices and data differ in length ({indices.shape[0]} vs {data.shape[0]})")
    n_rows = int(indptr.shape[0]) - 1
    n_x = int(X.shape[0])
    if n_cols is None:
        n_cols = n_x
    n_cols = int(n_cols)
    if n_cols != n_x:
        raise ValueError(f"spmm: {_what} has {n_cols} columns but X has {n_x} rows")
    vdt = _value_dtype(data, X)
    idt = _index_dtype(indptr, indices, int(indices.shape[0]), n_cols)
    vector = X.ndim == 1
    X = X.reshape(-1, 1) if vector else X
    return _Csr(cast(indptr, idt), cast(indices, idt), cast(data, vdt), cast(X, vdt), n_rows, n_cols, kind, dev,
                vector)


# ---------------------------------------------------------------------------------------------------
# checks shared by the backends that do not validate natively


def _check_structure(n_cols: int, indptr, indices) -> None:
    """Refuse a malformed CSR structure; works on numpy, torch and cupy arrays alike."""
    nnz = int(indices.shape[0])
    if int(indptr[0]) != 0:
        raise ValueError(f"indptr[0] must be 0, got {int(indptr[0])}")
    if indptr.shape[0] > 1:
        steps = indptr[1:] - indptr[:-1]
        if bool((steps < 0).any()):
            i = int(_argmax_bool(steps < 0))
            raise ValueError(f"indptr must be non-decreasing: indptr[{i + 1}] = {int(indptr[i + 1])} "
                             f"< indptr[{i}]")
    if int(indptr[-1]) != nnz:
        raise ValueError(f"indptr[-1] must equal len(indices), got {int(indptr[-1])}")
    if nnz:
        bad = (indices < 0) | (indices >= n_cols)
        if bool(bad.any()):
            p = int(_argmax_bool(bad))
            row = int(_searchsorted_right(indptr, p)) - 1
            raise ValueError(f"column index out of range in row {row}: indices[{p}] = {int(indices[p])}")


def _argmax_bool(mask):
    return mask.int().argmax() if _optional.is_torch_tensor(mask) else mask.argmax()


def _searchsorted_right(indptr, p: int):
    if _optional.is_torch_tensor(indptr):
        torch = _optional.torch()
        return torch.searchsorted(indptr, torch.tensor([p], dtype=indptr.dtype, device=indptr.device),
                                  right=True)[0]
    return indptr.searchsorted(p, side="right")


def _check_finite(csr: _Csr) -> None:
    for name, a in (("data", csr.data), ("X", csr.X)):
        if _optional.is_torch_tensor(a):
            ok = bool(_optional.torch().isfinite(a).all())
        elif _optional.is_cupy_array(a):
            ok = bool(_optional.require("cupy").isfinite(a).all())
        else:
            ok = bool(np.isfinite(a).all())
        if not ok:
            raise ValueError(f"spmm: {name} contains NaN or inf (check_finite=True)")


# ---------------------------------------------------------------------------------------------------
# device backends and conversions


def _to_numpy(a) -> np.ndarray:
    if _optional.is_torch_tensor(a):
        return a.detach().cpu().numpy()
    if _optional.is_cupy_array(a):
        return a.get()
    return a


def _run_torch_device(backend: str, csr: _Csr):
    torch = _optional.torch()
    if backend == "cuda":
        dev = csr.device if (csr.kind == "torch" and csr.device.type == "cuda") else torch.device("cuda")
    else:  # triton: on the GPU if the data are there or one exists, else the CPU interpreter
        if csr.kind == "torch" and csr.device.type == "cuda":
            dev = csr.device
        else:
            dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = lambda a: torch.as_tensor(_to_numpy(a) if not _optional.is_torch_tensor(a) else a, device=dev)
    indptr, indices, data, X = (t(a) for a in (csr.indptr, csr.indices, csr.data, csr.X))
    _check_structure(csr.n_cols, indptr, indices)
    if backend == "triton":
        from ..kernels import spmm as tk  # lazy: defining kernels reads TRITON_INTERPRET

        return tk.spmm_csr(indptr, indices, data, X)
    Y = torch.empty((csr.n_rows, X.shape[1]), dtype=X.dtype, device=dev)
    with torch.cuda.device(dev):
        _backend.native().spmm_csr_cuda(
            csr.n_rows, X.shape[1], indptr.data_ptr(), indices.data_ptr(), data.data_ptr(), X.data_ptr(),
            Y.data_ptr(), 32 if indptr.dtype == torch.int32 else 64, 32 if X.dtype == torch.float32 else 64,
            torch.cuda.current_stream(dev).cuda_stream)
    return Y


def _run_cupy(csr: _Csr):
    cp = _optional.require("cupy")
    import cupyx.scipy.sparse as csp

    indptr, indices, data, X = (cp.asarray(_to_numpy(a) if _optional.is_torch_tensor(a) else a)
                                for a in (csr.indptr, csr.indices, csr.data, csr.X))
    _check_structure(csr.n_cols, indptr, indices)
    return csp.csr_matrix((data, indices, indptr), shape=(csr.n_rows, csr.n_cols)) @ X


def _to_caller(Y, csr: _Csr):
    if csr.kind == "numpy":
        return _to_numpy(Y)
    if csr.kind == "torch":
        torch = _optional.torch()
        if _optional.is_cupy_array(Y):
            Y = Y.get()
        return torch.as_tensor(Y).to(csr.device) if not _optional.is_torch_tensor(Y) else Y.to(csr.device)
    cp = _optional.require("cupy")
    return cp.asarray(_to_numpy(Y) if _optional.is_torch_tensor(Y) else Y)
