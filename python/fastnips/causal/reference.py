r"""Readable pure-Python reference (oracle) for half-trek and edgewise identification.

The ground truth the native core (``fastnips._C``) is tested against, and the ``backend="reference"``
fallback of :mod:`fastnips.causal.htc`; clarity over speed.  Every entry point takes the graph as raw edge
arrays (``n``, ``directed`` (k, 2), ``bidirected`` (m, 2)), exactly like the native functions, and returns
the same plain dict.

Definitions (Foygel, Draisma & Drton 2012, "Half-trek criterion for generic identifiability of linear
structural equation models", Ann. Statist. 40(3), "FDD").  For a mixed graph :math:`G = (V, D, B)`, a
*half-trek* from :math:`y` to :math:`w` is a directed path :math:`y \to \cdots \to w` or a path
:math:`y \leftrightarrow u \to \cdots \to w`; its left side is :math:`\{y\}`, its right side the rest.
:math:`Y` *satisfies the HTC for* :math:`v` if :math:`|Y| = |\mathrm{pa}(v)|`,
:math:`Y \cap (\{v\} \cup \mathrm{sib}(v)) = \emptyset` and a system of half-treks without sided
intersection (distinct starts, vertex-disjoint right sides) goes from :math:`Y` to :math:`\mathrm{pa}(v)`.

Two tests decide it, one module each, over shared graph code (the same seams as the native core):

``method="maxflow"`` (:mod:`._ref_maxflow`)
    Menger: the max-flow on FDD's vertex-split half-trek network is :math:`|\mathrm{pa}(v)|`.
``method="randomized"`` (:mod:`._ref_modp`, :mod:`._ref_rank`)
    With random :math:`\Lambda, \Omega` over :math:`\mathbb{F}_p`, :math:`M = \Omega (I-\Lambda)^{-1}` has
    :math:`M_{yw} = \sum_{\text{half-treks } y \rightsquigarrow w}` (monomials), and by FDD Lemma 2 the generic
    rank of :math:`M[A, P]` is the size of the largest half-trek system from :math:`A` into :math:`P`; so
    :math:`v` is solvable iff :math:`\operatorname{rank}_{\mathbb{F}_p} M[A_v, \mathrm{pa}(v)] =
    |\mathrm{pa}(v)|`.  One-sided error: full rank mod :math:`p` certifies a nonzero minor (never a false
    "solved"); a false "unsolved" needs a nonzero polynomial of degree :math:`\le n^2` to vanish at a uniform
    random point, probability :math:`\le n^2/(p-1)` (Schwartz-Zippel), so a run errs with probability at
    most :math:`n^3/(p-1)` (one critical minor per node), about :math:`4 \cdot 10^{-10}` for
    :math:`n = 1000` and :math:`p = 2^{61}-1`.

Modules: :mod:`._ref_mixed_graph` (adjacency lists, half-trek / trek reachability, strongly connected
components), :mod:`._ref_modp` (:math:`\mathbb{F}_p` arithmetic, the random point), :mod:`._ref_rank`
(ranks over :math:`\mathbb{F}_p`), :mod:`._ref_maxflow` (half-trek systems, FDD's non-identifiability
certificate), :mod:`._ref_fixpoint` (the HTC fixpoint, Tian decomposition), :mod:`._ref_edgewise`
(Weihs et al. 2018).

Output contract (shared with :mod:`fastnips._C`): :func:`htc_identify` returns ``{"solved", "order",
"sources", "rounds", "tests"}`` (+ ``"component"`` when ``tian``) and :func:`edgewise_identify` returns
``{"edge_solved", "node_solved", "steps", "rounds", "tests"}``; the keys are documented on each function
and in :mod:`fastnips.causal.htc`.

Examples
--------
>>> from fastnips.causal import reference
>>> reference.htc_identify(3, [(0, 1), (1, 2)], [(1, 2)])["solved"].tolist()
[True, True, True]
"""

from __future__ import annotations

from ._ref_edgewise import edgewise_identify, edgewise_identify_enumerate
from ._ref_fixpoint import component_graph, htc_identify, htc_identify_many, tian_decompose
from ._ref_maxflow import half_trek_system, htc_nonidentifiable
from ._ref_mixed_graph import _G, htr_from, tr_from  # noqa: F401  (_G: the graph every function here takes)
from ._ref_modp import DEFAULT_PRIME

__all__ = [
    "DEFAULT_PRIME",
    "component_graph",
    "edgewise_identify",
    "edgewise_identify_enumerate",
    "half_trek_system",
    "htc_identify",
    "htc_identify_many",
    "htc_nonidentifiable",
    "htr_from",
    "tian_decompose",
    "tr_from",
]
