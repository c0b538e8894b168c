from __future__ import annotations

import subprocess
import sys

import pytest

# module -> the heavy modules importing it must not pull in
LIGHT = {
    # `import fastnips` must not pull in torch, triton, scipy's sparse code or the compiled core
    "fastnips": ("torch", "triton", "cupy", "fastnips._C", "fastnips.ops", "scipy.sparse"),
    # the offline graph datasets need numpy only (scikit-learn on first use of digits_grid_graphs)
    "fastnips.data.graphs": ("torch", "networkx", "sklearn", "scipy"),
}


@pytest.mark.parametrize("module", list(LIGHT))
def test_import_is_light(module):
    code = f"import sys, {module}; print([m for m in {LIGHT[module]!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_subpackage_attribute():
    import fastnips

    assert fastnips.ops.spmm is not None

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = fastnips.nope
