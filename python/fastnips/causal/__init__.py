"""Causal identification in linear structural equation models (paper 8 of the table in README.md).

* :class:`MixedGraph` -- the graph of a linear SEM (directed + bidirected edges), with adjacency-matrix,
  networkx and file constructors;
* :func:`htc_identify` -- half-trek criterion (Foygel, Draisma & Drton 2012), plain or per Tian
  c-component (Tian 2005), randomized rank test or exact max-flow;
* :func:`edgewise_identify` -- edgewise identification (Weihs et al. 2018) in polynomial time;
* :func:`htc_nonidentifiable` -- FDD's certificate of generic non-identifiability;
* :func:`htc_identify_many` -- batch entry point;
* :func:`identify` -- SEMID's ``generalGenericID`` over the steps htc / edgewise / trek separation /
  ancestral; :func:`trek_separation_identify` (``edgewiseTSID``), :func:`ancestral_identify`
  (``ancestralID``), :func:`global_identifiable` (``globalID``), :func:`lfhtc_identify` (``lfhtcID``, latent
  factors); :func:`plot`.

:mod:`fastnips.causal.reference` holds the readable pure-Python oracle.
"""

from .criteria import (
    ancestral_identify,
    global_identifiable,
    identify,
    lfhtc_identify,
    plot,
    trek_separation_identify,
)
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
    "ancestral_identify",
    "edgewise_identify",
    "global_identifiable",
    "htc_identify",
    "htc_identify_many",
    "htc_nonidentifiable",
    "identify",
    "lfhtc_identify",
    "plot",
    "trek_separation_identify",
]
