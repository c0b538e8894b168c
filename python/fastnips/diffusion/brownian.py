r"""A Brownian-tree noise sampler for the SDE samplers: noise that is consistent across step sizes.

An SDE solver that evaluates the noise of one step in pieces (DPM-Solver++ SDE draws the increment over
:math:`[\sigma_i, \sigma_s]` and over :math:`[\sigma_i, \sigma_{i+1}]`) needs the pieces to come from one
Brownian path :math:`W`: ``noise(a, b)`` returns the normalised increment

.. math:: \varepsilon(a, b) = \frac{W(b) - W(a)}{\sqrt{|b - a|}} \sim N(0, I),

so overlapping calls are correlated exactly as Brownian increments are, and the same seed gives the same path
whatever the schedule (Li, Wong, Chen, Duvenaud, "Scalable Gradients for Stochastic Differential Equations",
AISTATS 2020: the virtual Brownian tree; k-diffusion's ``BrownianTreeNoiseSampler`` wraps torchsde's).

Two backends (``backend="auto"`` takes torchsde when it is installed):

* ``"torchsde"``: ``torchsde.BrownianTree(t0, w0, t1, entropy=seed)`` on the interval ``[sigma_min,
  sigma_max]`` with times as tensors in ``x``'s dtype -- the same path as k-diffusion's sampler when both are
  given float64 (or both float32) sigmas.
* ``"torch"``: a virtual Brownian tree in plain torch. :math:`W(t_0) = 0`, :math:`W(t_1) = \sqrt{t_1 - t_0}\,z`;
  an interval :math:`[a, b]` with known ends is split at :math:`m = (a+b)/2` by the Brownian bridge,
  :math:`W(m) = \tfrac12(W(a) + W(b)) + \tfrac12\sqrt{b - a}\; z_{\rm node}`, each :math:`z_{\rm node}` drawn
  from a ``torch.Generator`` seeded by a splitmix64 hash of (seed, depth, index), so any node is recomputed
  identically without storing the tree (recent nodes are cached). A query descends until the interval is
  shorter than ``tol`` and interpolates linearly inside it: exact in law at the dyadic points, with a
  variance deficit of at most ``tol / 4`` in between (a choice the paper leaves to the implementation; the
  deficit is below float32 resolution for the default ``tol``). Its stream differs from torchsde's.

Examples
--------
>>> import torch
>>> x = torch.zeros(4, 3, dtype=torch.float64)
>>> ns = BrownianTreeNoiseSampler(x, 0.1, 10.0, seed=0, backend="torch")
>>> a, b = ns(torch.tensor(10.0), torch.tensor(1.0)), ns(torch.tensor(10.0), torch.tensor(1.0))
>>> bool(torch.equal(a, b)), a.shape
(True, torch.Size([4, 3]))
"""

from __future__ import annotations

import math
import numbers
from collections import OrderedDict
from collections.abc import Callable, Sequence

import torch

__all__ = ["BROWNIAN_BACKENDS", "BrownianTreeNoiseSampler"]

#: Backends of :class:`BrownianTreeNoiseSampler`.
BROWNIAN_BACKENDS = ("auto", "torchsde", "torch")

_MASK64 = (1 << 64) - 1


