r"""Readable numpy references of the diffusion package's hot ops: the oracles in tests and the ``reference`` backend.

* :func:`lorenz_rk4_reference` -- classical RK4 for d independent Lorenz-63 copies,

  .. math:: \dot x = \sigma (y - x), \quad \dot y = x(\rho - z) - y, \quad \dot z = x y - \beta z,

  vectorised over copies, a Python loop over steps. The state is structure-of-arrays, shape (3, d). The
  arithmetic order is the one of ``csrc/diffusion/lorenz.cpp``, so the two agree bit for bit on builds
  without floating-point contraction (tests assert a tolerance, not equality).
* :func:`pool_index_reference` / :func:`pool_draw_reference` -- the counter-based i.i.d. draw from a pool used by
  ``Lorenz(shuffle="time")``: stream position c reads ``pool[((mix64(c * G + key) >> 32) * P) >> 32]`` with
  ``mix64`` the output function of splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
  generators", OOPSLA 2014) and G = 0x9E3779B97F4A7C15. Exactly the integer arithmetic of the native kernels.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lorenz_rhs", "lorenz_rk4_reference", "mix64", "pool_draw_reference", "pool_index_reference"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def lorenz_rhs(x, y, z, sigma: float, rho: float, beta: float):
    r"""The Lorenz-63 vector field :math:`(\sigma(y-x),\ x(\rho-z)-y,\ xy-\beta z)`, elementwise."""
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def lorenz_rk4_reference(state: np.ndarray, n_steps: int, dt: float, *, sigma: float = 10.0, rho: float = 28.0,
                         beta: float = 8.0 / 3.0, record_every: int = 0):
    r"""RK4 for d Lorenz-63 copies: :math:`s_{k+1} = s_k + \tfrac{h}{6}(k_1 + 2k_2 + 2k_3 + k_4)`.

    Parameters
    ----------
    state : ndarray, shape (3, d), float64
        Rows x, y, z. Not modified.
    n_steps : int
        RK4 steps of size ``dt``.
    record_every : int
        > 0: record x after every ``record_every`` steps (``n_steps`` must be a multiple); 0: no records.

    Returns
    -------
    (ndarray (3, d), ndarray (n_steps // record_every, d) or None)
        The final state and the x records.
    """
    x, y, z = (np.array(r, dtype=np.float64) for r in np.asarray(state, dtype=np.float64))
    h2, h6 = 0.5 * dt, dt / 6.0
    rows = []
    for step in range(1, n_steps + 1):
        ax, ay, az = lorenz_rhs(x, y, z, sigma, rho, beta)
        bx, by, bz = lorenz_rhs(x + h2 * ax, y + h2 * ay, z + h2 * az, sigma, rho, beta)
        cx, cy, cz = lorenz_rhs(x + h2 * bx, y + h2 * by, z + h2 * bz, sigma, rho, beta)
        ex, ey, ez = lorenz_rhs(x + dt * cx, y + dt * cy, z + dt * cz, sigma, rho, beta)
        x = x + h6 * (ax + 2.0 * bx + 2.0 * cx + ex)
        y = y + h6 * (ay + 2.0 * by + 2.0 * cy + ey)
        z = z + h6 * (az + 2.0 * bz + 2.0 * cz + ez)
        if record_every and step % record_every == 0:
            rows.append(x.copy())
    obs = None
    if record_every:
        obs = np.stack(rows) if rows else np.empty((0, x.shape[0]))
    return np.stack([x, y, z]), obs


def mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function on uint64 (wrapping arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def pool_index_reference(counter0: int, n: int, key: int, pool_size: int) -> np.ndarray:
    """Pool indices of stream positions ``counter0 .. counter0 + n - 1`` (uint64, in ``[0, pool_size)``)."""
    c = np.uint64(counter0) + np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = mix64(c * _GOLDEN + np.uint64(key))
        return ((h >> np.uint64(32)) * np.uint64(pool_size)) >> np.uint64(32)


def pool_draw_reference(pool: np.ndarray, key: int, counter0: int, n: int) -> np.ndarray:
    """``pool[pool_index(counter0 + i)]`` for i < n: n i.i.d. draws from the pool's empirical law."""
    pool = np.asarray(pool)
    return pool[pool_index_reference(counter0, n, key, pool.shape[0]).astype(np.int64)]
