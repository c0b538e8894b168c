from __future__ import annotations

import subprocess
import sys


def test_import_is_light():
    """`import fastnips` must not pull in torch, triton, scipy's sparse code or the compiled core."""
    code = ("import sys, fastnips; heavy = [m for m in ('torch', 'triton', 'cupy', 'fastnips._C', "
            "'fastnips.ops', 'scipy.sparse') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_subpackage_attribute():
    import fastnips

    assert fastnips.ops.spmm is not None
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = fastnips.nope
