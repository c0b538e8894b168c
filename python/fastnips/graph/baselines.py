r"""Peer GNNs for the Tikhonov evaluation, written in plain torch: GCN, GIN and APPNP.

torch_geometric is not a dependency, so the three peers of issue 4 item 5 are implemented here from
their papers, with PyG's conventions (``edge_index`` of shape (2, E), messages flow from
``edge_index[0]`` to ``edge_index[1]``, an undirected graph lists both directions, ``batch`` maps
nodes to graphs). All propagation is sparse: gather by ``edge_index`` and ``index_add_`` (no dense
n × n matrix anywhere).

* :class:`GCN` -- Kipf & Welling (ICLR 2017): :math:`H' = \hat A H W`, with
  :math:`\hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}`.
* :class:`GIN` -- Xu, Hu, Leskovec & Jegelka (ICLR 2019):
  :math:`h_i' = \mathrm{MLP}((1 + \epsilon) h_i + \sum_{j \in N(i)} h_j)`.
* :class:`APPNP` -- Klicpera, Bojchevski & Günnemann (ICLR 2019): :math:`H = \mathrm{MLP}(X)`, then
  K steps of :math:`Z \leftarrow (1 - \alpha)\hat A Z + \alpha H`.
* :func:`gcn_norm_edges`, :func:`propagate`, :func:`global_pool`, :func:`count_parameters` -- the
  shared pieces.

Every model has ``forward(x, edge_index, batch=None)`` and a ``task`` ("node" or "graph") with a
``pooling`` readout ("mean", "sum" or "max") for graph tasks.
"""

from __future__ import annotations

import itertools
import numbers

import torch
from torch import nn

__all__ = ["APPNP", "GCN", "GIN", "POOLINGS", "TASKS", "count_parameters", "gcn_norm_edges", "global_pool",
           "propagate"]

TASKS = ("node", "graph")
POOLINGS = ("mean", "sum", "max")


# ---------------------------------------------------------------------------------------------------
# shared pieces


def count_parameters(model: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of scalar parameters of a torch module.

    Parameters
    ----------
    model : torch.nn.Module
    trainable_only : bool, default True
        Count only parameters with ``requires_grad``.

    Returns
    -------
    int
        :math:`\\sum_p \\mathrm{numel}(p)` over ``model.parameters()``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"count_parameters needs a torch.nn.Module, got {type(model).__name__}")
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only))


