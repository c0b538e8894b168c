r"""Drawing an explanation of the Tikhonov layer: graph layouts and :func:`plot_explanation`.

Left panel: the graph, nodes coloured by the importance :math:`q_i`; right panel: the filter
:math:`p(\lambda)` on [0, 2] with its reading and the response :math:`h(\lambda) = \bar q / (p(\lambda) +
\bar q)`. matplotlib (and networkx, for one layout) are imported only inside the functions that need
them.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _optional
from .checks import _to_numpy
from .explain import Explanation, _nonneg_int

__all__ = ["LAYOUTS", "plot_explanation", "spring_layout"]

#: Named graph layouts of :func:`plot_explanation` (a positions array is accepted as well).
LAYOUTS = ("spring", "kamada_kawai")


def spring_layout(edge_index: ArrayLike, num_nodes: int, *, seed: int = 0, iterations: int = 200) -> np.ndarray:
    r"""Fruchterman–Reingold force-directed layout in numpy, scaled to :math:`[-1, 1]^2`.

    Attraction :math:`d^2 / k` along edges, repulsion :math:`k^2 / d` between all pairs, with
    :math:`k = 1/\sqrt n` on the unit square, and a step bounded by a temperature that cools linearly
    from 0.1 to 0 (as networkx's ``spring_layout``). :math:`O(n^2)` per iteration: meant for graphs
    one draws, up to a few thousand nodes.

    Parameters
    ----------
    edge_index : array-like of int, shape (2, E)
    num_nodes : int
    seed : int, default 0
        Seed of the random initial positions; the same seed gives the same layout.
    iterations : int, default 200

    Returns
    -------
    ndarray, shape (num_nodes, 2)
    """
    n = _nonneg_int("num_nodes", num_nodes)
    iterations = _nonneg_int("iterations", iterations)
    ei = _check_edges(edge_index, n)
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    if n <= 1:
        return np.zeros((n, 2))
    und = ei[:, ei[0] < ei[1]] if ei.size else ei
    src, dst = und
    k = 1.0 / np.sqrt(n)
    t0 = 0.1
    for it in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta**2).sum(-1))
        np.fill_diagonal(dist, 1.0)
        dist = np.maximum(dist, 1e-3)
        disp = (delta * (k * k / dist**2)[..., None]).sum(axis=1)  # repulsion k^2/d along the unit vector
        if src.size:
            d = pos[src] - pos[dst]
            dl = np.maximum(np.sqrt((d**2).sum(-1)), 1e-3)
            f = d * (dl / k)[:, None]  # attraction d^2/k along the unit vector
            np.add.at(disp, src, -f)
            np.add.at(disp, dst, f)
        length = np.maximum(np.sqrt((disp**2).sum(-1)), 1e-9)
        t = t0 * (1.0 - it / max(iterations, 1))
        pos += disp * (np.minimum(length, t) / length)[:, None]
    pos -= pos.mean(axis=0)
    scale = np.abs(pos).max()
    return pos / scale if scale > 0 else pos


def _check_edges(edge_index, n: int) -> np.ndarray:
    ei = _to_numpy(edge_index)
    if ei.dtype.kind not in "iu":
        raise TypeError(f"edge_index must hold integers, got dtype {ei.dtype}")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    ei = ei.astype(np.int64, copy=False)
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        e = int(np.flatnonzero(((ei < 0) | (ei >= n)).any(axis=0))[0])
        raise ValueError(f"edge_index: edge {e} = ({ei[0, e]}, {ei[1, e]}) has a node id outside [0, n) = [0, {n}) "
                         "(the explained nodes, in local ids: use Explanation.edge_index for one graph of a batch)")
    return ei


def _layout(layout, ei: np.ndarray, n: int, seed) -> np.ndarray:
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS} or an array of positions of shape ({n}, 2), "
                             f"got {layout!r}")
        if layout == "kamada_kawai":
            nx = _optional._try_import("networkx")
            if nx is None:
                warnings.warn("plot_explanation: layout='kamada_kawai' needs networkx, which is not installed; "
                              "using the built-in spring layout instead", UserWarning, stacklevel=3)
            elif n > 1:
                G = nx.Graph()
                G.add_nodes_from(range(n))
                G.add_edges_from(map(tuple, ei.T.tolist()))
                init = spring_layout(ei, n, seed=seed)  # KK needs a start; a seeded one keeps it reproducible
                pos = nx.kamada_kawai_layout(G, pos={i: init[i] for i in range(n)})
                return np.array([pos[i] for i in range(n)], dtype=np.float64)
        return spring_layout(ei, n, seed=seed)
    pos = np.asarray(layout)
    if pos.dtype.kind not in "biuf":
        raise TypeError(f"layout positions must be real numbers, got dtype {pos.dtype}")
    if pos.shape != (n, 2):
        raise ValueError(f"layout positions must have shape (n, 2) = ({n}, 2), got {pos.shape}")
    if not np.all(np.isfinite(pos)):
        raise ValueError("layout positions contain NaN or inf")
    return pos.astype(np.float64)



_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}


def _no_display() -> bool:
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return False


def plot_explanation(explanation: Explanation, edge_index: ArrayLike | None = None, *,
                     path: str | os.PathLike | None = None, ax: Sequence[Any] | None = None,
                     layout: str | ArrayLike = "spring", seed: int = 0, motif_mask: ArrayLike | None = None,
                     cmap: str = "viridis", title: str | None = None):
    r"""Draw an explanation: the graph coloured by q, and the filter p on [0, 2] with its reading.

    Left panel: the graph (edges grey, nodes coloured by :math:`q_i` with a colorbar; a log colour scale
    when :math:`\max q / \min q > 100`), with a red ring around the ground-truth nodes of
    ``motif_mask``. Right panel: :math:`p(\lambda)` on [0, 2] (left axis), titled with its reading
    (:func:`filter_reading`); the response :math:`h(\lambda) = \bar q / (p(\lambda) + \bar q)` at the
    median q, dashed, on a twin axis in [0, 1]; and, when the explanation holds it, the spectrum of
    L as ticks along the bottom (p only matters there).

    matplotlib is an optional dependency (``pip install matplotlib`` or ``fastnips[plot]``), imported
    here on first use. When ``matplotlib.pyplot`` is not imported yet and there is no display (Linux
    without ``DISPLAY``/``WAYLAND_DISPLAY``), the non-interactive Agg backend is selected first.

    Parameters
    ----------
    explanation : Explanation
        From :meth:`fastnips.graph.TikhonovGNN.explain` or :func:`explain_tikhonov`.
    edge_index : array-like of int, shape (2, E), optional
        Edges in the explanation's local node ids ``0..n-1``; default ``explanation.edge_index`` (the
        graph the explanation was computed on; for ``graph=i``, that graph relabelled).
    path : str or os.PathLike, optional
        Save the figure there; the format follows the extension, ``.png`` (150 dpi), ``.pdf`` or
        ``.svg``.
    ax : sequence of two matplotlib Axes, optional
        (graph axes, curve axes) to draw into; default: a new figure of two panels.
    layout : {"spring", "kamada_kawai"} or array of shape (n, 2), default "spring"
        ``"spring"``: :func:`spring_layout` (numpy, Fruchterman–Reingold). ``"kamada_kawai"``:
        networkx's ``kamada_kawai_layout`` if networkx is installed, else the spring layout with a
        ``UserWarning``. An array gives the node positions.
    seed : int, default 0
        Seed of the layout.
    motif_mask : array-like of bool, shape (n,), optional
        Ground-truth important nodes to ring. For an explanation of one graph of a batch
        (``explanation.graph`` set), a mask over the whole batch is accepted too and restricted to
        ``explanation.nodes``.
    cmap : str, default "viridis"
        Colormap of q.
    title : str, optional
        Figure title, set only when the figure is created here (``ax`` not given); default: the reading
        and the median q.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says what to install).
    ValueError
        Edges outside the explanation's nodes, a layout or mask of the wrong shape, an unknown layout,
        a path with an extension other than .png/.pdf/.svg, ``ax`` not a pair of Axes.
    TypeError
        ``explanation`` not an :class:`Explanation`.
    """
    if not isinstance(explanation, Explanation):
        raise TypeError(f"explanation must be an Explanation (from explain_tikhonov or TikhonovGNN.explain), got "
                        f"{type(explanation).__name__}")
    fmt = _format_of(path)
    n = explanation.num_nodes
    ei = _check_edges(explanation.edge_index if edge_index is None else edge_index, n)
    mask = None if motif_mask is None else _motif_mask(motif_mask, explanation)
    pos = _layout(layout, ei, n, seed)

    mpl = _optional.require("matplotlib")
    if "matplotlib.pyplot" not in sys.modules and _no_display():
        mpl.use("Agg")
    import matplotlib.pyplot as plt

    if ax is None:
        fig, (ax_g, ax_p) = plt.subplots(1, 2, figsize=(11.0, 4.6), gridspec_kw={"width_ratios": [1.15, 1.0]})
    else:
        try:
            ax_g, ax_p = ax
        except (TypeError, ValueError):
            raise ValueError("ax must be a pair of matplotlib Axes (graph panel, curve panel)") from None
        fig = ax_g.figure
    _draw_graph(fig, ax_g, explanation, ei, pos, mask, cmap)
    _draw_filter(ax_p, explanation)
    if title is None:
        title = f"Tikhonov layer explanation: {explanation.reading} filter, median q = {explanation.q_median:.3g}"
    if ax is None:
        fig.suptitle(title, fontsize=11)
        fig.tight_layout()
    if path is not None:
        fig.savefig(path, format=fmt, dpi=150, bbox_inches="tight")
    return fig


def _format_of(path) -> str | None:
    """The figure format of a path's extension (None without a path)."""
    if path is None:
        return None
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in _FORMATS:
        raise ValueError(f"path must end in one of {sorted(_FORMATS)} (the format follows the extension), got "
                         f"{os.fspath(path)!r}")
    return _FORMATS[ext]


