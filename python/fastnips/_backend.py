"""Backend dispatch: every hot op of fastnips picks one of ``reference | cpp | triton | cuda | cupy``.

* ``reference`` -- readable numpy/scipy/torch code beside each public function; the oracle in tests and
  the fallback everywhere.
* ``cpp`` -- the compiled core ``fastnips._C`` (C++17, OpenMP).
* ``triton`` -- Triton kernels in :mod:`fastnips.kernels`; runs on a CUDA GPU, or on CPU tensors under
  ``TRITON_INTERPRET=1`` (slow; meant for testing).
* ``cuda`` -- ``.cu`` kernels compiled into ``fastnips._C``; offered only when a device is usable *now*.
* ``cupy`` -- cupy on a CUDA device.

Availability is probed at run time, never taken from a compile flag: a module built with CUDA on a
machine without a GPU does not offer ``cuda``. Kill switches ``FASTNIPS_DISABLE_{CPP,TRITON,CUDA,CUPY}``
remove a backend (``reference`` cannot be removed). Probes are cached; :func:`refresh` clears them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache

from . import _optional

BACKENDS = ("reference", "cpp", "triton", "cuda", "cupy")


@cache
def _native_or_error():
    try:
        from . import _C
    except ImportError as exc:  # a source checkout without a build, or a broken build
        return None, f"the compiled module fastnips._C could not be imported ({exc})"
    return _C, ""


def native():
    """The compiled module ``fastnips._C``, or None when it is missing."""
    return _native_or_error()[0]


@cache
def cuda_device_count() -> int:
    """CUDA devices the compiled kernels can use here (0 when not compiled in or no driver/device)."""
    C = native()
    return 0 if C is None else int(C.cuda_device_count())


@cache
def _probe(name: str) -> tuple[bool, str]:
    """(available, reason it is not)."""
    if name == "reference":
        return True, ""
    if _optional.switched_off(name):
        return False, f"switched off by FASTNIPS_DISABLE_{name.upper()}"
    if name == "cpp":
        C, why = _native_or_error()
        return C is not None, why
    if name == "cuda":
        C, why = _native_or_error()
        if C is None:
            return False, why
        if not C.build_info()["cuda_compiled"]:
            return False, "fastnips._C was built without CUDA (FASTNIPS_CUDA=OFF or no nvcc at build time)"
        if cuda_device_count() == 0:
            return False, f"no usable CUDA device ({C.cuda_probe_error() or 'none found'})"
        if _optional.torch_or_none() is None:
            return False, "the cuda backend takes torch tensors and torch is not installed"
        return True, ""
    if name == "triton":
        if _optional.triton_or_none() is None:
            return False, "triton is not installed (pip install triton==3.7.1)"
        torch = _optional.torch_or_none()
        if torch is None:
            return False, "the triton backend takes torch tensors and torch is not installed"
        if torch.cuda.is_available():
            return True, ""
        if os.environ.get("TRITON_INTERPRET", "") not in ("", "0"):
            return True, ""
        return False, "no CUDA device for Triton (set TRITON_INTERPRET=1 to run kernels on CPU, slowly)"
    if name == "cupy":
        if _optional.cupy_or_none() is None:
            return False, "cupy is not installed or no CUDA device is usable"
        return True, ""
    raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")


def backend_available(name: str) -> bool:
    return _probe(name)[0]


def why_unavailable(name: str) -> str:
    """The reason a backend is not available here ('' when it is)."""
    return _probe(name)[1]


def available_backends() -> list[str]:
    """The backends that can actually run on this machine now, in :data:`BACKENDS` order."""
    return [b for b in BACKENDS if backend_available(b)]


def refresh() -> None:
    """Forget cached probes (after changing a kill switch or TRITON_INTERPRET)."""
    for f in (_probe, cuda_device_count, _optional._cupy_usable):
        f.cache_clear()


def resolve(backend: str, *, op: str, supported: Sequence[str], auto: Sequence[str]) -> str:
    """Turn a user's ``backend=`` into a concrete, available backend.

    Parameters
    ----------
    backend : str
        ``"auto"`` or one of :data:`BACKENDS`.
    op : str
        Name of the operation, for error messages.
    supported : sequence of str
        Backends this op implements.
    auto : sequence of str
        Preference order for ``"auto"`` given the inputs (e.g. ``("cpp", "reference")`` for CPU arrays);
        the first available one is taken.

    Raises
    ------
    ValueError
        For an unknown backend, one the op does not implement, or one not available here; the message
        names what is available.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if backend == "auto":
        for b in auto:
            if b in supported and backend_available(b):
                return b
        raise ValueError(f"{op}: no backend available for these inputs among {list(auto)}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose 'auto' or one of {', '.join(BACKENDS)}")
    if backend not in supported:
        raise ValueError(f"{op} has no {backend!r} backend; it has {', '.join(supported)}")
    ok, why = _probe(backend)
    if not ok:
        here = [b for b in supported if backend_available(b)]
        raise ValueError(f"backend {backend!r} is not available here: {why}. Available for {op}: {here}")
    return backend
