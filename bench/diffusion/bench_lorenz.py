"""The Lorenz driver of the Fast-Driver Sampler: native RK4 vs its numpy reference, and the cost of one draw.

Groups:

* ``lorenz rk4 (196608 copies x 100 steps)``: 196,608 = 64 x 3 x 32 x 32 independent Lorenz-63 copies advanced
  100 RK4 steps of dt = 0.005 (one reading at tau = 0.5), x recorded at the end. Rows: ``fastnips-cpp``
  (csrc/diffusion/lorenz.cpp), ``numpy-reference`` (fastnips.diffusion.reference, vectorised over copies),
  ``fastnips-triton`` (CUDA only). Checked: every row equals the numpy result within 1e-9.
* ``lorenz draw (64x3x32x32)``: one ``draw()`` of a 64 x 3 x 32 x 32 batch. Rows: ``time-cpp`` (the default
  ``Lorenz(shuffle="time")``: counter-hash gather from the 2^20-value pool), ``time-numpy-reference`` (the same
  gather in numpy, on the same pool), ``gaussian-torch-randn`` (the Gaussian driver = EDM's ``torch.randn``),
  ``none-cpp`` and ``space-cpp`` (the trajectory readings: 100 RK4 steps of 196,608 copies per draw, plus a
  ``randperm`` for space). Checked: the cpp and numpy gathers are equal bit for bit; values within ``bound``.

Timings: ``OMP_NUM_THREADS=1 pytest bench/diffusion/bench_lorenz.py --benchmark-only`` (and 2); smoke:
``pytest bench/diffusion/bench_lorenz.py --benchmark-disable``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.diffusion import reference as ref  # noqa: E402
from fastnips.diffusion.drivers import Gaussian, Lorenz, lorenz_rk4  # noqa: E402
from fastnips.diffusion.lorenz import _initial_states  # noqa: E402

SHAPE = (64, 3, 32, 32)
D = int(np.prod(SHAPE))
STEPS, DT = 100, 0.005


@functools.lru_cache(maxsize=1)
def start():
    return _initial_states(D, 0, 0)


@functools.lru_cache(maxsize=1)
def reference_result():
    return ref.lorenz_rk4_reference(start(), STEPS, DT, record_every=STEPS)


def _need(backend):
    if not _backend.backend_available(backend):
        pytest.skip(_backend.why_unavailable(backend))


@pytest.mark.parametrize("impl", ["fastnips-cpp", "numpy-reference", "fastnips-triton"])
def test_lorenz_rk4(machine_facts, impl):
    benchmark = machine_facts
    benchmark.group = f"lorenz rk4 ({D} copies x {STEPS} steps)"
    benchmark.extra_info.update(copies=D, steps=STEPS, dt=DT)
    s0 = start()
    if impl == "fastnips-cpp":
        _need("cpp")
        run = lambda: lorenz_rk4(s0, STEPS, DT, record_every=STEPS, backend="cpp")
    elif impl == "fastnips-triton":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device for the triton backend")
        _need("triton")
        sd = torch.from_numpy(s0).cuda()

        def run():
            s, obs = lorenz_rk4(sd, STEPS, DT, record_every=STEPS, backend="triton")
            torch.cuda.synchronize()
            return s.cpu().numpy(), obs.cpu().numpy()
    else:
        run = lambda: ref.lorenz_rk4_reference(s0, STEPS, DT, record_every=STEPS)
    s, obs = benchmark(run)
    s_ref, obs_ref = reference_result()
    np.testing.assert_allclose(s, s_ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(obs, obs_ref, rtol=0, atol=1e-9)


@functools.lru_cache(maxsize=1)
def time_driver():
    return Lorenz(SHAPE, shuffle="time", backend="cpp")


DRAW_IMPLS = ["time-cpp", "time-numpy-reference", "gaussian-torch-randn", "none-cpp", "space-cpp"]


@pytest.mark.parametrize("impl", DRAW_IMPLS)
def test_lorenz_draw(machine_facts, impl):
    benchmark = machine_facts
    benchmark.group = "lorenz draw (64x3x32x32)"
    benchmark.extra_info.update(values=D)
    if impl.endswith("cpp"):
        _need("cpp")
    if impl.startswith("time"):
        drv = time_driver()
        counter = iter(range(10**9))
        if impl == "time-cpp":
            run = lambda: drv.draw()
        else:  # the same gather in numpy, on the same pool, continuing the same stream positions
            run = lambda: torch.from_numpy(ref.pool_draw_reference(drv._pool32, drv._key, next(counter) * D, D))
        x = benchmark(run)
        k = drv._count - 1 if impl == "time-cpp" else next(counter) - 1
        want = ref.pool_draw_reference(drv._pool32, drv._key, k * D, D)
        np.testing.assert_array_equal(x.reshape(-1).numpy(), want)
        assert float(x.abs().max()) <= drv.bound
        return
    if impl == "gaussian-torch-randn":
        drv = Gaussian(SHAPE)
    else:
        drv = Lorenz(SHAPE, shuffle=impl.split("-")[0], backend="cpp")
    x = benchmark(drv.draw)
    assert x.shape == (1, *SHAPE)
    assert float(x.abs().max()) <= drv.bound
