r"""The Dirichlet beta-VAE: encoder to Dirichlet concentrations, linear or deep Gaussian decoder, closed-form
(linear decoder) and reparameterised-sample ELBOs, and a deterministic full-batch trainer.

.. math::
    q(z|x) = \mathrm{Dir}(\alpha(x)),\quad p(z) = \mathrm{Dir}(\alpha_0 1_K),\quad
    p(x|z) = N(g(z), \sigma^2 I_D),\quad
    \mathcal L(x) = c\,E_q[-\log p(x|z)] + \beta\,\mathrm{KL}(q(z|x)\,\|\,p(z))

(the negative ELBO with a weighted KL; c as in :mod:`fastnips.vae.threshold`). ``g(z) = W z + b`` (linear
decoder) or an MLP. Choices the abstract leaves open: sigma2 is fixed (a learned sigma2 moves the threshold with
it); the encoder is an MLP (linear by default) whose output h gives ``alpha = exp(h)`` (``"log"``) or
``softplus(h)``, bounded smoothly to keep the digamma finite (``"log"``: h passes through
``12 tanh(h / 12)``, so alpha lies in (6e-6, 1.6e5) and the gradient never vanishes exactly; ``"softplus"``: a
floor of 1e-6) -- a hard clamp stalls L-BFGS at the bounds; samples use torch's implicit-reparameterised
Dirichlet ``rsample``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .reference import dirichlet_kl, expected_sq_error_linear, gaussian_nll_const
from .threshold import _check_data, _check_params, _inverse_link, link

__all__ = ["DirichletVAE"]

_DECODERS = ("linear", "deep")
_METHODS = ("closed", "sample")
_H = 12.0  # the smooth bound of log alpha (encoder="log")


def _mlp(sizes: list[int], dtype: torch.dtype) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1], dtype=dtype))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class DirichletVAE(nn.Module):
    r"""Dirichlet beta-VAE with a linear or deep Gaussian decoder of fixed variance.

    Parameters
    ----------
    n_features : int
        D, the data dimension.
    K : int
        The simplex dimension, >= 2.
    alpha0 : float
        Prior concentration, > 0.
    sigma2 : float
        Decoder noise variance, > 0 (fixed).
    beta : float
        KL weight, >= 0.
    decoder : {"linear", "deep"}
        ``W z + b``, or a tanh MLP with ``hidden`` widths.
    hidden : tuple of int
        Hidden widths of the deep decoder.
    encoder_hidden : tuple of int
        Hidden widths of the encoder; ``()`` (default) is a linear encoder.
    encoder : {"log", "softplus"}
        The link from the encoder output to alpha.
    likelihood : {"sum", "mean"}
        The reconstruction term summed or averaged over the D coordinates.
    dtype : torch.dtype
        Parameter dtype (float64 by default: the collapse is a question about exact zeros).
    seed : int
        Seeds the initialisation (small random weights; the encoder bias starts at alpha0).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((200, 5))
    >>> m = DirichletVAE(5, 3, alpha0=1.0, sigma2=1.0, beta=0.5).fit(X, steps=50)
    >>> float(m.kl(X).mean().detach()) >= 0
    True
    """

    def __init__(self, n_features: int, K: int, *, alpha0: float = 1.0, sigma2: float = 1.0, beta: float = 1.0,
                 decoder: str = "linear", hidden: tuple[int, ...] = (64,), encoder_hidden: tuple[int, ...] = (),
                 encoder: str = "log", likelihood: str = "sum", dtype: torch.dtype = torch.float64,
                 seed: int = 0) -> None:
        super().__init__()
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
        _check_params(K, alpha0, sigma2, likelihood, allow_inf=False)
        if not (float(beta) >= 0) or not math.isfinite(float(beta)):
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        if decoder not in _DECODERS:
            raise ValueError(f"decoder must be one of {_DECODERS}, got {decoder!r}")
        _inverse_link(float(alpha0), encoder)  # validates `encoder`
        if encoder == "log" and not abs(math.log(float(alpha0))) < _H:
            raise ValueError(f"alpha0 must lie in (exp(-{_H:g}), exp({_H:g})) for encoder='log', got {alpha0!r}")
        self.D, self.K = n_features, int(K)
        self.alpha0, self.sigma2, self.beta = float(alpha0), float(sigma2), float(beta)
        self.decoder_kind, self.encoder_link, self.likelihood = decoder, encoder, likelihood
        gen = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.encoder = _mlp([n_features, *encoder_hidden, self.K], dtype)
            self.decoder = (nn.Linear(self.K, n_features, dtype=dtype) if decoder == "linear"
                            else _mlp([self.K, *hidden, n_features], dtype))
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.1 * torch.randn(p.shape, generator=gen, dtype=dtype))
            h0 = _inverse_link(self.alpha0, encoder)
            self.encoder[-1].bias.add_(_H * math.atanh(h0 / _H) if encoder == "log" else h0)

    def _x(self, X) -> torch.Tensor:
        p = next(self.parameters())
        if isinstance(X, torch.Tensor):
            x = X.to(dtype=p.dtype, device=p.device)
        else:
            x = torch.as_tensor(_check_data(X), dtype=p.dtype, device=p.device)
        if x.ndim != 2 or x.shape[1] != self.D:
            raise ValueError(f"X must have shape (N, {self.D}), got {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("X contains NaN or inf")
        return x

    def encode(self, X: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Dirichlet concentrations alpha(x), shape (N, K)."""
        h = self.encoder(self._x(X))
        if self.encoder_link == "log":
            return torch.exp(_H * torch.tanh(h / _H))
        return link(h, "softplus").clamp_min(1e-6)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder mean g(z), shape (N, D), for z on the simplex (N, K)."""
        return self.decoder(z)

    def kl(self, X: np.ndarray | torch.Tensor) -> torch.Tensor:
        """KL(q(z|x) || p(z)) per datum, shape (N,)."""
        return dirichlet_kl(self.encode(X), self.alpha0)

    def negative_elbo(self, X: np.ndarray | torch.Tensor, *, method: str = "closed", n_samples: int = 1,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        r"""The per-datum loss :math:`\mathcal L(x)`, shape (N,).

        ``method="closed"``: the exact expectation (linear decoder only,
        :func:`fastnips.vae.reference.expected_sq_error_linear`); ``"sample"``: the mean over ``n_samples``
        reparameterised draws z ~ Dir(alpha(x)) (unbiased for the closed form; any decoder). ``generator``
        makes the draws reproducible.
        """
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
        if method == "closed" and self.decoder_kind != "linear":
            raise ValueError("method='closed' needs decoder='linear' (E||x - g(z)||^2 has no closed form for a "
                             "deep decoder); use method='sample'")
        if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
        x = self._x(X)
        alpha = self.encode(x)
        if method == "closed":
            sq = expected_sq_error_linear(x, self.decoder.weight, self.decoder.bias, alpha)
        else:
            sq = self._sampled_sq_error(x, alpha, n_samples, generator)
        c = 1.0 if self.likelihood == "sum" else 1.0 / self.D
        rec = sq / (2.0 * self.sigma2) + gaussian_nll_const(self.D, self.sigma2)
        return c * rec + self.beta * dirichlet_kl(alpha, self.alpha0)

    def _sampled_sq_error(self, x, alpha, n_samples, generator):
        # Dirichlet as normalised Gammas; torch's Gamma rsample carries the implicit reparameterisation gradient
        shape = (n_samples, *alpha.shape)
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            z = torch.distributions.Dirichlet(alpha.expand(shape)).rsample()
        return ((x - self.decode(z)) ** 2).sum(-1).mean(0)

    def fit(self, X: np.ndarray | torch.Tensor, *, steps: int = 200, method: str = "closed", lr: float = 1e-2,
            n_samples: int = 4, seed: int = 0) -> DirichletVAE:
        """Train on all of ``X`` at once, deterministically.

        ``method="closed"``: L-BFGS (strong Wolfe line search) for ``steps`` iterations on the exact loss;
        ``"sample"``: Adam (``lr``) for ``steps`` steps on the sampled loss with ``n_samples`` draws per datum,
        seeded by ``seed``. Returns ``self``.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive integer, got {steps!r}")
        x = self._x(X)
        if method == "closed":
            self.negative_elbo(x[:2], method="closed")  # validates before the work
            opt = torch.optim.LBFGS(self.parameters(), lr=1.0, max_iter=steps, history_size=50,
                                    tolerance_grad=1e-12, tolerance_change=1e-15, line_search_fn="strong_wolfe")

            def closure():
                opt.zero_grad()
                loss = self.negative_elbo(x, method="closed").mean()
                loss.backward()
                return loss

            opt.step(closure)
            return self
        gen = torch.Generator().manual_seed(int(seed))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            self.negative_elbo(x, method=method, n_samples=n_samples, generator=gen).mean().backward()
            opt.step()
        return self
