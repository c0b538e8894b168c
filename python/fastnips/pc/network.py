r"""The multilayer network shared by backprop, predictive coding, DFC and Approx PC.

.. math::
    x_l = W_l f_{l-1}(x_{l-1}) + b_l,\quad l = 1..L,\qquad f_0 = \mathrm{id},\ f_l = f\ (0 < l < L),

so :math:`x_l` is the pre-activation (the "value node" of PC, the "somatic voltage" :math:`v_l` of DFC), the
input :math:`x_0` enters untransformed and the output :math:`x_L` is linear. Weights follow ``nn.Linear``
(:math:`W_l` of shape :math:`(n_l, n_{l-1})`).
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn

__all__ = ["PCNet"]

ACTIVATIONS = ("tanh", "relu", "linear")


def act(x: torch.Tensor, kind: str) -> torch.Tensor:
    """f(x) for ``kind`` in :data:`ACTIVATIONS`."""
    if kind == "tanh":
        return torch.tanh(x)
    if kind == "relu":
        return torch.relu(x)
    return x


def dact(x: torch.Tensor, kind: str) -> torch.Tensor:
    """f'(x) (for relu: 1 where x > 0, else 0)."""
    if kind == "tanh":
        return 1.0 - torch.tanh(x) ** 2
    if kind == "relu":
        return (x > 0).to(x.dtype)
    return torch.ones_like(x)


class PCNet(nn.Module):
    r"""A fully connected network :math:`x_l = W_l f(x_{l-1}) + b_l` of any depth (module docstring).

    Parameters
    ----------
    sizes : sequence of int
        ``(n_0, n_1, ..., n_L)``, at least two entries, all positive.
    activation : {"tanh", "relu", "linear"}
        f of the hidden layers (the output is linear; the input is not transformed).
    bias : bool
        Whether the layers have biases.
    dtype : torch.dtype
    seed : int
        Seeds the initialisation (``nn.Linear``'s default uniform :math:`\pm 1/\sqrt{n_{l-1}}`).

    Examples
    --------
    >>> net = PCNet([4, 8, 3], activation="tanh")
    >>> net(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """

    def __init__(self, sizes: list[int] | tuple[int, ...], *, activation: str = "tanh", bias: bool = True,
                 dtype: torch.dtype = torch.float32, seed: int = 0) -> None:
        super().__init__()
        sizes = list(sizes)
        if len(sizes) < 2 or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
            raise ValueError(f"sizes must list at least two positive integers (n_0, ..., n_L), got {sizes!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.sizes, self.activation = sizes, activation
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias, dtype=dtype) for a, b in itertools.pairwise(sizes))
        if not bias:
            for lin in self.layers:
                lin.bias = None

    @property
    def depth(self) -> int:
        """L, the number of weight layers."""
        return len(self.layers)

    def f(self, x: torch.Tensor, l: int) -> torch.Tensor:
        """The presynaptic activity :math:`f_l(x_l)` fed to layer l + 1."""
        return x if l == 0 else act(x, self.activation)

    def df(self, x: torch.Tensor, l: int) -> torch.Tensor:
        """:math:`f_l'(x_l)` (all ones for the input)."""
        return torch.ones_like(x) if l == 0 else dact(x, self.activation)

    def mu(self, prev: torch.Tensor, l: int) -> torch.Tensor:
        r"""The prediction :math:`\mu_l = W_l f_{l-1}(x_{l-1}) + b_l` of layer l (1-based) from its input."""
        lin = self.layers[l - 1]
        return nn.functional.linear(self.f(prev, l - 1), lin.weight, lin.bias)

    def states(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Feedforward states ``[x_0, x_1, ..., x_L]`` (x_0 is the input)."""
        xs = [x]
        for l in range(1, self.depth + 1):
            xs.append(self.mu(xs[-1], l))
        return xs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The prediction :math:`x_L` of the feedforward pass."""
        return self.states(x)[-1]

    def jacobians(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        r"""Per-sample :math:`J_l = \partial x_L / \partial x_l` at the states ``xs``, shapes (B, n_L, n_l) for
        l = 1..L (``J_L = I``): :math:`J_l = J_{l+1} W_{l+1} \mathrm{diag} f'(x_l)`."""
        B, nL = xs[-1].shape
        J = torch.eye(nL, dtype=xs[-1].dtype, device=xs[-1].device).expand(B, nL, nL)
        out = [J]
        for l in range(self.depth - 1, 0, -1):
            J = (J @ self.layers[l].weight) * self.df(xs[l], l)[:, None, :]
            out.append(J)
        return out[::-1]

    def check_batch(self, x: torch.Tensor, y: torch.Tensor | None = None) -> None:
        """Refuse inputs ``x`` (B, n_0) and targets ``y`` (B, n_L) of the wrong shape, dtype or values."""
        p = self.layers[0].weight
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != self.sizes[0]:
            raise ValueError(f"x must be a tensor of shape (batch, {self.sizes[0]}), got "
                             f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
        if x.dtype != p.dtype or x.device != p.device:
            raise ValueError(f"x must have the network's dtype and device ({p.dtype}, {p.device}), got "
                             f"({x.dtype}, {x.device})")
        if not torch.isfinite(x).all():
            raise ValueError("x contains NaN or inf")
        if y is None:
            return
        if not isinstance(y, torch.Tensor) or y.shape != (x.shape[0], self.sizes[-1]):
            raise ValueError(f"y must be a tensor of shape ({x.shape[0]}, {self.sizes[-1]}) (batch, n_L), got "
                             f"{tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__}")
        if y.dtype != p.dtype or y.device != p.device:
            raise ValueError(f"y must have the network's dtype and device ({p.dtype}, {p.device})")
        if not torch.isfinite(y).all():
            raise ValueError("y contains NaN or inf")


def check_positive(name: str, value: float, *, what: str = "") -> float:
    """``value`` as a float if positive and finite, else a ValueError naming ``name``."""
    v = float(value)
    if not (v > 0) or not math.isfinite(v):
        raise ValueError(f"{name}{what} must be a positive finite number, got {value!r}")
    return v


def check_count(name: str, value: int) -> int:
    """``value`` if an integer >= 1, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value
