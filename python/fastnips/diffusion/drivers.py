r"""Noise drivers for diffusion samplers: the shuffled-Lorenz driver of the Fast-Driver Sampler and i.i.d. baselines.

A driver is a seeded stream of vectors :math:`\xi_1, \xi_2, \dots \in \mathbb{R}^{\text{shape}}`; a sampler
injects :math:`\eta = Q^{-1/2} n^{-1/2} \sum_{j=1}^{n} \xi_{(i,j)}` where EDM injects
:math:`\varepsilon \sim N(0, I)`. The contract (``draw``, ``reset``, ``Q``, ``bound``, ``C_chi``, ``stats``) is
:class:`~fastnips.diffusion.driver_base.Driver`.

Drivers
-------
* :class:`Gaussian` -- ``torch.randn`` with a private CPU ``torch.Generator().manual_seed(seed)``:
  ``Gaussian(shape, seed=s).draw(n)`` is **exactly** the stack of n consecutive
  ``torch.randn(shape, generator=g)`` calls (``dtype=torch.float64`` calls for float64), so a test can rebuild
  EDM's stochastic sampler (Karras et al. 2022, Algorithm 2) with the same noise. Values are generated on the
  CPU and moved to the requested device.
* :class:`Rademacher` (:math:`\pm 1`) and :class:`Uniform` (on :math:`[-\sqrt3, \sqrt3]`): bounded, unit
  variance, the bounded-i.i.d. ablations (is it boundedness or the Lorenz structure that matters?). One
  generator call per value of the stream (float64, then cast), so ``draw(n)`` equals n calls of ``draw(1)``
  and float32 draws are the rounded float64 ones.
* :class:`Lorenz` -- a Lorenz-63 observable read every ``tau`` time units, shuffled in time (default), in
  space, or not at all (:mod:`fastnips.diffusion.lorenz`, with :func:`lorenz_rk4` and :func:`lorenz_Q`).

:func:`make_driver` builds one by name (what ``sample_fds(driver="lorenz")`` does).

Examples
--------
>>> drv = make_driver("rademacher", (2, 3), seed=0)
>>> drv.draw(4).shape, drv.Q, drv.bound
(torch.Size([4, 2, 3]), 1.0, 1.0)

References: "Fast-Driver Sampler" (FDS), NeurIPS 2026 (abstract only); Melbourne & Stuart, "A note on
diffusion limits of chaotic skew-product flows", Nonlinearity 24 (2011); Karras, Aittala, Aila & Laine,
"Elucidating the Design Space of Diffusion-Based Generative Models", NeurIPS 2022.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .driver_base import Driver, _shape
from .lorenz import SHUFFLES, X_BOUND, X_STD, Lorenz, lorenz_Q, lorenz_rk4

__all__ = ["DRIVERS", "SHUFFLES", "X_BOUND", "X_STD", "Driver", "Gaussian", "Lorenz", "Rademacher", "Uniform",
           "lorenz_Q", "lorenz_rk4", "make_driver"]


class _TorchIID(Driver):
    """i.i.d. drivers on a private CPU torch.Generator, one generator call per value of the stream."""

    def __init__(self, shape, *, seed: int = 0):
        super().__init__(shape, seed)
        self._gen = torch.Generator().manual_seed(self.seed)

    def _reset(self) -> None:
        self._gen.manual_seed(self.seed)

    def _fresh(self, shape):
        return type(self)(shape, seed=self.seed)

    def _one(self, dtype: torch.dtype) -> torch.Tensor:
        """One value of the stream, shape ``self.shape``: each i.i.d. driver (Gaussian, Rademacher, Uniform)
        defines it."""
        raise NotImplementedError(f"{type(self).__name__} must define _one(dtype)")

    def _draw(self, n: int, dtype: torch.dtype) -> torch.Tensor:
        if n == 0:
            return torch.empty((0, *self.shape), dtype=dtype)
        return torch.stack([self._one(dtype) for _ in range(n)])



class Gaussian(_TorchIID):
    r""":math:`\xi_k \sim N(0, I)` i.i.d.: ``Q = 1``, ``bound = C_chi = inf``.

    ``draw(n)`` is exactly ``torch.stack([torch.randn(shape, generator=g) for _ in range(n)])`` with
    ``g = torch.Generator().manual_seed(seed)`` at construction / :meth:`reset` (``dtype=torch.float64`` in
    the calls for float64; other float dtypes are float32 calls cast). EDM's Algorithm 2 with
    ``torch.randn(..., generator=g)`` therefore sees the same noise.

    Parameters
    ----------
    shape : tuple of int
    seed : int >= 0
    """

    name = "gaussian"

    def _one(self, dtype):
        if dtype == torch.float64:
            return torch.randn(self.shape, generator=self._gen, dtype=torch.float64)
        return torch.randn(self.shape, generator=self._gen).to(dtype)

    def _c_chi(self, st):
        return dict(C_chi=math.inf, C_chi_method="exact: i.i.d. Gaussian, chi = v is unbounded")



class Rademacher(_TorchIID):
    r""":math:`\xi_k \in \{-1, +1\}` i.i.d. fair signs: unit variance, ``Q = 1``, ``bound = C_chi = 1``.

    One ``torch.randint(0, 2, shape, generator=g)`` call per value, mapped to :math:`2b - 1`.
    """

    name = "rademacher"
    bound = 1.0

    def _one(self, dtype):
        return (2 * torch.randint(0, 2, self.shape, generator=self._gen) - 1).to(dtype)



class Uniform(_TorchIID):
    r""":math:`\xi_k \sim U[-\sqrt3, \sqrt3]` i.i.d.: unit variance, ``Q = 1``, ``bound = C_chi = sqrt(3)``.

    One ``torch.rand(shape, generator=g, dtype=torch.float64)`` call per value, :math:`\sqrt3 (2u - 1)`,
    then cast (float32 draws are the rounded float64 ones).
    """

    name = "uniform"
    bound = math.sqrt(3.0)

    def _one(self, dtype):
        u = torch.rand(self.shape, generator=self._gen, dtype=torch.float64)
        return (math.sqrt(3.0) * (2.0 * u - 1.0)).clamp_(-math.sqrt(3.0), math.sqrt(3.0)).to(dtype)



DRIVERS = {"lorenz": Lorenz, "gaussian": Gaussian, "rademacher": Rademacher, "uniform": Uniform}


def make_driver(spec: str | Driver, shape: int | Sequence[int], *, seed: int = 0) -> Driver:
    """A driver from a name (``"lorenz"``, ``"gaussian"``, ``"rademacher"``, ``"uniform"``; default parameters and
    ``seed``) or a :class:`Driver` instance, checked to have ``shape``.

    Raises
    ------
    ValueError
        An unknown name (the message lists the names) or an instance whose shape differs from ``shape``.
    TypeError
        Anything else.
    """
    shape = _shape(shape)
    if isinstance(spec, Driver):
        if spec.shape != shape:
            raise ValueError(f"driver {spec!r} has shape {spec.shape}, the sampler needs {shape}")
        return spec
    if isinstance(spec, str):
        cls = DRIVERS.get(spec.lower())
        if cls is None:
            raise ValueError(f"unknown driver {spec!r}; choose one of {', '.join(DRIVERS)} or pass a Driver")
        return cls(shape, seed=seed)
    raise TypeError(f"driver must be a name ({', '.join(DRIVERS)}) or a Driver instance, got {type(spec).__name__}")

