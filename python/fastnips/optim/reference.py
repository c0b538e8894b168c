r"""The centralised doubly smoothed GDA, written plainly: the oracle of one node (or of complete mixing with
identical local data) in the tests.

.. math:: x \leftarrow x - c\,(\nabla_x f + r_1 (x - z)), \quad y \leftarrow y + c\,(\nabla_y f - r_2 (y - v)), \quad
          z \leftarrow z + \beta (x - z), \quad v \leftarrow v + \mu (y - v).
"""

from __future__ import annotations

import torch


def ds_gda_centralized(grad, x0: torch.Tensor, y0: torch.Tensor, *, steps: int, lr: float, r1: float, r2: float,
                       beta: float, mu: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` doubly smoothed GDA steps with ``grad(x, y, step) -> (g_x, g_y)``; returns the final (x, y)."""
    x, y = x0.clone(), y0.clone()
    z, v = x.clone(), y.clone()
    for k in range(steps):
        gx, gy = grad(x, y, k)
        x_new = x - lr * (gx + r1 * (x - z))
        y_new = y + lr * (gy - r2 * (y - v))
        z = z + beta * (x_new - z)
        v = v + mu * (y_new - v)
        x, y = x_new, y_new
    return x, y
