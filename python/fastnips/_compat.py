"""Deprecated import paths: one hook for every module whose names moved.

A module whose public names moved elsewhere ends with::

    __getattr__ = moved(__name__, {"OldName": "fastnips.field.newmodule", ...})

so ``from fastnips.field.oldmodule import OldName`` keeps working and warns (``DeprecationWarning``) with
the new path; names that never existed still raise ``AttributeError``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable


def moved(module: str, where: dict[str, str]) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for ``module`` that resolves each name of ``where`` (name -> the module
    it moved to, absolute) with a DeprecationWarning."""

    def __getattr__(name: str):
        target = where.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} moved to {target}.{name}; the old path will be removed",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(target), name)

    return __getattr__
