r"""The font-Jaccard baseline of sibling matching, retrieval and clustering.

Two layouts of one template usually keep its typefaces while content, palette and imagery change, so the Jaccard
similarity of their font-family sets

.. math::

    J(A, B) = \frac{|F_A \cap F_B|}{|F_A \cup F_B|}

is a strong template signal; the GDB abstract reports that this baseline matches or exceeds frontier VLMs on
sibling matching and clustering. Its exact rules are not published; the choices here:

* :math:`F` is the set of :func:`~fastnips.designbench.normalize_font` names of the text layers (weights of a
  family merged); :math:`J = 0` when both sets are empty (no shared font is no evidence of a shared template);
* matching: "same template" iff :math:`J \ge` ``threshold`` (default 0.5), :math:`J` the score for AUC / AP;
* retrieval: candidates by decreasing :math:`J`, ties in input order;
* clustering: average-linkage agglomerative clustering of :math:`1 - J` cut at the given number of templates
  (the GDB prompt states it), scipy's ``linkage`` / ``fcluster``.

The pairwise matrix is one product of binary incidence matrices: :math:`|F_A \cap F_B| = (M M^\top)_{AB}`,
:math:`|F_A \cup F_B| = |F_A| + |F_B| - |F_A \cap F_B|`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from ._checks import check_k, check_unit
from .layout import Layout, normalize_font

__all__ = ["FontJaccardBaseline", "font_jaccard", "font_jaccard_matrix"]


def _fontset(x: object) -> frozenset:
    if isinstance(x, Layout):
        return x.font_set()
    if isinstance(x, str):
        raise ValueError(f"expected a Layout or a collection of font names, got the string {x!r}")
    if isinstance(x, Iterable):
        return frozenset(normalize_font(f) for f in x if f)
    raise ValueError(f"expected a Layout or a collection of font names, got {type(x).__name__}")


def font_jaccard(a: object, b: object) -> float:
    """Jaccard similarity of the font-family sets of two layouts (module docstring).

    Parameters
    ----------
    a, b : Layout or iterable of str
        Layouts, or their font names.

    Returns
    -------
    float
        In [0, 1]; 0 when both have no font.

    Examples
    --------
    >>> font_jaccard(["Cinzel--400", "Arimo--700"], ["arimo--400", "Rufina"])
    0.3333333333333333
    """
    A, B = _fontset(a), _fontset(b)
    u = len(A | B)
    return len(A & B) / u if u else 0.0


def font_jaccard_matrix(layouts: Sequence, others: Sequence | None = None) -> np.ndarray:
    """All pairwise font-Jaccard similarities, vectorised (module docstring).

    Parameters
    ----------
    layouts : sequence of Layout or iterable of str, length n
    others : sequence, length m, optional
        Default ``layouts`` itself.

    Returns
    -------
    numpy.ndarray, shape (n, m)

    Examples
    --------
    >>> font_jaccard_matrix([["a"], ["a", "b"], []]).tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    A = [_fontset(x) for x in layouts]
    B = A if others is None else [_fontset(x) for x in others]
    vocab = {f: i for i, f in enumerate(sorted(set().union(*A, *B)))}

    def incidence(sets: list) -> np.ndarray:
        M = np.zeros((len(sets), max(len(vocab), 1)))
        for r, s in enumerate(sets):
            M[r, [vocab[f] for f in s]] = 1.0
        return M

    Ma = incidence(A)
    Mb = Ma if others is None else incidence(B)
    inter = Ma @ Mb.T
    union = Ma.sum(1)[:, None] + Mb.sum(1)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


class FontJaccardBaseline:
    """Sibling matching, retrieval and clustering of layouts by the Jaccard similarity of their fonts.

    Parameters
    ----------
    threshold : float in [0, 1], default 0.5
        Matching answers "same template" when the similarity reaches it.

    Examples
    --------
    >>> fj = FontJaccardBaseline()
    >>> fj.match([["Cinzel", "Arimo"]], [["Arimo", "Cinzel--700"]])
    ([1], [1.0])
    >>> fj.cluster([["a"], ["a", "b"], ["c"], ["c", "d"]], n_clusters=2).tolist()
    [0, 0, 1, 1]
    """

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = check_unit(threshold, "threshold")

    def match(self, a: Sequence, b: Sequence) -> tuple[list[int], list[float]]:
        """Per pair ``(a[i], b[i])``: the label (1 = same template) and the similarity as its score."""
        if len(a) != len(b):
            raise ValueError(f"a and b must list the same number of layouts, got {len(a)} and {len(b)}")
        s = [font_jaccard(x, y) for x, y in zip(a, b)]
        return [int(v >= self.threshold) for v in s], s

    def rank(self, reference: object, candidates: Sequence, ids: Sequence | None = None) -> list:
        """Candidate ids (default their positions) by decreasing similarity to ``reference``."""
        if ids is not None and len(ids) != len(candidates):
            raise ValueError(f"ids must name every candidate ({len(candidates)}), got {len(ids)}")
        if not candidates:
            return []
        s = font_jaccard_matrix([reference], candidates)[0]
        order = np.argsort(-s, kind="stable")
        names = list(range(len(candidates))) if ids is None else list(ids)
        return [names[i] for i in order]

    def cluster(self, layouts: Sequence, n_clusters: int) -> np.ndarray:
        """Cluster labels 0..k-1 (in order of first appearance): average linkage on 1 - J, cut at ``n_clusters``."""
        k = check_k(n_clusters, "n_clusters")
        n = len(layouts)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if n == 1 or k == 1:
            return np.zeros(n, dtype=np.int64)
        D = 1.0 - font_jaccard_matrix(layouts)
        np.fill_diagonal(D, 0.0)
        raw = fcluster(linkage(squareform(D, checks=False), method="average"), t=min(k, n), criterion="maxclust")
        _, first, inv = np.unique(raw, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first))
        return rank[inv].astype(np.int64)