def _motif_mask(motif_mask, explanation: Explanation) -> np.ndarray:
    """A boolean mask over the explained nodes (a mask over the whole batch is restricted to them)."""
    n = explanation.num_nodes
    mask = _to_numpy(motif_mask)
    if mask.dtype.kind not in "biu":
        raise TypeError(f"motif_mask must hold booleans (or 0/1), got dtype {mask.dtype}")
    mask = mask.astype(bool)
    if explanation.graph is not None and mask.ndim == 1 and mask.shape[0] != n and \
            mask.shape[0] > int(explanation.nodes.max()):
        mask = mask[explanation.nodes]  # a mask over the whole batch
    if mask.shape != (n,):
        raise ValueError(f"motif_mask must have shape ({n},) (one entry per explained node), got "
                         f"{_to_numpy(motif_mask).shape}")
    return mask


def _draw_graph(fig, ax_g, explanation: Explanation, ei, pos, mask, cmap) -> None:
    """The left panel: the graph, nodes coloured by q (log scale over two decades), motif nodes ringed."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import LogNorm, Normalize

    n, q = explanation.num_nodes, explanation.q
    qmin, qmax = float(q.min()), float(q.max())
    log = qmin > 0 and qmax / qmin > 100.0
    norm = LogNorm(qmin, qmax) if log else Normalize(qmin, qmax if qmax > qmin else qmin + 1e-12)
    und = ei[:, ei[0] < ei[1]]
    if und.shape[1]:
        ax_g.add_collection(LineCollection(np.stack([pos[und[0]], pos[und[1]]], axis=1), colors="0.6",
                                           linewidths=0.9, zorder=1))
    size = float(np.clip(4000.0 / max(n, 1), 12.0, 220.0))
    sc = ax_g.scatter(pos[:, 0], pos[:, 1], c=q, cmap=cmap, norm=norm, s=size, edgecolors="0.2", linewidths=0.4,
                      zorder=2)
    if mask is not None and mask.any():
        ax_g.scatter(pos[mask, 0], pos[mask, 1], s=size * 2.6, facecolors="none", edgecolors="tab:red",
                     linewidths=1.6, zorder=3, label="ground-truth nodes")
        ax_g.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False, markerscale=0.6)
    cb = fig.colorbar(sc, ax=ax_g, fraction=0.046, pad=0.02)
    cb.set_label("q (node importance)" + (", log scale" if log else ""))
    ax_g.set_aspect("equal")
    ax_g.margins(0.06)
    ax_g.set_xticks([])
    ax_g.set_yticks([])
    for s in ax_g.spines.values():
        s.set_visible(False)
    where = "" if explanation.graph is None else f" (graph {explanation.graph})"
    ax_g.set_title(f"node importance q{where}, n = {n}", fontsize=10)


def _draw_filter(ax_p, explanation: Explanation) -> None:
    """The right panel: p on [0, 2] with its reading, the response h on a twin axis, the spectrum of L."""
    lam, p, h = explanation.lam, explanation.p, explanation.h
    (lp,) = ax_p.plot(lam, p, color="tab:blue", lw=2.0, label=r"penalty $p(\lambda)$")
    ax_p.set_xlim(0.0, 2.0)
    top = float(p.max())
    ax_p.set_ylim(min(0.0, float(p.min())), top * 1.08 if top > 0 else 1.0)
    ax_p.set_xlabel(r"graph frequency $\lambda$ (eigenvalue of $L$)")
    ax_p.set_ylabel(r"$p(\lambda)$", color="tab:blue")
    ax_p.tick_params(axis="y", labelcolor="tab:blue")
    handles = [lp]
    eig = explanation.laplacian_eigenvalues
    if eig is not None and eig.size:
        handles += ax_p.plot(eig, np.zeros_like(eig), "|", color="0.3", ms=9, mew=0.8, clip_on=False,
                             label="spectrum of L")
    tw = ax_p.twinx()
    (lh,) = tw.plot(lam, h, color="tab:orange", lw=1.6, ls="--",
                    label=rf"response $h(\lambda)$, $\bar q$ = {explanation.q_median:.3g}")
    tw.set_ylim(0.0, 1.05)
    tw.set_ylabel(r"$h(\lambda) = \bar q\,/\,(p(\lambda) + \bar q)$", color="tab:orange")
    tw.tick_params(axis="y", labelcolor="tab:orange")
    handles.insert(1, lh)
    ax_p.legend(handles=handles, loc="best", fontsize=8, frameon=False)
    ax_p.set_title(f"filter: {explanation.reading} (K = {explanation.coeffs.shape[0] - 1}, {explanation.basis})",
                   fontsize=10)
