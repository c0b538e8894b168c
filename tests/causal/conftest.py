"""Fixtures for tests/causal."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["reference", "cpp"])
def htc_backend(request):
    """'reference' and 'cpp'; cpp skips with the reason when fastnips._C lacks the HTC functions."""
    if request.param == "cpp":
        try:
            from fastnips import _C
        except ImportError as e:
            pytest.skip(f"fastnips._C is not importable ({e})")
        if not hasattr(_C, "htc_identify"):
            pytest.skip("fastnips._C has no htc_identify (the native HTC core is not built)")
    return request.param
