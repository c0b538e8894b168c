"""The contextual predicate BC (fastnips.scenegraph.predicate_bc): the Triton kernel (forward and backward) against
the torch reference, under TRITON_INTERPRET=1 on CPU at small sizes (and on a GPU when one is present); the
dispatch rules. Tolerance: float32 kernels vs the float64 reference, 2e-6 absolute (values are in [0, 1])."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.scenegraph import hellinger_triplet_loss, predicate_bc  # noqa: E402
from fastnips.scenegraph.contextual import predicate_bc_reference  # noqa: E402

DEV = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _zq(seed, E=5, C=3, R=7, multilabel=False, per_edge=True, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    z = scale * torch.randn(E, C, C, R, generator=g, dtype=torch.float64)
    qs = (E, R) if per_edge else (E, C, C, R)
    q = torch.rand(*qs, generator=g, dtype=torch.float64) if multilabel else \
        torch.softmax(2 * torch.randn(*qs, generator=g, dtype=torch.float64), -1)
    if not multilabel and R > 1:
        q[..., 0] = 0.0
        q = q / q.sum(-1, keepdim=True)  # a zero target entry
    return z, q


@pytest.mark.parametrize("multilabel", [False, True])
@pytest.mark.parametrize("per_edge", [True, False])
@pytest.mark.parametrize("shape", [(5, 3, 7), (2, 4, 16), (3, 2, 1)])
def test_triton_matches_reference(backend, multilabel, per_edge, shape):
    E, C, R = shape
    z, q = _zq(E * C + R, E, C, R, multilabel, per_edge)
    gup = torch.randn(E, C, C, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    zr = z.clone().requires_grad_(True)
    want = predicate_bc_reference(zr, q, multilabel=multilabel)
    (want * gup).sum().backward()
    z32 = z.float().to(DEV).requires_grad_(True)
    got = predicate_bc(z32, q.float().to(DEV), multilabel=multilabel, backend=backend)
    (got * gup.float().to(DEV)).sum().backward()
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double().cpu(), want.detach(), rtol=0, atol=2e-6)
    torch.testing.assert_close(z32.grad.double().cpu(), zr.grad, rtol=0, atol=2e-6)


def test_loss_through_the_kernel_equals_the_reference(backend):
    g = torch.Generator().manual_seed(3)
    N, E, C, R = 6, 8, 4, 5
    zn = torch.randn(N, C, generator=g)
    ze = torch.randn(E, C, C, R, generator=g)
    ei = torch.randint(0, N, (2, E), generator=g)
    y, ye = torch.randint(0, C, (N,), generator=g), torch.randint(0, R, (E,), generator=g)
    out = {}
    for b in ("reference", backend):
        a, e = zn.clone().to(DEV).requires_grad_(True), ze.clone().to(DEV).requires_grad_(True)
        v = hellinger_triplet_loss(a, e, ei.to(DEV), (y.to(DEV), ye.to(DEV)), contextual=True, backend=b)
        v.backward()
        out[b] = (v.detach().cpu(), a.grad.cpu(), e.grad.cpu())
    for x, y_ in zip(out["reference"], out[backend]):
        torch.testing.assert_close(x, y_, rtol=0, atol=2e-6)


def test_dispatch_rules(monkeypatch):
    z, q = _zq(0)
    if not z.is_cuda and _backend.why_unavailable("triton") == "":
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
        with pytest.raises(ValueError, match="CUDA tensors"):
            predicate_bc(z.float(), q.float(), backend="triton")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        with pytest.raises(ValueError, match="float16, bfloat16 or float32"):
            predicate_bc(z, q, backend="triton")
        with pytest.raises(ValueError, match="'mean' mode"):
            predicate_bc(z.float(), q.float().clamp(0, 1), multilabel=True, mode="joint", backend="triton")
    # auto on CPU tensors is the reference (Triton runs on CPU only when asked for, interpreted)
    torch.testing.assert_close(predicate_bc(z, q), predicate_bc_reference(z, q))
    with pytest.raises(ValueError, match="has no 'cpp' backend"):
        predicate_bc(z, q, backend="cpp")
