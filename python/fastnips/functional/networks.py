r"""The two networks of paper 14 on the basis coefficients :math:`\hat c \in \mathbb{R}^{p}` (all predictors'
coefficients concatenated).

* Equal-width ReLU network (the estimator for continuous functional models):
  :math:`f(c) = W_{L+1}\,\sigma(W_L \cdots \sigma(W_1 c + b_1) \cdots + b_L) + b_{L+1}`, every hidden layer of
  width :math:`W`.
* Bottleneck-equal-width network (functional multiple-index models :math:`y = g(\langle\beta_1, X\rangle, \dots,
  \langle\beta_d, X\rangle)`): a linear map :math:`A \in \mathbb{R}^{d \times p}` without bias or activation
  (the :math:`d` indices, :math:`\langle\beta_l, X\rangle \approx a_l^\top \hat c` when :math:`\beta_l` lies in the
  span of the basis), then the equal-width network on :math:`A\hat c`.

The abstract fixes neither the depth nor the width; the defaults (3 hidden layers of width 64) are the sizes at
which both networks fit the synthetic models of the tests and the evaluation.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

import torch
from torch import nn

__all__ = ["BottleneckNet", "EqualWidthNet"]


def _check_sizes(**sizes: int) -> None:
    for name, v in sizes.items():
        if not (isinstance(v, int) and v >= 1):
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")


class EqualWidthNet(nn.Module):
    r"""Equal-width ReLU network :math:`\mathbb{R}^p \to \mathbb{R}`: ``depth`` hidden layers of ``width`` units.

    Parameters
    ----------
    in_features : int
        :math:`p`.
    width : int
        :math:`W`.
    depth : int
        :math:`L`, the number of hidden layers.

    Examples
    --------
    >>> EqualWidthNet(10, width=8, depth=2)(torch.zeros(3, 10)).shape
    torch.Size([3])
    """

    def __init__(self, in_features: int, width: int = 64, depth: int = 3) -> None:
        super().__init__()
        _check_sizes(in_features=in_features, width=width, depth=depth)
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(in_features if i == 0 else width, width), nn.ReLU()]
        layers.append(nn.Linear(width, 1))
        self.body = nn.Sequential(*layers)

    def forward(self, c: torch.Tensor) -> torch.Tensor:
        """Predictions ``(batch,)`` from coefficients ``(batch, in_features)``."""
        return self.body(c).squeeze(-1)


class BottleneckNet(nn.Module):
    r"""Bottleneck-equal-width network: :math:`f(c) = h(A c)`, :math:`A \in \mathbb{R}^{d\times p}` linear
    (no bias, no activation), :math:`h` an :class:`EqualWidthNet` on :math:`\mathbb{R}^d`.

    Parameters
    ----------
    in_features : int
        :math:`p`.
    n_index : int
        :math:`d`, the number of indices.
    width, depth : int
        Of the equal-width part.

    Examples
    --------
    >>> net = BottleneckNet(10, n_index=2, width=8, depth=2)
    >>> net.index(torch.zeros(3, 10)).shape, net(torch.zeros(3, 10)).shape
    (torch.Size([3, 2]), torch.Size([3]))
    """

    def __init__(self, in_features: int, n_index: int = 2, width: int = 64, depth: int = 3) -> None:
        super().__init__()
        _check_sizes(in_features=in_features, n_index=n_index)
        self.bottleneck = nn.Linear(in_features, n_index, bias=False)
        self.head = EqualWidthNet(n_index, width, depth)

    def index(self, c: torch.Tensor) -> torch.Tensor:
        """The learned indices :math:`A c`, ``(batch, n_index)``."""
        return self.bottleneck(c)

    def forward(self, c: torch.Tensor) -> torch.Tensor:
        """Predictions ``(batch,)`` from coefficients ``(batch, in_features)``."""
        return self.head(self.bottleneck(c))
