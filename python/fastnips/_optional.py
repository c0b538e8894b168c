"""Every optional import of fastnips, guarded once.

Nothing here runs at ``import fastnips``: each getter imports on first use and caches. Getters named
``*_or_none`` return ``None`` where the package is missing or switched off; the plain getters raise an
``ImportError`` that says what to install. Kill switches (any non-empty value other than ``0``):

``FASTNIPS_DISABLE_TRITON``, ``FASTNIPS_DISABLE_CUPY``, ``FASTNIPS_DISABLE_CHOLMOD`` (and, in :mod:`fastnips._backend`,
``FASTNIPS_DISABLE_CPP`` and ``FASTNIPS_DISABLE_CUDA``).
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache

TORCH_HINT = ("pip install torch (see README: a CPU-only build comes from "
              "--index-url https://download.pytorch.org/whl/cpu; the CUDA build works too)")
_INSTALL_HINT = {
    "torch": TORCH_HINT,
    "triton": "pip install triton==3.7.1 (fastnips[triton])",
    "cupy": "pip install cupy-cuda13x (fastnips[cupy]); it needs a CUDA driver and device",
    "networkx": "pip install networkx (fastnips[graph])",
    "sklearn": "pip install scikit-learn (fastnips[data])",
    "matplotlib": "pip install matplotlib (fastnips[plot])",
    "datasets": "pip install datasets (fastnips[teacher]): SFT rows as a datasets.Dataset for trl",
    "textworld": "pip install textworld (its wheel ships Inform 7; games are generated offline)",
    "sksparse.cholmod": "pip install scikit-sparse (needs SuiteSparse: apt install libsuitesparse-dev)",
}


def switched_off(name: str) -> bool:
    """True when the kill switch ``FASTNIPS_DISABLE_<NAME>`` is set (to anything but '' or '0')."""
    return os.environ.get(f"FASTNIPS_DISABLE_{name.upper()}", "") not in ("", "0")


@cache
def _try_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def require(name: str):
    """Import ``name`` or raise an ImportError that says how to install it."""
    mod = _try_import(name)
    if mod is None:
        hint = _INSTALL_HINT.get(name, f"pip install {name}")
        raise ImportError(f"this feature needs the optional package {name!r}: {hint}")
    return mod


def installed(name: str) -> bool:
    """True when the optional module ``name`` (an import name: ``"torch"``, ``"sklearn"``) imports."""
    return _try_import(name) is not None


def torch():
    return require("torch")


def torch_or_none():
    return _try_import("torch")


def missing_torch(package: str) -> ModuleNotFoundError | None:
    """None when torch imports; else the error a torch-only ``package`` raises at its import.

    The guard at the top of ``fastnips.prune``, ``.vision`` and ``.diffusion``::

        if (_missing := _optional.missing_torch(__name__)) is not None:
            raise _missing
    """
    if torch_or_none() is not None:
        return None
    return ModuleNotFoundError(f"{package} needs torch, which is not installed: {TORCH_HINT}", name="torch")


def cholmod_or_none():
    """scikit-sparse's CHOLMOD wrapper (``sksparse.cholmod``), or None when missing or switched off
    (FASTNIPS_DISABLE_CHOLMOD); fastnips.graph's ``method="direct"`` then uses scipy's SuperLU."""
    if switched_off("cholmod"):
        return None
    return _try_import("sksparse.cholmod")


def triton_or_none():
    """The triton module, or None when missing or switched off (FASTNIPS_DISABLE_TRITON)."""
    if switched_off("triton"):
        return None
    return _try_import("triton")


@cache
def _cupy_usable():
    cp = _try_import("cupy")
    if cp is None:
        return None
    try:  # the import succeeds without a GPU; only a device query tells
        if not cp.cuda.is_available():
            return None
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # cupy_backends...CUDARuntimeError and friends
        return None
    return cp


def cupy_or_none():
    """The cupy module if it is installed, not switched off, and a CUDA device is usable; else None."""
    if switched_off("cupy"):
        return None
    return _cupy_usable()


def is_torch_tensor(x) -> bool:
    """True for a torch.Tensor, without importing torch when the caller never did."""
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def is_cupy_array(x) -> bool:
    cp = sys.modules.get("cupy")
    return cp is not None and isinstance(x, cp.ndarray)


def is_scipy_sparse(x) -> bool:
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(x)


def version_of(dist: str) -> str | None:
    """Installed version of a distribution, read from its metadata (imports nothing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None
