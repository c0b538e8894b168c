"""fastnips._finite.all_finite against torch.isfinite(x).all() on every float dtype and special value."""

import pytest
import torch

from fastnips._finite import all_finite


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64])
def test_all_finite_equals_isfinite_all(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(37, 53, generator=g).to(dtype)
    assert all_finite(x) is True
    specials = [float("nan"), float("inf"), -float("inf")]
    for pos in [(0, 0), (36, 52), (17, 4)]:
        for v in specials:
            y = x.clone()
            y[pos] = v if not dtype.is_complex else complex(0.0, v)
            assert all_finite(y) is False
            assert all_finite(y) == bool(torch.isfinite(y).all())
            assert all_finite(y.T) is False  # non-contiguous views too
            if dtype.is_complex:
                assert all_finite(y.conj()) is False  # a conjugated view (view_as_real refuses those)
    if dtype.is_complex:
        assert all_finite(x.conj()) is True


def test_all_finite_trivial_cases():
    assert all_finite(torch.empty(0, 3))
    assert all_finite(torch.arange(5))
    assert all_finite(torch.ones(3, dtype=torch.bool))
    assert all_finite(torch.tensor(float("nan"), requires_grad=True)) is False
