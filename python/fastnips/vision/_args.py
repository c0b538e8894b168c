"""Argument checks shared by the vision modules: window / grid pairs, positive counts, token tensors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _pair(x, name: str) -> tuple[int, int]:
    """(a, b) from an int or a length-2 sequence of positive ints; ValueError otherwise."""
    if _is_int(x):
        t = (int(x), int(x))
    elif isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2:
        if not all(_is_int(v) for v in x):
            raise ValueError(f"{name} must be an int or a pair of ints, got {x!r}")
        t = (int(x[0]), int(x[1]))
    else:
        raise ValueError(f"{name} must be an int or a pair of ints, got {x!r}")
    if t[0] < 1 or t[1] < 1:
        raise ValueError(f"{name} must be positive, got {t}")
    return t


def _positive_int(x, name: str) -> int:
    if not _is_int(x) or x < 1:
        raise ValueError(f"{name} must be a positive int, got {x!r}")
    return int(x)


def _grid_for(window: tuple[int, int], grid) -> tuple[int, int]:
    """The kernel period: ``grid`` checked against ``window``, default the alias-free ``(2Mh-1, 2Mw-1)``."""
    g = (2 * window[0] - 1, 2 * window[1] - 1) if grid is None else _pair(grid, "grid")
    if g[0] < window[0] or g[1] < window[1]:
        raise ValueError(f"window {window} larger than grid {g}: every in-window offset needs a distinct position "
                         "(grid >= window; grid >= 2*window-1 for the alias-free bias)")
    return g


def _check_tokens(x: torch.Tensor, grid: tuple[int, int], dim: int, who: str) -> None:
    if x.dim() != 3:
        raise ValueError(f"{who}: expected tokens of shape (B, h*w, C), got a {x.dim()}-D tensor {tuple(x.shape)}")
    h, w = grid
    if x.shape[1] != h * w:
        raise ValueError(f"{who}: {x.shape[1]} tokens do not match the grid {h}x{w} = {h * w} tokens")
    if x.shape[2] != dim:
        raise ValueError(f"{who}: {x.shape[2]} channels, expected dim={dim}")
