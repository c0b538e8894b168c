"""Shared numerical operations used across fields (graph propagation, Tikhonov solves, pruning).

* :func:`spmm` -- CSR sparse x dense multiply, every backend.
"""

from __future__ import annotations

from ._spmm import SPMM_BACKENDS, spmm

__all__ = ["SPMM_BACKENDS", "spmm"]
