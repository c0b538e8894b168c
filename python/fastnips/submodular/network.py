r"""The torch model: :class:`PairwiseSubmodularNet`, a neural set function that is monotone submodular (or
:math:`\alpha`-submodular) for every value of its parameters, and its export to the numpy
:class:`~fastnips.submodular.PairwiseSubmodular` used by greedy and the certificate."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .functions import PairwiseSubmodular, rho_for_alpha

__all__ = ["PairwiseSubmodularNet"]


class PairwiseSubmodularNet(nn.Module):
    r"""Neural monotone submodular function with pairwise (cross-)interactions over items with features.

    An item encoder maps the features :math:`x_a` of each item to its modular weights
    :math:`m_{ca} = \mathrm{softplus}(\cdot) \ge 0` and interaction factors :math:`U_{ca} \in \mathbb{R}^r`
    for :math:`C` channels; then, exactly as :class:`~fastnips.submodular.PairwiseSubmodular`,

    .. math::
        g_c(S) = \sum_{a\in S} m_{ca} + \sum_{\{a,b\}\subseteq S} \rho\,\kappa_c m_{ca} m_{cb}\,
        \sigma(\langle U_{ca}, U_{cb}\rangle), \quad
        \varphi_c(y) = \sum_r a_{cr}\, \frac{1 - e^{-\beta_{cr} y}}{\beta_{cr}},

    :math:`h \leftarrow \log(1 + W_\ell h + b_\ell)` per hidden layer and :math:`f(S) = \langle v, h(S)\rangle
    - \langle v, h(\emptyset)\rangle`. The constraints hold by parametrisation: :math:`\kappa_c =
    \mathrm{softplus}(\cdot)`, :math:`\beta_{cr} = \kappa_c (1 + \mathrm{softplus}(\cdot)) \ge \kappa_c` (the
    rate condition :math:`-\varphi''/\varphi' \ge \kappa`), :math:`a, W, b, v = \mathrm{softplus}(\cdot) \ge 0`,
    and :math:`\sigma < 1` bounds the interaction by :math:`\rho\kappa m m`. So every parameter value is a
    monotone submodular function (:math:`\alpha`-submodular with :math:`\rho > 1`); training never needs a
    projection.

    This reconstructs the cross-interaction architecture of the paper from its abstract ("Neural monotone
    submodular functions with pairwise interactions", NeurIPS 2026); choices it leaves open and what we chose:
    interactions enter only the first layer (the DSF closure stacks concave layers on top), the rate-controlled
    transform is a mixture of exponential saturations (each term meets the condition with equality at
    :math:`\beta = \kappa`), the pair score is a sigmoid of a low-rank inner product (symmetric, bounded by 1,
    O(r) per pair), and :math:`\log(1 + x)` is the layer activation.

    Parameters
    ----------
    in_features : int
        Item feature size (use one-hot items, ``torch.eye(n)``, for a free parameter per item).
    channels : int
        :math:`C`.
    rank : int
        :math:`r`, the interaction factor size.
    terms : int
        :math:`R`, exponential terms per channel.
    hidden : tuple of int
        Widths of the layers above the channels (must be empty for ``alpha < 1``).
    encoder_width : int
        Hidden width of the item encoder (one tanh layer; 0: linear).
    alpha : float
        1 for submodular; below 1, the :math:`\alpha`-submodular variant.

    Examples
    --------
    >>> import torch
    >>> net = PairwiseSubmodularNet(3)
    >>> x = torch.randn(5, 3)
    >>> net(x, torch.ones(2, 5, dtype=torch.bool)).shape
    torch.Size([2])
    """

    def __init__(self, in_features: int, *, channels: int = 4, rank: int = 8, terms: int = 2,
                 hidden: tuple[int, ...] = (8,), encoder_width: int = 32, alpha: float = 1.0):
        super().__init__()
        for name, val in dict(in_features=in_features, channels=channels, rank=rank, terms=terms).items():
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
        self.rho = rho_for_alpha(alpha)
        self.alpha = float(alpha)
        if self.rho > 1 and hidden:
            raise ValueError("the alpha-submodular variant (alpha < 1) takes hidden=(): the layer rule needs alpha=1")
        self.channels, self.rank = channels, rank
        out = channels * (1 + rank)
        self.encoder = (nn.Linear(in_features, out) if not encoder_width else
                        nn.Sequential(nn.Linear(in_features, encoder_width), nn.Tanh(), nn.Linear(encoder_width, out)))
        self.kappa_raw = nn.Parameter(torch.zeros(channels))
        self.a_raw = nn.Parameter(torch.zeros(channels, terms))
        self.beta_raw = nn.Parameter(torch.linspace(-2.0, 1.0, terms).repeat(channels, 1))
        widths = (channels, *hidden)
        self.W_raw = nn.ParameterList([nn.Parameter(torch.randn(k, w) * 0.5 - 1.0) for w, k in zip(widths, hidden)])
        self.b_raw = nn.ParameterList([nn.Parameter(torch.full((k,), -2.0)) for k in hidden])
        self.v_raw = nn.Parameter(torch.zeros(widths[-1]))

    def parameters_of(self, x: torch.Tensor) -> dict:
        """The constrained parameters for items ``x`` (n, in_features): m, U, kappa, a, beta, Ws, bs, v."""
        z = self.encoder(x)
        C, r = self.channels, self.rank
        kappa = F.softplus(self.kappa_raw) + 1e-3
        return {"m": F.softplus(z[:, :C]), "U": z[:, C:].reshape(-1, C, r).permute(1, 0, 2), "kappa": kappa,
                "a": F.softplus(self.a_raw), "beta": kappa[:, None] * (1 + F.softplus(self.beta_raw)),
                "Ws": [F.softplus(W) for W in self.W_raw], "bs": [F.softplus(b) for b in self.b_raw],
                "v": F.softplus(self.v_raw)}

    def _top(self, p: dict, g: torch.Tensor) -> torch.Tensor:
        beta = p["beta"][None]
        h = (p["a"][None] * -torch.expm1(-beta * g[:, :, None]) / beta).sum(-1)
        for W, b in zip(p["Ws"], p["bs"], strict=True):
            h = torch.log1p(h @ W.T + b)
        return h @ p["v"]

    def forward(self, x: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """:math:`f(S) - f(\\emptyset)` for the sets of ``masks`` (B, n) over the items ``x`` (n, in_features)."""
        if masks.ndim != 2 or masks.shape[1] != x.shape[0]:
            raise ValueError(f"masks must have shape (B, n) with n = {x.shape[0]} items, got {tuple(masks.shape)}")
        p = self.parameters_of(x)
        s = masks.to(x.dtype)
        m, U = p["m"], p["U"]
        scale = self.rho * p["kappa"]
        sig = torch.sigmoid(U @ U.transpose(1, 2))                        # (C, n, n)
        w = scale[:, None, None] * m.T[:, :, None] * m.T[:, None, :] * sig
        w = w * (1 - torch.eye(x.shape[0], dtype=x.dtype))                # no self-pairs
        g = s @ m + 0.5 * torch.einsum("bi,cij,bj->bc", s, w, s)
        return self._top(p, g) - self._top(p, torch.zeros(1, self.channels, dtype=x.dtype))[0]

    @torch.no_grad()
    def export(self, x: torch.Tensor) -> PairwiseSubmodular:
        """The numpy :class:`~fastnips.submodular.PairwiseSubmodular` of this network on items ``x`` (float64),
        for :func:`~fastnips.submodular.greedy` and :func:`~fastnips.submodular.certify`."""
        p = {k: ([t.double().numpy() for t in v] if isinstance(v, list) else v.double().numpy())
             for k, v in self.parameters_of(x).items()}
        return PairwiseSubmodular(m=p["m"], U=p["U"], kappa=p["kappa"], a=p["a"], beta=p["beta"], Ws=tuple(p["Ws"]),
                                  bs=tuple(p["bs"]), v=p["v"], alpha=self.alpha)