def _splitmix64(z: int) -> int:
    """One splitmix64 output for the 64-bit state ``z`` (Steele, Lea, Flood, OOPSLA 2014)."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _has_torchsde() -> bool:
    try:
        import torchsde  # noqa: F401
    except ImportError:
        return False
    return True


class _TorchTree:
    """The virtual Brownian tree of the module docstring on ``[t0, t1]`` (floats), values shaped like ``like``."""

    def __init__(self, like: torch.Tensor, t0: float, t1: float, seed: int, tol: float, cache: int = 128):
        self.like, self.t0, self.t1, self.seed = like, t0, t1, seed
        self.max_depth = max(1, math.ceil(math.log2(max((t1 - t0) / tol, 2.0))))
        self._cache: OrderedDict[tuple[int, int], torch.Tensor] = OrderedDict()
        self._cache_size = cache
        self._points: OrderedDict[float, torch.Tensor | float] = OrderedDict()
        self.w1 = math.sqrt(t1 - t0) * self._z(0, -1)

    def _z(self, depth: int, index: int) -> torch.Tensor:
        key = _splitmix64(_splitmix64(self.seed) ^ ((depth << 48) + index + 1)) & ((1 << 63) - 1)
        gen = torch.Generator(device=self.like.device).manual_seed(key)
        return torch.randn(self.like.shape, generator=gen, dtype=self.like.dtype, device=self.like.device)

    def _mid(self, depth: int, index: int, a: float, b: float, wa, wb) -> torch.Tensor:
        got = self._cache.get((depth, index))
        if got is None:
            got = 0.5 * (wa + wb) + 0.5 * math.sqrt(b - a) * self._z(depth + 1, index)
            self._cache[(depth, index)] = got
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end((depth, index))
        return got

    def w(self, t: float):
        """W(t), remembering the last few query points (a sampler asks for W(sigma_next) again as the next
        step's W(sigma))."""
        got = self._points.get(t)
        if got is None:
            got = self._points[t] = self._descend(t)
            if len(self._points) > 8:
                self._points.popitem(last=False)
        return got

    def _descend(self, t: float):
        a, b, wa, wb, index = self.t0, self.t1, 0.0, self.w1, 0
        for depth in range(self.max_depth + 1):
            if t == a:
                return wa
            if t == b:
                return wb
            if depth == self.max_depth:
                break
            m = 0.5 * (a + b)
            wm = self._mid(depth, index, a, b, wa, wb)
            if t < m:
                b, wb, index = m, wm, 2 * index
            else:
                a, wa, index = m, wm, 2 * index + 1
        return wa + (wb - wa) * ((t - a) / (b - a))


class BrownianTreeNoiseSampler:
    r"""Normalised Brownian increments on ``[sigma_min, sigma_max]``, consistent across calls (a Brownian tree).

    ``sampler(sigma, sigma_next)`` returns :math:`(W(t(\sigma_{\rm next})) - W(t(\sigma)))/\sqrt{|t(\sigma_{\rm
    next}) - t(\sigma)|}`, standard normal like ``x``, with :math:`t` = ``transform`` (identity by default, as in
    k-diffusion). The module docstring gives the construction and the two backends.

    Parameters
    ----------
    x : torch.Tensor
        Gives the shape, dtype and device of the noise.
    sigma_min, sigma_max : float or 0-d tensor
        The interval of valid noise levels, ``0 < sigma_min < sigma_max``.
    seed : int or sequence of int, optional
        The path's seed; a sequence of ``x.shape[0]`` seeds gives every batch item its own tree (k-diffusion's
        batched form). None: drawn from torch's global generator.
    transform : callable, optional
        Maps a noise level (0-d tensor) to the tree's time (monotone); default identity.
    backend : {"auto", "torchsde", "torch"}
        ``"auto"``: torchsde when installed (k-diffusion's path), else the torch tree.
    tol : float
        Resolution of the tree (time units), > 0.

    Examples
    --------
    >>> import torch
    >>> x = torch.zeros(2, 5)
    >>> ns = BrownianTreeNoiseSampler(x, 0.002, 80.0, seed=3, backend="torch")
    >>> ns(torch.tensor(80.0), torch.tensor(40.0)).shape
    torch.Size([2, 5])
    """

    def __init__(self, x: torch.Tensor, sigma_min: float | torch.Tensor, sigma_max: float | torch.Tensor,
                 seed: int | Sequence[int] | None = None,
                 transform: Callable[[torch.Tensor], torch.Tensor] | None = None, *, backend: str = "auto",
                 tol: float = 1e-6):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise ValueError(f"x must be a floating-point torch.Tensor, got {type(x).__name__}")
        if backend not in BROWNIAN_BACKENDS:
            raise ValueError(f"backend must be one of {BROWNIAN_BACKENDS}, got {backend!r}")
        if backend == "torchsde" and not _has_torchsde():
            raise ValueError("backend='torchsde' needs torchsde (pip install torchsde); use backend='torch'")
        if not (isinstance(tol, numbers.Real) and math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        self.backend = ("torchsde" if _has_torchsde() else "torch") if backend == "auto" else backend
        self.transform = (lambda s: s) if transform is None else transform
        self._dtype, self._device = x.dtype, x.device
        t0, t1 = self._time(sigma_min, "sigma_min"), self._time(sigma_max, "sigma_max")
        if not (float(t0) < float(t1)):
            raise ValueError(f"need transform(sigma_min) < transform(sigma_max), got {float(t0)} and {float(t1)}")
        self.t0, self.t1 = t0, t1
        seeds, self.batched = self._seeds(seed, x)
        like = x[0] if self.batched else x
        if self.backend == "torchsde":
            import torchsde

            w0 = torch.zeros_like(like)
            self._trees = [torchsde.BrownianTree(t0, w0, t1, entropy=s, tol=tol) for s in seeds]
        else:
            self._trees = [_TorchTree(like, float(t0), float(t1), s, tol) for s in seeds]

    @staticmethod
    def _seeds(seed, x) -> tuple[list[int], bool]:
        if seed is None:
            return [int(torch.randint(0, 2**63 - 1, []).item())], False
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return [int(seed)], False
        seeds = list(seed) if isinstance(seed, Sequence) else None
        if not seeds or len(seeds) != x.shape[0] or not all(
                isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds):
            raise ValueError(f"seed must be an int, None or a sequence of x.shape[0] = {x.shape[0]} ints, got {seed!r}")
        return [int(s) for s in seeds], True

    def _time(self, sigma, name: str) -> torch.Tensor:
        try:
            s = torch.as_tensor(sigma, dtype=self._dtype, device=self._device)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"{name} must be a number or a 0-d tensor, got {sigma!r}") from None
        if s.numel() != 1 or not bool(torch.isfinite(s).all()) or not float(s) > 0.0:
            raise ValueError(f"{name} must be a positive finite noise level, got {sigma!r}")
        return self.transform(s.reshape(()))

    def _w(self, tree, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.backend == "torchsde":
            return tree(a, b)
        return tree.w(float(b)) - tree.w(float(a))

    def __call__(self, sigma: float | torch.Tensor, sigma_next: float | torch.Tensor) -> torch.Tensor:
        a, b = self._time(sigma, "sigma"), self._time(sigma_next, "sigma_next")
        lo, hi = float(self.t0), float(self.t1)
        slack = 1e-12 * (hi - lo)
        for t in (a, b):
            if not (lo - slack <= float(t) <= hi + slack):
                raise ValueError(f"noise level maps to time {float(t)}, outside the tree's [{lo}, {hi}]; build the "
                                 "sampler with the schedule's smallest positive and largest sigma")
        a, b = a.clamp(self.t0, self.t1), b.clamp(self.t0, self.t1)
        if float(a) == float(b):
            raise ValueError(f"sigma and sigma_next must differ, both map to time {float(a)}")
        lo_t, hi_t, sign = (a, b, 1.0) if float(a) < float(b) else (b, a, -1.0)
        w = torch.stack([self._w(tree, lo_t, hi_t) for tree in self._trees])
        w = w if self.batched else w[0]
        return (sign * w) / (hi_t - lo_t).sqrt()
