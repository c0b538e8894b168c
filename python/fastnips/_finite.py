"""One finiteness test for large tensors.

``torch.isfinite(x).all()`` materialises a boolean tensor and reduces it; on large CPU tensors in the torch
builds we ship against it is 10-30x slower than one min/max reduction (docs/architecture.md). NaN propagates
to both ends of ``torch.aminmax`` and an infinity shows at one end, so "both ends finite" is the same test.
"""

from __future__ import annotations

import math

import torch


def all_finite(x: torch.Tensor) -> bool:
    """True when ``x`` has no NaN and no infinity (always for integer and bool tensors and empty tensors).

    >>> all_finite(torch.tensor([1.0, 2.0])), all_finite(torch.tensor([1.0, float("nan")]))
    (True, False)
    """
    if not (x.is_floating_point() or x.is_complex()) or x.numel() == 0:
        return True
    if x.is_complex():
        return all_finite(torch.view_as_real(x.conj() if x.is_conj() else x))  # conj keeps finiteness
    lo, hi = torch.aminmax(x.detach())
    return math.isfinite(float(lo)) and math.isfinite(float(hi))
