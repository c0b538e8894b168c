"""Causal identification in linear structural equation models (paper 8 of the table in README.md).

* :class:`MixedGraph` -- the graph of a linear SEM (directed + bidirected edges), with adjacency-matrix,
  networkx and file constructors;
* :func:`htc_identify` -- half-trek criterion (Foygel, Draisma & Drton 2012), plain or per Tian
  c-component (Tian 2005), randomized rank test or exact max-flow;
* :func:`edgewise_identify` -- edgewise identification (Weihs et al. 2018) in polynomial time;
* :func:`htc_nonidentifiable` -- FDD's certificate of generic non-identifiability;
* :func:`htc_identify_many` -- batch entry point.

:mod:`fastnips.causal.reference` holds the readable pure-Python oracle.
"""

from .graph import MixedGraph
from .htc import (
    IdentificationResult,
    edgewise_identify,
    htc_identify,
    htc_identify_many,
    htc_nonidentifiable,
)

__all__ = [
    "IdentificationResult",
    "MixedGraph",
    "edgewise_identify",
    "htc_identify",
    "htc_identify_many",
    "htc_nonidentifiable",
]
