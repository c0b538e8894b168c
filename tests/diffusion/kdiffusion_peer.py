"""Loading k-diffusion's sampling module (the peer) for the comparison tests, or skipping with the reason.

k-diffusion 0.1.1's package ``__init__`` imports its training code (scikit-image, clean-fid, ...); its
``sampling.py`` needs only scipy, torchsde, torchdiffeq, tqdm and ``utils.append_dims`` from ``k_diffusion.utils``
(which itself imports PIL, torchvision and safetensors). So the module is imported by itself: ``k_diffusion`` is
registered as a namespace whose ``__init__`` is not run, and when torchvision is missing ``k_diffusion.utils``
is replaced by a shim holding only ``append_dims`` (broadcast a tensor to ``ndim`` dims by trailing unit axes).
Install: ``pip install --no-deps k-diffusion torchsde torchdiffeq trampoline``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest


def kdiffusion_sampling():
    """``k_diffusion.sampling``, or ``pytest.skip`` naming what is missing."""
    if "k_diffusion.sampling" in sys.modules:
        return sys.modules["k_diffusion.sampling"]
    spec = importlib.util.find_spec("k_diffusion")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("k-diffusion is not installed (pip install --no-deps k-diffusion torchsde torchdiffeq trampoline)")
    for dep in ("scipy", "torchsde", "torchdiffeq", "tqdm"):
        if importlib.util.find_spec(dep) is None:
            pytest.skip(f"k-diffusion's sampling module needs {dep}, which is not installed")
    if "k_diffusion" not in sys.modules:
        pkg = types.ModuleType("k_diffusion")
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__spec__ = spec
        sys.modules["k_diffusion"] = pkg
        if any(importlib.util.find_spec(d) is None for d in ("PIL", "torchvision", "safetensors")):
            shim = types.ModuleType("k_diffusion.utils")
            shim.append_dims = lambda x, ndim: x.reshape(*x.shape, *([1] * (ndim - x.ndim)))
            sys.modules["k_diffusion.utils"] = shim
            pkg.utils = shim
    try:
        return importlib.import_module("k_diffusion.sampling")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        pytest.skip(f"k_diffusion.sampling does not import here: {exc}")
