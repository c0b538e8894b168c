"""fastnips: the algorithms of NeurIPS 2026 papers as fast, tested software.

Hot paths are C++ (``fastnips._C``, OpenMP), with Triton and CUDA kernels where a GPU helps, behind a
numpy/torch layer. Every hot op takes ``backend="auto"`` and has a readable reference implementation
that is the oracle in tests. ``import fastnips`` is cheap: subpackages, the compiled core, torch and
triton load on first use.

>>> import fastnips
>>> fastnips.available_backends()          # doctest: +SKIP
['reference', 'cpp']
"""

from __future__ import annotations

import importlib as _importlib

from ._backend import BACKENDS, available_backends
from ._optional import version_of

__version__ = "0.1.0"

_SUBPACKAGES = ("ops", "causal", "graph", "prune", "vision", "diffusion", "data", "scenegraph", "concepts", "optim",
                "rl", "vae", "pc", "designbench", "diagnosis", "datacuration", "evo", "submodular", "functional")
# The fields that cannot be imported without torch (they raise ModuleNotFoundError naming it); the tests of the
# namespace, the API docs and the no-torch install read both tuples, so a new field is added here only.
_NEEDS_TORCH = ("prune", "vision", "diffusion", "scenegraph", "concepts", "optim", "vae", "pc")

__all__ = ["BACKENDS", "__version__", "available_backends", "build_info", *_SUBPACKAGES]


def __getattr__(name: str):
    if name in _SUBPACKAGES:  # lazy: `fastnips.ops` imports fastnips.ops on first touch
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'fastnips' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def build_info() -> dict:
    """Facts about this build and this machine, probed now.

    Returns a dict with ``version``, ``python``, ``platform``, ``native`` (whether ``fastnips._C``
    imports), ``compiler``, ``openmp``, ``openmp_max_threads``, ``eigen``, ``cuda_compiled``,
    ``cuda_version``, ``cuda_devices`` (usable devices now), the installed versions of ``numpy``,
    ``scipy``, ``torch``, ``triton`` and ``cupy`` (None when absent; read from package metadata, so
    nothing heavy is imported) and ``backends`` (:func:`available_backends`).
    """
    import platform
    import sys

    from . import _backend

    info: dict = {
        "version": __version__,
        "python": sys.version.split()[0],
        "platform": f"{platform.system()} {platform.machine()}",
    }
    C = _backend.native()
    info["native"] = C is not None
    if C is not None:
        native = dict(C.build_info())
        if native.get("version") != __version__:
            native["native_version_mismatch"] = native.get("version")
        native.pop("version", None)
        info.update(native)
    else:
        info["native_error"] = _backend.why_unavailable("cpp")
        info.update(cuda_compiled=False, openmp=False)
    info["cuda_devices"] = _backend.cuda_device_count()
    for dist in ("numpy", "scipy", "torch", "triton"):
        info[dist] = version_of(dist)
    info["cupy"] = version_of("cupy-cuda13x") or version_of("cupy-cuda12x") or version_of("cupy")
    info["backends"] = available_backends()
    return info
