r"""Triton kernels of the Lorenz driver (:mod:`fastnips.diffusion.lorenz`, backend ``"triton"``).

**RK4 of many Lorenz-63 copies** (:func:`lorenz_rk4`): one program per ``BLOCK`` copies of

.. math:: \dot x = \sigma (y - x), \quad \dot y = x(\rho - z) - y, \quad \dot z = x y - \beta z,

state structure-of-arrays (3, d) float64. Each program loads its block once, runs every substep in registers
(a loop over records, an inner loop of ``record_every`` RK4 steps), writes one row of x records per record and
the final state at the end. Float64 throughout; the scalars dt, sigma, rho, beta travel in a float64 tensor
(Triton types Python floats as float32). The GPU may contract a*b+c into FMAs, so results agree with the numpy
reference to rounding (and drift apart at the Lyapunov rate, about 0.9 per time unit, like any two
implementations of a chaotic flow).

**Counter-based pool draw** (:func:`pool_draw`): ``out[i] = pool[((mix64((c0 + i) * G + key) >> 32) * P) >> 32]``
with splitmix64's output function, the integer arithmetic of ``csrc/diffusion/lorenz.h`` and
``reference.pool_index_reference`` (bit-identical draws). The 64-bit constants and the key travel as int64
bit patterns in a tensor and are bitcast to uint64 in the kernel.

Import lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` at import.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def _lorenz_field(x, y, z, sigma, rho, beta):
    """The Lorenz-63 vector field (sigma (y - x), x (rho - z) - y, x y - beta z)."""
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


@triton.jit
def _rk4_kernel(state_ptr, obs_ptr, par_ptr, D, N_REC, REC_EVERY, RECORD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < D
    dt = tl.load(par_ptr + 0)
    sigma = tl.load(par_ptr + 1)
    rho = tl.load(par_ptr + 2)
    beta = tl.load(par_ptr + 3)
    h2 = 0.5 * dt
    h6 = dt / 6.0
    x = tl.load(state_ptr + offs, mask=ok, other=0.0)
    y = tl.load(state_ptr + D + offs, mask=ok, other=0.0)
    z = tl.load(state_ptr + 2 * D + offs, mask=ok, other=0.0)
    optr = obs_ptr + offs  # advanced by one row (D values) per record: 64-bit pointer arithmetic
    # The RK4 step below repeats diffusion/reference.py's lorenz_rk4_reference line for line, on purpose: a
    # @triton.jit kernel can call only @triton.jit functions, the reference (the oracle) must import without
    # Triton, and the same arithmetic order is what keeps the backends within rounding of each other.
    for _r in range(N_REC):
        for _s in range(REC_EVERY):
            ax, ay, az = _lorenz_field(x, y, z, sigma, rho, beta)
            bx, by, bz = _lorenz_field(x + h2 * ax, y + h2 * ay, z + h2 * az, sigma, rho, beta)
            cx, cy, cz = _lorenz_field(x + h2 * bx, y + h2 * by, z + h2 * bz, sigma, rho, beta)
            ex, ey, ez = _lorenz_field(x + dt * cx, y + dt * cy, z + dt * cz, sigma, rho, beta)
            x = x + h6 * (ax + 2.0 * bx + 2.0 * cx + ex)
            y = y + h6 * (ay + 2.0 * by + 2.0 * cy + ey)
            z = z + h6 * (az + 2.0 * bz + 2.0 * cz + ez)
        if RECORD:
            tl.store(optr, x, mask=ok)
            optr += D
    tl.store(state_ptr + offs, x, mask=ok)
    tl.store(state_ptr + D + offs, y, mask=ok)
    tl.store(state_ptr + 2 * D + offs, z, mask=ok)


@triton.jit
def _pool_draw_kernel(pool_ptr, out_ptr, par_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < N
    golden = tl.load(par_ptr + 0).to(tl.uint64, bitcast=True)
    m1 = tl.load(par_ptr + 1).to(tl.uint64, bitcast=True)
    m2 = tl.load(par_ptr + 2).to(tl.uint64, bitcast=True)
    key = tl.load(par_ptr + 3).to(tl.uint64, bitcast=True)
    c0 = tl.load(par_ptr + 4).to(tl.uint64, bitcast=True)
    p = tl.load(par_ptr + 5).to(tl.uint64, bitcast=True)
    c = offs.to(tl.uint64) + c0
    h = c * golden + key
    h = (h ^ (h >> 30)) * m1
    h = (h ^ (h >> 27)) * m2
    h = h ^ (h >> 31)
    idx = ((h >> 32) * p) >> 32
    v = tl.load(pool_ptr + idx.to(tl.int64), mask=ok, other=0.0)
    tl.store(out_ptr + offs, v, mask=ok)


def lorenz_rk4(state: torch.Tensor, n_steps: int, dt: float, sigma: float, rho: float, beta: float,
               record_every: int, block: int = 128):
    """Advance ``state`` (3, d) float64 in place by ``n_steps`` RK4 steps; x records (n_steps // record_every, d)
    or None. Arguments are checked by the caller."""
    d = state.shape[1]
    record = record_every > 0
    n_rec = n_steps // record_every if record else (1 if n_steps > 0 else 0)
    rec_every = record_every if record else n_steps
    obs = torch.empty((n_rec if record else 0, d), dtype=torch.float64, device=state.device)
    par = torch.tensor([dt, sigma, rho, beta], dtype=torch.float64, device=state.device)
    if d and n_rec:
        grid = (triton.cdiv(d, block),)
        _rk4_kernel[grid](state, obs if record else state, par, d, n_rec, rec_every, RECORD=record, BLOCK=block)
    return obs if record else None


_CONST = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def _as_int64_bits(values) -> torch.Tensor:
    return torch.from_numpy(np.array([v & (2**64 - 1) for v in values], dtype=np.uint64).view(np.int64))


def pool_draw(pool: torch.Tensor, key: int, counter0: int, n: int, block: int = 1024) -> torch.Tensor:
    """n values ``pool[hash(counter0 + i, key)]`` (1-D, pool's dtype and device)."""
    out = torch.empty(n, dtype=pool.dtype, device=pool.device)
    par = _as_int64_bits([*_CONST, key, counter0, pool.shape[0]]).to(pool.device)
    if n:
        _pool_draw_kernel[(triton.cdiv(n, block),)](pool, out, par, n, BLOCK=block)
    return out
