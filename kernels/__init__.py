"""Triton kernels of fastnips, one module per field (installed as ``fastnips.kernels``).

Import these modules lazily: ``@triton.jit`` reads ``TRITON_INTERPRET`` when it decorates, i.e. at
import. The public functions in ``fastnips.*`` do that for you; call those, not the kernels.
"""
