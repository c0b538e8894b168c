"""Speed of the triplet Hellinger distance: the factorised form (ours) vs the explicit joint (brute force), and the
contextual form (einsum + the fused predicate sum) vs its explicit joint; results checked equal in every run.

    OMP_NUM_THREADS=1 python -m pytest bench/scenegraph --benchmark-only

C = 20 classes, R = 8 predicates (the sizes of the notes' check), float64 on CPU. The Triton row of the
contextual form runs on a GPU only (skipped elsewhere).
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.scenegraph import predicate_bc, triplet_hellinger  # noqa: E402
from fastnips.scenegraph import reference as ref  # noqa: E402

C, R = 20, 8


@functools.lru_cache(maxsize=4)
def problem(E: int, contextual: bool):
    g = torch.Generator().manual_seed(0)
    N = max(2, E // 4)
    sm = lambda *s: torch.softmax(2 * torch.randn(*s, generator=g, dtype=torch.float64), -1)
    ei = torch.randint(0, N, (2, E), generator=g)
    pe = sm(E, C, C, R) if contextual else sm(E, R)
    return sm(N, C), pe, sm(N, C), sm(E, R), ei


@pytest.mark.parametrize("impl", ["factorised", "bruteforce-joint"])
@pytest.mark.parametrize("E", [1_000, 10_000])
def test_triplet_hellinger(benchmark, E, impl):
    benchmark.group = f"triplet H^2, C={C} R={R} E={E}"
    P, pe, Q, qe, ei = problem(E, False)
    if impl == "factorised":
        run = lambda: triplet_hellinger(P, pe, Q, qe, ei, squared=True)
    else:
        run = lambda: 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei)
    got = benchmark(run)
    torch.testing.assert_close(got, 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei), rtol=0, atol=1e-12)


@pytest.mark.parametrize("impl", ["contextual", "bruteforce-joint", "predicate-bc-triton"])
def test_contextual(benchmark, impl):
    E = 500
    benchmark.group = f"contextual triplet H^2, C={C} R={R} E={E}"
    P, pe, Q, qe, ei = problem(E, True)
    want = 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei)
    if impl == "predicate-bc-triton":
        if not torch.cuda.is_available() or _backend.why_unavailable("triton"):
            pytest.skip("the triton row needs a CUDA device")
        z = torch.log(pe).float().cuda()
        q = qe.float().cuda()
        out = benchmark(lambda: (predicate_bc(z, q, backend="triton"), torch.cuda.synchronize())[0])
        torch.testing.assert_close(out.double().cpu(), predicate_bc(torch.log(pe), qe, backend="reference"),
                                   rtol=0, atol=1e-5)
        return
    if impl == "contextual":
        run = lambda: triplet_hellinger(P, pe, Q, qe, ei, contextual=True, squared=True)
    else:
        run = lambda: 1 - ref.triplet_bc_bruteforce(P, pe, Q, qe, ei)
    torch.testing.assert_close(benchmark(run), want, rtol=0, atol=1e-12)
