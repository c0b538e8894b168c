"""Backend dispatch: every hot op of fastnips picks one of ``reference | cpp | triton | cuda | cupy | flex | fused``.

* ``reference`` -- readable numpy/scipy/torch code beside each public function; the oracle in tests and
  the fallback everywhere.
* ``cpp`` -- the compiled core ``fastnips._C`` (C++17, OpenMP).
* ``triton`` -- Triton kernels in :mod:`fastnips.kernels`; runs on a CUDA GPU, or on CPU tensors under
  ``TRITON_INTERPRET=1`` (slow; meant for testing).
* ``cuda`` -- ``.cu`` kernels compiled into ``fastnips._C``; offered only when a device is usable *now*.
* ``cupy`` -- cupy on a CUDA device.
* ``fused`` -- hand-fused torch code (in place, hand-derived gradients) on CPU or CUDA tensors; faster than
  ``reference``, the same results to rounding (e.g. :func:`fastnips.pc.pc_inference`).
* ``flex`` -- ``torch.nn.attention.flex_attention`` (CPU and CUDA tensors; opt-in, never chosen by ``auto``).

:func:`resolve` is the one place where ``backend="auto"`` is decided, for host arrays and device tensors
alike: an op names the backends it implements and (with ``like=``) an input, and gets the first available
backend in the order ``cuda, triton, cupy, cpp, fused, reference`` that runs where that input lives. Ops with
extra conditions (a dtype a kernel lacks, a backward a backend lacks) pass ``check=``; ops with an unusual
preference pass ``auto=``.

Availability is probed at run time, never taken from a compile flag: a module built with CUDA on a
machine without a GPU does not offer ``cuda``. Kill switches ``FASTNIPS_DISABLE_{CPP,TRITON,CUDA,CUPY}``
remove a backend (``reference`` cannot be removed). Probes are cached; :func:`refresh` clears them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cache

from . import _optional

BACKENDS = ("reference", "cpp", "triton", "cuda", "cupy", "flex", "fused")

# Where each backend computes; ``auto`` only picks a backend that runs where the inputs live.
_RUNS_ON = {"reference": ("host", "cuda", "cupy"), "cpp": ("host",), "triton": ("cuda",), "cuda": ("cuda",),
            "cupy": ("cupy",), "flex": ("host", "cuda"), "fused": ("host", "cuda")}
# The preference of ``auto`` (fastest first); flex is opt-in.
AUTO_ORDER = ("cuda", "triton", "cupy", "cpp", "fused", "reference")


# The binding API this Python package expects of fastnips._C: equal to FASTNIPS_NATIVE_API in csrc/module.cpp.
# Bump both whenever a binding is added or changes its signature.
NATIVE_API = 11
REBUILD = "pip install -e . (or pip install .) from the repository root"


@cache
def _native_or_error():
    try:
        from . import _C
    except ImportError as exc:  # a source checkout without a build, or a broken build
        return None, f"the compiled module fastnips._C could not be imported ({exc})"
    _check_api(_C)
    return _C, ""


def _check_api(C) -> None:
    """Refuse a stale build once, where it is imported, instead of a missing function later."""
    api = getattr(C, "__api__", None)
    if api != NATIVE_API:
        raise ImportError(f"fastnips._C is a stale build (binding API {api}, this fastnips needs {NATIVE_API}); "
                          f"rebuild it: {REBUILD}")


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
    if name == "fused":
        if _optional.torch_or_none() is None:
            return False, "the fused backend takes torch tensors and torch is not installed"
        return True, ""
    if name == "flex":
        if _optional.torch_or_none() is None:
            return False, "the flex backend takes torch tensors and torch is not installed"
        try:
            from torch.nn.attention import flex_attention  # noqa: F401
        except ImportError as exc:
            return False, f"torch.nn.attention.flex_attention cannot be imported ({exc})"
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


def location(x) -> str:
    """Where ``x`` lives for dispatch: ``"cuda"`` (a CUDA torch tensor or device), ``"cupy"`` (a cupy array)
    or ``"host"`` (numpy, scipy, Python values, CPU tensors, None)."""
    if isinstance(x, str):
        return "cuda" if x.startswith("cuda") else "host"
    if type(x).__module__.split(".")[0] == "cupy":
        return "cupy"
    kind = getattr(getattr(x, "device", x), "type", None)  # a torch tensor's device, or a torch.device
    return "cuda" if kind == "cuda" else "host"


@cache
def _auto_order(where: str, supported: tuple[str, ...]) -> tuple[str, ...]:
    """:data:`AUTO_ORDER` restricted to ``supported`` and to the backends that run where the input lives."""
    return tuple(b for b in AUTO_ORDER if b in supported and where in _RUNS_ON[b])


def resolve(backend: str, *, op: str, supported: Sequence[str], like=None, auto: Sequence[str] | None = None,
            check: Callable[[str], str] | None = None) -> str:
    """Turn a user's ``backend=`` into a concrete, available backend.

    Parameters
    ----------
    backend : str
        ``"auto"`` or one of :data:`BACKENDS`.
    op : str
        Name of the operation, for error messages.
    supported : sequence of str
        Backends this op implements.
    like : array, tensor, torch.device or str, optional
        An input of the op: ``auto`` takes only backends that run where it lives (:func:`location`).
    auto : sequence of str, optional
        Preference order for ``"auto"``; default :data:`AUTO_ORDER` restricted to ``supported`` and to the
        backends that run where ``like`` lives.
    check : callable, optional
        ``check(name)`` returns why this op cannot use backend ``name`` for these inputs ("" when it can),
        e.g. a dtype a kernel lacks; ``auto`` skips such backends and an explicit request raises the reason.

    Raises
    ------
    ValueError
        For an unknown backend, one the op does not implement, or one not available here; the message
        names what is available.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if backend == "auto":
        if auto is None:
            auto = _auto_order(location(like) if like is not None else "host", tuple(supported))
        for b in auto:
            if b in supported and backend_available(b) and not (check and check(b)):
                return b
        raise ValueError(f"{op}: no backend available for these inputs among {list(auto)}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose 'auto' or one of {', '.join(BACKENDS)}")
    if backend not in supported:
        raise ValueError(f"{op} has no {backend!r} backend; it has {', '.join(supported)}")
    ok, why = _probe(backend)
    if ok and check is not None:
        why = check(backend)
        ok = not why
    if not ok:
        here = [b for b in supported if backend_available(b) and not (check and check(b))]
        raise ValueError(f"backend {backend!r} is not available here: {why}. Available for {op}: {here}")
    return backend
