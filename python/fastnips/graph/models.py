r"""TikhonovGNN: a Q-network, an encoder, one Tikhonov propagation, a readout and a classifier head.

.. math:: q = \mathrm{softplus}(\mathrm{norm}(f_\psi(X, A))) + q_{\min}, \qquad
          H = (p_\theta(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, g_\omega(X), \qquad
          \hat y = h_\nu(\mathrm{readout}(H)).

This module imports torch; :mod:`fastnips.graph` loads it only on first use of :class:`TikhonovGNN`.
torch_geometric is never imported: PyG ``Data``/``Batch`` objects are read by their attributes.
Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import itertools
import numbers
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from ._pattern import check_edge_weight
from .baselines import _positive_int, global_pool
from .layers import TikhonovProp, _as_index, check_batch, graph_operator

__all__ = ["POOLINGS", "TASKS", "TikhonovGNN"]

TASKS = ("graph", "node")
POOLINGS = ("mean", "sum", "max")


class _GINLayer(nn.Module):
    r"""GIN message passing from plain torch ops.

    .. math:: h_i' = \mathrm{MLP}\Big((1 + \epsilon) h_i + \sum_{j \to i} w_{ji} h_j\Big)

    Messages flow from ``edge_index[0]`` to ``edge_index[1]`` (PyG's ``source_to_target``); an
    undirected graph lists both directions. :math:`\epsilon` is learnable (GIN-:math:`\epsilon`, init 0).
    """

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(()))
        self.mlp = nn.Sequential(nn.Linear(in_channels, out_channels), nn.ReLU(), nn.Linear(out_channels, out_channels))

    def forward(self, h, src, dst, weight):
        msg = h[src] if weight is None else h[src] * weight.unsqueeze(-1)
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        return self.mlp((1.0 + self.eps) * h + agg)


def _mlp(d_in: int, hidden: int, d_out: int, layers: int) -> nn.Module:
    """``layers`` Linear maps with ReLU between them (one layer: a plain ``nn.Linear``)."""
    if layers == 1:
        return nn.Linear(d_in, d_out)
    dims = [d_in] + [hidden] * (layers - 1) + [d_out]
    mods: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(dims)):
        if i:
            mods.append(nn.ReLU())
        mods.append(nn.Linear(a, b))
    return nn.Sequential(*mods)


class TikhonovGNN(nn.Module):
    r"""Tikhonov graph neural network for node or graph classification (interpretable by design).

    .. math:: q = \mathrm{softplus}(\mathrm{norm}(f_\psi(X, A))) + q_{\min} \in \mathbb R^n_{>0}, \qquad
              H = (p_\theta(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, g_\omega(X),

    .. math:: \text{node task: } \hat Y = h_\nu(H), \qquad
              \text{graph task: } \hat y_g = h_\nu\big(\mathrm{pool}_{i \in g}(H_{i,:})\big).

    * :math:`f_\psi`, the **Q-network**: ``q_layers`` GIN layers built from plain torch ops,
      :math:`h_i' = \mathrm{MLP}((1 + \epsilon) h_i + \sum_{j \to i} h_j)` (MLP = Linear-ReLU-Linear,
      ReLU between layers), then a linear head to one score per node, standardised within each graph
      with a learned gain and shift (``q_norm``; see the parameter). ``q_layers=0`` gives an MLP on
      the node features alone (no message passing). :math:`q_{\min} > 0` keeps Q positive definite and
      bounds the conditioning, :math:`\kappa \le (1 + \max q)/q_{\min}` under the simplex.
    * :math:`g_\omega`, the **encoder** (``model.lin_in``): an MLP of ``encoder_layers`` Linear maps
      (ReLU between) to ``hidden_channels`` channels, applied per node, each channel then propagated by
      the **same** :math:`R = (p_\theta(L) + Q)^{-1} Q` (one :class:`~fastnips.graph.TikhonovProp`,
      exposed as ``model.prop``), where L is the normalized Laplacian of the whole (block-diagonal)
      batch, built once per forward with :func:`fastnips.graph.normalized_laplacian`
      (APPNP's "transform, then propagate").
    * Readout (graph task): max, mean or sum over each graph's nodes (PyG ``batch`` vector), then the
      **head** :math:`h_\nu` (``model.classifier``), an MLP of ``head_layers`` Linear maps. Node task:
      the head per node.

    Choices made here (the paper leaves them open), each chosen by measurement with
    ``bench/graph/eval_tikhonov.py`` (the numbers: docs/notes/graph.md):

    * ``init="uniform"``: the filter starts flat (p constant, so R starts diagonal: no propagation
      and no prior on the shape). A low-pass start trapped the model in a low-pass filter on
      heterophilous graphs, where the flat start learns a high-pass p.
    * Encoder and head depth by task. Graph task: two-layer encoder and head, max pooling (with a
      linear encoder and head the model stayed at chance on digit grid graphs). Node task: a linear
      encoder and a linear head, so the logits are linear in R's rows (the strictest "interpretable by
      design" reading) and the graph reaches the prediction only through the learned filter; with
      two-layer MLPs the node model fell back to an MLP on the features (p stayed flat). Pass
      ``encoder_layers`` / ``head_layers`` to choose; q, p and R explain the propagation either way.

    Explanations: :meth:`explain` returns an :class:`~fastnips.graph.Explanation` (per-node q, the
    curve p on [0, 2] and its reading, the rows of R for small graphs), drawn by
    :func:`fastnips.graph.plot_explanation`. After a forward pass, ``model.last_q`` (detached, shape
    (n,)) and ``model.prop.coefficients()`` (:math:`\theta`) hold the same raw ingredients. With the
    default simplex normalisation, (q, p) is identifiable, so q is an absolute node importance.

    Parameters
    ----------
    in_channels : int
        Node feature size.
    hidden_channels : int
        Width of the Q-network and number of propagated channels.
    out_channels : int
        Number of classes (logits).
    q_layers : int, default 2
        Depth of the Q-network (GIN layers), >= 0.
    K : int, default 4
        Degree of the filter polynomial p.
    task : {"graph", "node"}, default "graph"
    pooling : {"max", "mean", "sum"}, default "max"
        Readout for ``task="graph"`` (an empty graph id in the batch pools to 0).
    encoder_layers : int, optional
        Linear maps in the encoder :math:`g_\omega` (1: the affine map XW + b). Default: 2 for
        ``task="graph"``, 1 for ``task="node"``.
    head_layers : int, optional
        Linear maps in the head :math:`h_\nu` (1: a linear classifier). Default: 2 for
        ``task="graph"``, 1 for ``task="node"``.
    q_min : float, default 1e-3
        Lower bound of q, > 0.
    q_norm : bool, optional
        Standardise the Q-network's scores within each graph before the softplus, then apply a learned
        gain and shift: :math:`q_i = \mathrm{softplus}(\gamma\, \hat s_i + \beta) + q_{\min}` with
        :math:`\hat s` the per-graph z-scores (``model.q_norm`` holds :math:`(\gamma, \beta)`, init (1, 0)).
        Default: on for ``task="graph"``, off for ``task="node"``. Why: without it the scores of every
        node of a mini-batch can drift below the softplus's knee within one epoch, leaving q = q_min
        everywhere with a vanishing gradient (a dead model); with it only the shift :math:`\beta`, one
        scalar, can move all q at once. On the single-graph node task it cost accuracy and never
        prevented a failure, so it is off there. It also changes which nodes get a high q (the model may
        single a motif out by a low q as well as by a high one): read q as "how much this node's own
        features enter the propagation", not as a signed importance. Measurements: docs/notes/graph.md.
    basis, scale, backend, tol, backward_tol, init, method
        Passed to :class:`~fastnips.graph.TikhonovProp` (defaults: Bernstein, simplex, auto, solver
        defaults, "uniform", auto).

    Attributes
    ----------
    q_net : nn.ModuleList
        The GIN layers; ``q_head`` the linear map to one score per node.
    lin_in : nn.Module
        The encoder :math:`g_\omega` (``nn.Linear`` or ``nn.Sequential``).
    prop : TikhonovProp
    classifier : nn.Module
        The head :math:`h_\nu` (``nn.Linear`` or ``nn.Sequential``).
    last_q : torch.Tensor or None
        q of the last forward (detached).

    Examples
    --------
    >>> import torch
    >>> from fastnips.graph import TikhonovGNN
    >>> model = TikhonovGNN(1, 8, 2, task="graph")
    >>> edge_index = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])   # a path and an edge
    >>> batch = torch.tensor([0, 0, 0, 1, 1])
    >>> model(torch.ones(5, 1), edge_index, batch).shape
    torch.Size([2, 2])
    >>> model.last_q.shape
    torch.Size([5])
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, q_layers: int = 2, K: int = 4,
                 task: str = "graph", pooling: str = "max", encoder_layers: int | None = None,
                 head_layers: int | None = None,
                 q_min: float = 1e-3, basis: str = "bernstein", scale: str = "simplex", backend: str = "auto",
                 tol: float | None = None, backward_tol: float | None = None, init: str | ArrayLike = "uniform",
                 method: str = "auto",
                 q_norm: bool | None = None):
        super().__init__()
        self.in_channels = _positive_int("in_channels", in_channels)
        self.hidden_channels = _positive_int("hidden_channels", hidden_channels)
        self.out_channels = _positive_int("out_channels", out_channels)
        q_layers = _positive_int("q_layers", q_layers, minimum=0)
        depth = 2 if task == "graph" else 1  # the measured defaults (class docstring)
        encoder_layers = _positive_int("encoder_layers", depth if encoder_layers is None else encoder_layers)
        head_layers = _positive_int("head_layers", depth if head_layers is None else head_layers)
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if isinstance(q_min, bool) or not isinstance(q_min, numbers.Real) or not (0.0 < float(q_min) < np.inf):
            raise ValueError(f"q_min must be a finite float > 0 (it keeps Q positive definite), got {q_min!r}")
        self.task, self.pooling, self.q_min = task, pooling, float(q_min)
        dims = [self.in_channels] + [self.hidden_channels] * q_layers
        self.q_net = nn.ModuleList(_GINLayer(a, b) for a, b in itertools.pairwise(dims))
        self.q_head = nn.Linear(dims[-1], 1)
        if q_norm is None:
            q_norm = task == "graph"  # the measured default (see the parameter)
        if not isinstance(q_norm, bool | np.bool_):
            raise TypeError(f"q_norm must be a bool or None, got {type(q_norm).__name__}")
        # (gain, shift) of the standardised scores; None: no normalisation
        self.q_norm = nn.Parameter(torch.tensor([1.0, 0.0])) if q_norm else None
        self.lin_in = _mlp(self.in_channels, self.hidden_channels, self.hidden_channels, encoder_layers)
        self.prop = TikhonovProp(K=K, basis=basis, scale=scale, backend=backend, tol=tol, backward_tol=backward_tol,
                                 init=init, method=method)
        self.classifier = _mlp(self.hidden_channels, self.hidden_channels, self.out_channels, head_layers)
        self.last_q: torch.Tensor | None = None

    # -----------------------------------------------------------------------------------------------

    def node_weights(self, x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                     edge_weight: torch.Tensor | None = None, batch: ArrayLike | None = None) -> torch.Tensor:
        r"""The Q-network: :math:`q = \mathrm{softplus}(\mathrm{norm}(f_\psi(X, A))) + q_{\min}`, shape (n,).

        ``batch`` (graph id per node, numpy or tensor; None: one graph) sets the groups of the score
        normalisation when ``q_norm`` is on.
        """
        h = x
        for i, layer in enumerate(self.q_net):
            h = layer(h, src, dst, edge_weight)
            if i + 1 < len(self.q_net):
                h = torch.relu(h)
        s = self.q_head(h).squeeze(-1)
        if self.q_norm is not None:
            s = self._standardize(s, batch) * self.q_norm[0] + self.q_norm[1]
        return nn.functional.softplus(s) + self.q_min

    @staticmethod
    def _standardize(s, batch):
        """(s - mean) / sqrt(var + 1e-5) within each graph (a 1-node graph gives 0)."""
        idx = None if batch is None else torch.as_tensor(batch, device=s.device)
        if idx is None:
            idx = torch.zeros(s.shape[0], dtype=torch.long, device=s.device)
        d = s - global_pool(s.unsqueeze(-1), idx, "mean")[idx, 0]
        var = global_pool((d * d).unsqueeze(-1), idx, "mean")[idx, 0]
        return d / torch.sqrt(var + 1e-5)

    def forward(self, x: torch.Tensor | Any, edge_index: ArrayLike | None = None, batch: ArrayLike | None = None, *,
                edge_weight: torch.Tensor | None = None, num_graphs: int | None = None) -> torch.Tensor:
        r"""Logits for each graph (``task="graph"``) or each node (``task="node"``).

        Parameters
        ----------
        x : torch.Tensor, shape (n, in_channels), or a PyG-like object
            Node features. An object with attributes ``x`` and ``edge_index`` (a PyG ``Data`` or
            ``Batch``; read by attribute, torch_geometric is not imported) supplies ``edge_index``,
            ``batch``, ``edge_weight`` and ``num_graphs`` where it has them; the other arguments must
            then be left out.
        edge_index : torch.Tensor of int, shape (2, E)
            PyG edge list; for a mini-batch, the disjoint union with node ids offset per graph.
        batch : torch.Tensor of int, shape (n,), optional
            Graph id per node (PyG convention); None means one graph. Checked: length n, ids >= 0, no
            edge between two graphs.
        edge_weight : torch.Tensor, shape (E,), optional
            Non-negative weights, used by the GIN sums and the Laplacian.
        num_graphs : int, optional
            Number of graphs (rows of the output); default ``batch.max() + 1``. Graph ids without nodes
            pool to 0.

        Returns
        -------
        torch.Tensor, shape (num_graphs, out_channels) or (n, out_channels)
        """
        x, ei, b, edge_weight, num_graphs, raw_ei = self._inputs(x, edge_index, batch, edge_weight, num_graphs)
        src = torch.as_tensor(ei[0], device=x.device)
        dst = torch.as_tensor(ei[1], device=x.device)

        q = self.node_weights(x, src, dst, edge_weight, b)
        self.last_q = q.detach()
        # L from the edge list through prop's cache (differentiable in edge_weight); the batch lets
        # method="auto" pick the dense solver
        h = self.prop(self.lin_in(x), q, raw_ei if isinstance(raw_ei, torch.Tensor) else ei, edge_weight=edge_weight,
                      batch=b)
        if self.task == "node":
            return self.classifier(h)
        return self.classifier(self._pool(h, b, num_graphs))

    @torch.no_grad()
    def explain(self, data_or_x: ArrayLike | Any, edge_index: ArrayLike | None = None,
                batch: ArrayLike | None = None, *, graph: int | None = None, rows: bool = True,
                max_nodes_for_rows: int = 500, edge_weight: torch.Tensor | None = None, num_points: int = 201):
        r"""Explain the model on a graph or batch: node importances q, the filter p and the rows of R.

        Runs the Q-network once (no gradient; ``last_q`` is left as it was) and reads the current
        coefficients of ``self.prop``, then calls :func:`fastnips.graph.explain_tikhonov` with the
        Laplacian the forward pass would use:

        * ``q``: :math:`q = \mathrm{softplus}(\mathrm{norm}(f_\psi(X, A))) + q_{\min}` per node. Under the
          default simplex scale it is an absolute importance (:math:`q_i \gg 1`: node i keeps its own
          features; :math:`q_i \ll 1`: it takes its neighbourhood's). With ``scale="softplus"`` only
          ratios of q are meaningful.
        * the curve :math:`p_\theta(\lambda)` on a grid of [0, 2] and its reading (low-pass,
          high-pass, band-pass, band-stop or flat; rule in :func:`fastnips.graph.filter_reading`),
          and the response :math:`h(\lambda) = \bar q / (p(\lambda) + \bar q)` at the median q.
        * ``R``: the dense :math:`(p(L) + Q)^{-1} Q` (row i: how much each node's projected features
          :math:`XW + b` contribute to node i's output) when the explained nodes number at most
          ``max_nodes_for_rows``. With ``encoder_layers=1, head_layers=1`` (the node-task default)
          the logits are linear in R's rows (see the class docstring).

        Parameters
        ----------
        data_or_x : torch.Tensor or numpy array, shape (n, in_channels), or a PyG-like object
            As for :meth:`forward`; a numpy array (or an object whose ``x`` is one, such as
            :class:`fastnips.data.graphs.GraphSample`) is converted to the dtype and device of the
            model's parameters.
        edge_index, batch, edge_weight
            As for :meth:`forward`.
        graph : int, optional
            Explain only graph ``graph`` of the batch (its q, its R, the median of its q); equals
            explaining that graph alone. The result's ``nodes`` maps back to batch node ids and its
            ``edge_index`` is the graph's own, in local ids.
        rows : bool, default True
            Compute R (and the spectrum of L) for small graphs.
        max_nodes_for_rows : int, default 500
            Largest number of explained nodes for which R is formed; above it ``R`` is None.
        num_points : int, default 201
            Points of the curve p on [0, 2].

        Returns
        -------
        Explanation
            See :class:`fastnips.graph.Explanation`; draw it with :func:`fastnips.graph.plot_explanation`.

        Raises
        ------
        ValueError, TypeError
            Bad inputs as for :meth:`forward`; ``graph`` out of range or without nodes; bad
            ``max_nodes_for_rows`` or ``num_points``.

        Examples
        --------
        >>> import torch
        >>> from fastnips.graph import TikhonovGNN
        >>> model = TikhonovGNN(1, 8, 2)
        >>> edge_index = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])   # a path and an edge
        >>> e = model.explain(torch.ones(5, 1), edge_index, torch.tensor([0, 0, 0, 1, 1]), graph=0)
        >>> e.reading, e.q.shape, e.R.shape, e.nodes.tolist()
        ('flat', (3,), (3, 3), [0, 1, 2])
        """
        from .explain import explain_tikhonov

        data_or_x = self._features_as_tensor(data_or_x)
        x, ei, b, edge_weight, _, _ = self._inputs(data_or_x, edge_index, batch, edge_weight, None)
        L = graph_operator(x.shape[0], edge_index=ei, edge_weight=edge_weight)
        src = torch.as_tensor(ei[0], device=x.device)
        dst = torch.as_tensor(ei[1], device=x.device)
        q = self.node_weights(x, src, dst, edge_weight, b)
        q = q.detach().to(device="cpu", dtype=torch.float64).numpy()
        theta = self.prop.coefficients().detach().to(device="cpu", dtype=torch.float64).numpy()
        return explain_tikhonov(theta, q, L, basis=self.prop.basis, batch=b, graph=graph, rows=rows,
                                max_nodes_for_rows=max_nodes_for_rows, num_points=num_points,
                                backend=self.prop.backend)

    def _features_as_tensor(self, data_or_x):
        """A numpy feature matrix (bare or as ``obj.x``) as a tensor of the parameters' dtype and device."""
        ref = self.q_head.weight

        def convert(x):
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                return torch.as_tensor(x, dtype=ref.dtype, device=ref.device)
            return x

        if isinstance(data_or_x, np.ndarray):
            return convert(data_or_x)
        if not isinstance(data_or_x, torch.Tensor) and isinstance(getattr(data_or_x, "x", None), np.ndarray) \
                and hasattr(data_or_x, "edge_index"):
            fields = {k: getattr(data_or_x, k) for k in ("edge_index", "batch", "edge_weight", "num_graphs")
                      if getattr(data_or_x, k, None) is not None}
            return SimpleNamespace(x=convert(data_or_x.x), **fields)
        return data_or_x

    def _inputs(self, x, edge_index, batch, edge_weight, num_graphs):
        """Unpack a PyG-like object and validate (x, edge_index, batch, edge_weight); build L (float64 CSR).

        Returns ``(x, edge_index as int64 numpy, batch as int64 numpy or None, edge_weight, num_graphs,
        edge_index as given)``; the weights are checked by the Laplacian's builder (finite, >= 0).
        """
        if not isinstance(x, torch.Tensor) and hasattr(x, "x") and hasattr(x, "edge_index"):
            if edge_index is not None or batch is not None or edge_weight is not None or num_graphs is not None:
                raise ValueError("pass either a PyG-like data object or tensors (x, edge_index, batch), not both")
            data = x
            x, edge_index = data.x, data.edge_index
            batch = getattr(data, "batch", None)
            edge_weight = getattr(data, "edge_weight", None)
            ng = getattr(data, "num_graphs", None)
            num_graphs = int(ng) if batch is not None and isinstance(ng, numbers.Integral | torch.Tensor) else None
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point torch tensor (or a PyG-like object), got {type(x).__name__}"
                            + (f" of dtype {x.dtype}" if isinstance(x, torch.Tensor) else ""))
        if x.dim() != 2 or x.shape[1] != self.in_channels:
            raise ValueError(f"x must have shape (n, in_channels) = (n, {self.in_channels}), got {tuple(x.shape)}")
        if edge_index is None:
            raise ValueError("edge_index is required (shape (2, E); an empty graph has shape (2, 0))")
        n = x.shape[0]
        ei = _as_index("edge_index", edge_index, ndim=2)
        if ei.shape[0] != 2:
            raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
        if ei.size and (ei.min() < 0 or ei.max() >= n):
            e = int(np.flatnonzero(((ei < 0) | (ei >= n)).any(axis=0))[0])
            raise ValueError(f"edge_index: edge {e} = ({ei[0, e]}, {ei[1, e]}) has a node id outside [0, n) = [0, {n})")
        b = None if batch is None else check_batch(batch, ei, n)
        if edge_weight is not None:
            if not isinstance(edge_weight, torch.Tensor):
                edge_weight = torch.as_tensor(edge_weight)
            if edge_weight.shape != (ei.shape[1],):
                raise ValueError(f"edge_weight must have shape (E,) = ({ei.shape[1]},), got {tuple(edge_weight.shape)}")
            edge_weight = edge_weight.to(device=x.device, dtype=x.dtype)
        check_edge_weight(edge_weight, ei.shape[1])
        return x, ei, b, edge_weight, num_graphs, edge_index

    def _pool(self, h, b, num_graphs):
        if num_graphs is not None:
            num_graphs = _positive_int("num_graphs", int(num_graphs), minimum=0)
        idx = None if b is None else torch.as_tensor(b, device=h.device)
        return global_pool(h, idx, self.pooling, num_graphs)

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"task={self.task!r}, pooling={self.pooling!r}, q_min={self.q_min}"