def _positive_int(name: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
    return int(v)


def _check_task(task: str, pooling: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


def _check_inputs(x, edge_index, batch, in_channels: int):
    """Validate (x, edge_index, batch); return edge_index and batch as int64 tensors on x's device."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating-point torch tensor, got "
                        + (f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__))
    if x.dim() != 2 or x.shape[1] != in_channels:
        raise ValueError(f"x must have shape (n, in_channels) = (n, {in_channels}), got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")
    n = x.shape[0]
    ei = torch.as_tensor(edge_index, device=x.device)
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    if ei.is_floating_point() or ei.dtype == torch.bool:
        raise TypeError(f"edge_index must hold integers, got {ei.dtype}")
    ei = ei.long()
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise ValueError(f"edge_index holds a node id outside [0, n) = [0, {n})")
    if batch is not None:
        b = torch.as_tensor(batch, device=x.device)
        if b.dim() != 1 or b.shape[0] != n:
            raise ValueError(f"batch must have shape (n,) = ({n},), got {tuple(b.shape)}")
        if b.is_floating_point() or b.dtype == torch.bool:
            raise TypeError(f"batch must hold integers, got {b.dtype}")
        b = b.long()
        if b.numel() and int(b.min()) < 0:
            raise ValueError("batch holds a negative graph id")
        if ei.numel() and bool((b[ei[0]] != b[ei[1]]).any()):
            raise ValueError("edge_index joins nodes of two different graphs of the batch")
        batch = b
    return ei, batch


def gcn_norm_edges(edge_index: torch.Tensor, num_nodes: int, dtype=torch.float32):
    r"""The edges and weights of :math:`\hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}` (Kipf & Welling).

    Self loops already in ``edge_index`` are dropped and one self loop of weight 1 is added per node
    (PyG's ``add_remaining_self_loops`` with unit weights); :math:`\tilde d_i` is the number of edges
    into node i plus one, so :math:`\hat A_{ij} = 1/\sqrt{\tilde d_i \tilde d_j}` on each edge and on the
    diagonal.

    Parameters
    ----------
    edge_index : torch.Tensor of int64, shape (2, E)
    num_nodes : int
    dtype : torch.dtype

    Returns
    -------
    src, dst : torch.Tensor of int64, shape (E' ,)
        E' = (E minus self loops) + num_nodes.
    weight : torch.Tensor, shape (E',)
    """
    keep = edge_index[0] != edge_index[1]
    loop = torch.arange(num_nodes, device=edge_index.device)
    src = torch.cat([edge_index[0, keep], loop])
    dst = torch.cat([edge_index[1, keep], loop])
    deg = torch.zeros(num_nodes, dtype=dtype, device=edge_index.device).index_add_(
        0, dst, torch.ones(dst.shape[0], dtype=dtype, device=edge_index.device))
    dinv = deg.rsqrt()
    return src, dst, dinv[src] * dinv[dst]


def propagate(h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, weight: torch.Tensor | None = None):
    r""":math:`h'_i = \sum_{(j \to i)} w_{ji} h_j`, a sparse product by gather and ``index_add_``."""
    msg = h[src] if weight is None else h[src] * weight.unsqueeze(-1)
    return torch.zeros_like(h).index_add_(0, dst, msg)


def global_pool(h: torch.Tensor, batch: torch.Tensor | None, mode: str = "mean", num_graphs: int | None = None):
    r"""Readout per graph: :math:`\mathrm{mean}`, :math:`\sum` or :math:`\max` over each graph's nodes.

    Parameters
    ----------
    h : torch.Tensor, shape (n, F)
    batch : torch.Tensor of int64, shape (n,), or None
        Graph id per node (PyG); None means one graph.
    mode : {"mean", "sum", "max"}
    num_graphs : int, optional
        Rows of the output (default ``batch.max() + 1``); graphs without nodes pool to 0.

    Returns
    -------
    torch.Tensor, shape (num_graphs, F)
    """
    if mode not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {mode!r}")
    n = h.shape[0]
    if batch is None:
        batch = torch.zeros(n, dtype=torch.long, device=h.device)
    G = int(batch.max()) + 1 if n else 0
    if num_graphs is not None:
        if int(num_graphs) < G:
            raise ValueError(f"num_graphs = {num_graphs} but batch holds graph id {G - 1}")
        G = int(num_graphs)
    out = torch.zeros(G, h.shape[1], dtype=h.dtype, device=h.device)
    if mode == "max":
        return out.scatter_reduce(0, batch.unsqueeze(-1).expand_as(h), h, reduce="amax", include_self=False)
    out = out.index_add(0, batch, h)
    if mode == "mean":
        count = torch.zeros(G, dtype=h.dtype, device=h.device).index_add(0, batch, torch.ones_like(h[:, 0]))
        out = out / count.clamp(min=1.0).unsqueeze(-1)
    return out


def _mlp(a: int, b: int, c: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, c))


class _Base(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_layers, task, pooling, min_layers=1):
        super().__init__()
        self.in_channels = _positive_int("in_channels", in_channels)
        self.hidden_channels = _positive_int("hidden_channels", hidden_channels)
        self.out_channels = _positive_int("out_channels", out_channels)
        self.num_layers = _positive_int("num_layers", num_layers, min_layers)
        _check_task(task, pooling)
        self.task, self.pooling = task, pooling

    def _linear_layers(self) -> None:
        """``self.lins``: ``num_layers`` Linear maps in -> hidden -> ... -> hidden (graph task) or -> out (node
        task); ``self.classifier``: the linear head after the readout (graph task only, else None)."""
        last = self.out_channels if self.task == "node" else self.hidden_channels
        dims = [self.in_channels] + [self.hidden_channels] * (self.num_layers - 1) + [last]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))
        self.classifier = nn.Linear(self.hidden_channels, self.out_channels) if self.task == "graph" else None

    def extra_repr(self) -> str:
        return f"task={self.task!r}, pooling={self.pooling!r}"


# ---------------------------------------------------------------------------------------------------
# GCN


class GCN(_Base):
    r"""Graph convolutional network (Kipf & Welling, ICLR 2017), plain torch.

    .. math:: \hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}, \qquad
              H^{(l+1)} = \mathrm{ReLU}(\hat A H^{(l)} W^{(l)} + b^{(l)}).

    * ``task="node"``: ``num_layers`` convolutions, the last one to ``out_channels`` with no ReLU
      (the paper's two-layer model is ``num_layers=2``: :math:`\hat A\,\mathrm{ReLU}(\hat A X W_0) W_1`).
    * ``task="graph"``: ``num_layers`` convolutions to ``hidden_channels`` (each followed by ReLU),
      a readout (mean/sum/max over each graph's nodes), then a linear classifier -- the usual
      graph-classification use of GCN (e.g. PyG's examples), since the paper itself is node-level.

    No dropout (the evaluation applies none to any model, for a like-for-like comparison).

    Parameters
    ----------
    in_channels, hidden_channels, out_channels : int
    num_layers : int, default 2
    task : {"node", "graph"}, default "graph"
    pooling : {"mean", "sum", "max"}, default "mean"

    References
    ----------
    T. N. Kipf and M. Welling, "Semi-Supervised Classification with Graph Convolutional Networks",
    ICLR 2017, arXiv:1609.02907.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, num_layers: int = 2,
                 task: str = "graph", pooling: str = "mean"):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, task, pooling)
        self._linear_layers()

    def forward(self, x, edge_index, batch=None, *, num_graphs: int | None = None):
        """Logits, shape (num_graphs, out_channels) for ``task="graph"``, (n, out_channels) for nodes.

        Parameters
        ----------
        x : torch.Tensor, shape (n, in_channels)
        edge_index : torch.Tensor of int, shape (2, E)
        batch : torch.Tensor of int, shape (n,), optional
            Graph id per node; None means one graph.
        num_graphs : int, optional
            Output rows for ``task="graph"`` (default ``batch.max() + 1``).
        """
        ei, batch = _check_inputs(x, edge_index, batch, self.in_channels)
        src, dst, w = gcn_norm_edges(ei, x.shape[0], x.dtype)
        h = x
        for i, lin in enumerate(self.lins):
            # (Â H) W = Â (H W): multiply by W first (fewer channels to propagate when narrowing)
            h = propagate(h @ lin.weight.T, src, dst, w) + lin.bias
            if self.task == "graph" or i + 1 < len(self.lins):
                h = torch.relu(h)
        if self.task == "node":
            return h
        return self.classifier(global_pool(h, batch, self.pooling, num_graphs))


# ---------------------------------------------------------------------------------------------------
# GIN


class GIN(_Base):
    r"""Graph isomorphism network (Xu et al., ICLR 2019), plain torch.

    .. math:: h_i^{(l+1)} = \mathrm{ReLU}\Big(\mathrm{MLP}^{(l)}\Big((1 + \epsilon^{(l)}) h_i^{(l)}
              + \sum_{j \in N(i)} h_j^{(l)}\Big)\Big), \qquad \mathrm{MLP} = \mathrm{Linear}\text{-}
              \mathrm{ReLU}\text{-}\mathrm{Linear}.

    * ``task="graph"``: the paper's readout (its eq. 4.2) -- pool every layer's representation
      :math:`h^{(0)} = x, \dots, h^{(L)}` over each graph and sum per-layer linear classifiers,
      :math:`\hat y_g = \sum_{l=0}^{L} W_l\, \mathrm{pool}(h^{(l)}) + b_l`. The paper uses sum pooling
      (the injective choice); ``pooling`` lets mean/max be used too.
    * ``task="node"``: a linear classifier on :math:`h^{(L)}`.

    Choices: :math:`\epsilon` is fixed at 0 by default (GIN-0, which the paper found to do as well or
    better than learnable :math:`\epsilon`); ``train_eps=True`` learns it (GIN-:math:`\epsilon`, init 0).
    No batch normalisation and no dropout, so that a model is a deterministic function of its input
    and no model in the evaluation gets a regulariser the others lack.

    Parameters
    ----------
    in_channels, hidden_channels, out_channels : int
    num_layers : int, default 2
        Number of GIN layers (the paper uses 5 on TU datasets).
    task : {"node", "graph"}, default "graph"
    pooling : {"mean", "sum", "max"}, default "sum"
    train_eps : bool, default False

    References
    ----------
    K. Xu, W. Hu, J. Leskovec and S. Jegelka, "How Powerful are Graph Neural Networks?", ICLR 2019,
    arXiv:1810.00826.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, num_layers: int = 2,
                 task: str = "graph", pooling: str = "sum", train_eps: bool = False):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, task, pooling)
        dims = [self.in_channels] + [self.hidden_channels] * self.num_layers
        self.mlps = nn.ModuleList(_mlp(a, b, b) for a, b in itertools.pairwise(dims))
        eps = torch.zeros(self.num_layers)
        self.eps = nn.Parameter(eps) if train_eps else None
        if not train_eps:
            self.register_buffer("eps_fixed", eps)
        if task == "graph":
            self.heads = nn.ModuleList(nn.Linear(d, self.out_channels) for d in dims)
        else:
            self.heads = nn.ModuleList([nn.Linear(self.hidden_channels, self.out_channels)])

    def forward(self, x, edge_index, batch=None, *, num_graphs: int | None = None):
        """Logits, shape (num_graphs, out_channels) for ``task="graph"``, (n, out_channels) for nodes.

        Parameters
        ----------
        x : torch.Tensor, shape (n, in_channels)
        edge_index : torch.Tensor of int, shape (2, E)
        batch : torch.Tensor of int, shape (n,), optional
        num_graphs : int, optional
        """
        ei, batch = _check_inputs(x, edge_index, batch, self.in_channels)
        src, dst = ei[0], ei[1]
        eps = self.eps if self.eps is not None else self.eps_fixed
        hs = [x]
        h = x
        for i, mlp in enumerate(self.mlps):
            h = torch.relu(mlp((1.0 + eps[i]) * h + propagate(h, src, dst)))
            hs.append(h)
        if self.task == "node":
            return self.heads[0](h)
        out = 0
        for h_l, head in zip(hs, self.heads):
            out = out + head(global_pool(h_l, batch, self.pooling, num_graphs))
        return out


# ---------------------------------------------------------------------------------------------------
# APPNP


class APPNP(_Base):
    r"""Approximate personalised propagation of neural predictions (Klicpera et al., ICLR 2019).

    .. math:: H = f_\psi(X), \qquad Z^{(0)} = H, \qquad
              Z^{(k+1)} = (1 - \alpha)\hat A Z^{(k)} + \alpha H \ (k < K), \qquad
              \hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2},

    the power iteration of PPNP, :math:`\alpha (I - (1 - \alpha)\hat A)^{-1} H`, truncated at K steps.
    :math:`f_\psi` is an MLP (``num_layers`` linear layers with ReLU between).

    * ``task="node"``: :math:`f_\psi` maps to ``out_channels`` and :math:`Z^{(K)}` are the logits, as in
      the paper ("predict, then propagate").
    * ``task="graph"``: :math:`f_\psi` maps to ``hidden_channels``, :math:`Z^{(K)}` is pooled per graph
      and a linear classifier gives the logits (the paper is node-level; this is the natural readout).

    Parameters
    ----------
    in_channels, hidden_channels, out_channels : int
    num_layers : int, default 2
        Linear layers of the MLP, >= 1.
    K : int, default 10
    alpha : float, default 0.1
        Teleport probability, in (0, 1].
    task : {"node", "graph"}, default "graph"
    pooling : {"mean", "sum", "max"}, default "mean"

    References
    ----------
    J. Klicpera (Gasteiger), A. Bojchevski and S. Günnemann, "Predict then Propagate: Graph Neural
    Networks meet Personalized PageRank", ICLR 2019, arXiv:1810.05997.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, *, num_layers: int = 2,
                 K: int = 10, alpha: float = 0.1, task: str = "graph", pooling: str = "mean"):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, task, pooling)
        self.K = _positive_int("K", K, 0)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not (0.0 < float(alpha) <= 1.0):
            raise ValueError(f"alpha must be a float in (0, 1], got {alpha!r}")
        self.alpha = float(alpha)
        self._linear_layers()

    def forward(self, x, edge_index, batch=None, *, num_graphs: int | None = None):
        """Logits, shape (num_graphs, out_channels) for ``task="graph"``, (n, out_channels) for nodes.

        Parameters
        ----------
        x : torch.Tensor, shape (n, in_channels)
        edge_index : torch.Tensor of int, shape (2, E)
        batch : torch.Tensor of int, shape (n,), optional
        num_graphs : int, optional
        """
        ei, batch = _check_inputs(x, edge_index, batch, self.in_channels)
        h = x
        for i, lin in enumerate(self.lins):
            h = lin(h)
            if i + 1 < len(self.lins):
                h = torch.relu(h)
        src, dst, w = gcn_norm_edges(ei, x.shape[0], x.dtype)
        z = h
        for _ in range(self.K):
            z = (1.0 - self.alpha) * propagate(z, src, dst, w) + self.alpha * h
        if self.task == "node":
            return z
        return self.classifier(global_pool(z, batch, self.pooling, num_graphs))

    def extra_repr(self) -> str:
        return f"K={self.K}, alpha={self.alpha}, " + super().extra_repr()
