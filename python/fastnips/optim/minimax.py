r"""Decentralised minimax optimisation: the doubly smoothed GDA and its baselines, on M nodes that gossip with a
mixing matrix W, in one process (simulation) or one process per node on ``torch.distributed``, by one code path.

Math
----
Node i holds :math:`(x_i, y_i)`, and for the doubly smoothed method the anchors :math:`(z_i, v_i)` of the
surrogate :math:`F(x, y; z, v) = f(x, y) + \frac{r_1}{2}\lVert x - z\rVert^2 - \frac{r_2}{2}\lVert y - v\rVert^2`.
One step, with :math:`\mathcal{W}u_i = \sum_j W_{ij} u_j` (one gossip round) and local gradients
:math:`g^x_i, g^y_i = \nabla f_i(x_i, y_i)` (stochastic or not):

``"dsgda"`` (doubly smoothed decentralised GDA with gradient tracking, the paper's method, reconstructed):

.. math:: s^x_i \leftarrow \mathcal{W} s^x_i + g^x_i - g^{x,\mathrm{prev}}_i, \qquad
          s^y_i \leftarrow \mathcal{W} s^y_i + g^y_i - g^{y,\mathrm{prev}}_i,

.. math:: x_i \leftarrow \mathcal{W} x_i - c\,\big(s^x_i + r_1 (x_i - z_i)\big), \qquad
          y_i \leftarrow \mathcal{W} y_i + c\,\big(s^y_i - r_2 (y_i - v_i)\big),

.. math:: z_i \leftarrow z_i + \beta (x_i - z_i), \qquad v_i \leftarrow v_i + \mu (y_i - v_i),

with **the same step c for the primal and the dual variable** (the paper's point; trackers start at the first
gradients). Baselines behind the same interface:

* ``"gda"``: decentralised GDA, :math:`x_i \leftarrow \mathcal{W}x_i - c\, g^x_i`,
  :math:`y_i \leftarrow \mathcal{W}y_i + c\, g^y_i` (equal steps);
* ``"tt-gda"``: the same with two time scales, primal step :math:`c / \tau` (``tau``, default 10);
* ``"gt-gda"``: gradient-tracking GDA with two time scales, the deterministic-gradient form of DREAM (Chen, Ye,
  Luo 2022): with full gradients its SPIDER estimator is the gradient itself, and one gossip round per step
  stands for its FastMix (stated here because it is a simplification of the published method).

Paper: "A doubly smoothed decentralized stochastic minimax algorithm" (NeurIPS 2026; a descriptive title, see
docs/papers.md), claiming an :math:`O(\kappa^{3/2})` dependence for nonconvex-PL problems with equal steps. Its
code and the exact auxiliary-variable handling are not public: the anchor updates above are the notes' reading
(the centralised doubly smoothed GDA with tracked gradients), documented as a reconstruction.

Execution (``engine=``): :class:`InProcess` keeps all M nodes in this process; :class:`Distributed` runs node
``rank`` of a ``torch.distributed`` group and exchanges with its neighbours by point-to-point sends and receives.
The iterates are float64 CPU tensors, so the group's backend must carry CPU tensors (gloo or mpi, also between
GPU machines); nccl, which moves only device tensors, is refused with that reason. Both sum :math:`\mathcal{W}u_i`
over the neighbours in the same sorted order, in float64, so for a fixed seed the iterates are **bitwise equal**
in both modes (tested with 4 gloo processes). The recorded history uses node averages (an all-reduce in the
distributed mode), equal to float round-off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .topology import Topology

METHODS = ("dsgda", "gda", "tt-gda", "gt-gda")


class InProcess:
    """All M nodes in this process (tests, small studies).

    Parameters
    ----------
    topology : Topology
    """

    def __init__(self, topology: Topology):
        self.topology = topology
        self.nodes = list(range(topology.size))
        # Neighbour slots padded to the largest degree: slot k of node i is its k-th neighbour in sorted order,
        # padding slots point at i with weight 0 (adding 0 * u leaves the sum bitwise unchanged).
        K = max(len(n) for n in topology.neighbours)
        idx = torch.tensor([list(n) + [i] * (K - len(n)) for i, n in enumerate(topology.neighbours)])
        w = torch.tensor([[float(topology.W[i, j]) for j in n] + [0.0] * (K - len(n))
                          for i, n in enumerate(topology.neighbours)], dtype=torch.float64)
        self._slots = [(idx[:, k], w[:, k, None]) for k in range(K)]

    def mix(self, U: torch.Tensor) -> torch.Tensor:
        """:math:`\\sum_j W_{ij} u_j` for every node (rows of U), summed in the neighbours' sorted order."""
        acc = torch.zeros_like(U)
        for idx, w in self._slots:
            acc = acc + w * U[idx]
        return acc

    def mean(self, U: torch.Tensor) -> torch.Tensor:
        """Average over the nodes."""
        return U.mean(0)


class Distributed:
    """Node ``rank`` of an initialised ``torch.distributed`` group of size M (one process per node).

    Parameters
    ----------
    topology : Topology
        Must have ``world_size`` nodes.
    """

    def __init__(self, topology: Topology):
        import torch.distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised: launch with torchrun (see the docs) or call "
                               "torch.distributed.init_process_group first")
        if "nccl" in str(dist.get_backend()).lower():
            raise ValueError("the minimax engine exchanges float64 CPU tensors: initialise the process group with "
                             "backend 'gloo' (nccl moves only GPU tensors)")
        if dist.get_world_size() != topology.size:
            raise ValueError(f"the topology has {topology.size} nodes but the process group "
                             f"{dist.get_world_size()} processes")
        self.dist, self.topology = dist, topology
        self.rank = dist.get_rank()
        self.nodes = [self.rank]

    def mix(self, U: torch.Tensor) -> torch.Tensor:
        """:math:`\\sum_j W_{ij} u_j` for this node (U is (1, n)), neighbours' values received point to point."""
        i, W = self.rank, self.topology.W
        mine = U[0].contiguous()
        bufs, ops = {}, []
        for j in self.topology.neighbours[i]:
            if j != i:
                bufs[j] = torch.empty_like(mine)
                ops += [self.dist.P2POp(self.dist.isend, mine, j), self.dist.P2POp(self.dist.irecv, bufs[j], j)]
        for req in self.dist.batch_isend_irecv(ops) if ops else []:
            req.wait()
        acc = torch.zeros_like(mine)
        for j in self.topology.neighbours[i]:
            acc = acc + float(W[i, j]) * (mine if j == i else bufs[j])
        return acc[None]

    def mean(self, U: torch.Tensor) -> torch.Tensor:
        """Average over the nodes (all-reduce)."""
        t = U[0].clone()
        self.dist.all_reduce(t)
        return t / self.topology.size


@dataclass
class MinimaxResult:
    """Iterates and history of :func:`decentralized_minimax`.

    Attributes
    ----------
    x, y : torch.Tensor, (L, n_x) and (L, n_y)
        Final iterates of this process's nodes (all M in-process; one in the distributed mode).
    history : list of dict
        After the first step, every ``record_every`` steps and after the last one: ``step``, ``stationarity``
        (the problem's measure at the node averages), ``consensus``
        (:math:`\\frac1M \\sum_i \\lVert x_i - \\bar x \\rVert^2 + \\lVert y_i - \\bar y \\rVert^2`).
    floats_sent_per_step : int
        Floats each node sends per step (gossip of every mixed vector to every neighbour), max over nodes.
    """

    x: torch.Tensor
    y: torch.Tensor
    history: list = field(default_factory=list)
    floats_sent_per_step: int = 0


def _positive_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _check(method, lr, steps, record_every, tol, params) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    for name, v in {"lr": lr, **params}.items():
        if not _positive_number(v):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    for name, v in (("steps", steps), ("record_every", record_every)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if tol is not None and not (_positive_number(tol) or tol == 0):
        raise ValueError(f"tol must be None or a finite number >= 0, got {tol!r}")


def decentralized_minimax(problem: Any, topology: Topology, *, method: str = "dsgda", steps: int = 1000,
                          lr: float = 0.05, r1: float = 2.0, r2: float = 1.0, beta: float = 0.02, mu: float = 0.2,
                          tau: float = 10.0,
                          x0: torch.Tensor | None = None, y0: torch.Tensor | None = None,
                          engine: InProcess | Distributed | None = None,
                          record_every: int = 10, tol: float | None = None) -> MinimaxResult:
    r"""Run a decentralised minimax method (module docstring) on ``problem`` over ``topology``.

    Parameters
    ----------
    problem : Quadratic, RobustLogistic, TorchProblem or any object with ``nodes``, ``n_x``, ``n_y``,
        ``local_grad(i, x, y, step)`` and ``stationarity(x, y)``.
    topology : Topology
        With ``problem.nodes`` nodes.
    method : {"dsgda", "gda", "tt-gda", "gt-gda"}, default "dsgda"
    steps : int, default 1000
    lr : float, default 0.05
        The step c (primal and dual; the primal one is c / tau for the two-time-scale baselines).
    r1, r2, beta, mu : float, default 2, 1, 0.02, 0.2
        Smoothing weights and anchor rates of ``"dsgda"``. The defaults come from a grid on the quadratic at
        kappa = 80 (4-node ring, lr 0.05-0.1; docs/notes/optim.md): a slow primal anchor (small beta) with a
        strong primal smoothing (r1 > l) is what keeps equal steps stable there.
    tau : float, default 10
        Time-scale ratio of ``"tt-gda"`` and ``"gt-gda"``.
    x0, y0 : torch.Tensor, optional
        Start (the same on every node); default zeros (``TorchProblem``: its current parameters).
    engine : InProcess or Distributed, optional
        Default :class:`InProcess` (all nodes here).
    record_every : int, default 10
        History interval; the first and the last step are recorded too.
    tol : float, optional
        Stop once the stationarity measure is below ``tol`` at a recorded step.

    Returns
    -------
    MinimaxResult

    Examples
    --------
    >>> from fastnips.optim import Quadratic, ring
    >>> res = decentralized_minimax(Quadratic(5.0, nodes=4), ring(4), steps=200)
    >>> res.history[-1]["stationarity"] < res.history[0]["stationarity"]
    True
    """
    _check(method, lr, steps, record_every, tol, {"r1": r1, "r2": r2, "beta": beta, "mu": mu, "tau": tau})
    steps, record_every = int(steps), int(record_every)
    if problem.nodes != topology.size:
        raise ValueError(f"the problem is split over {problem.nodes} nodes but the topology has {topology.size}")
    eng = engine if engine is not None else InProcess(topology)
    local = eng.nodes
    x = _start(x0, getattr(problem, "x0", None), problem.n_x, len(local), "x0")
    y = _start(y0, getattr(problem, "y0", None), problem.n_y, len(local), "y0")
    z, v = x.clone(), y.clone()
    cx = lr / tau if method in ("tt-gda", "gt-gda") else lr
    track = method in ("dsgda", "gt-gda")
    sx = sy = gx_prev = gy_prev = None
    degree = max(sum(j != i for j in n) for i, n in enumerate(topology.neighbours))  # W[i, i] may be 0
    res = MinimaxResult(x, y, floats_sent_per_step=degree * (2 if track else 1) * (problem.n_x + problem.n_y))
    for k in range(steps):
        gx, gy = _grads(problem, local, x, y, k)
        if track:
            sx = gx if sx is None else eng.mix(sx) + gx - gx_prev
            sy = gy if sy is None else eng.mix(sy) + gy - gy_prev
            gx_prev, gy_prev = gx, gy
        else:
            sx, sy = gx, gy
        if method == "dsgda":
            x_new = eng.mix(x) - lr * (sx + r1 * (x - z))
            y_new = eng.mix(y) + lr * (sy - r2 * (y - v))
            z = z + beta * (x_new - z)
            v = v + mu * (y_new - v)
        else:
            x_new = eng.mix(x) - cx * sx
            y_new = eng.mix(y) + lr * sy
        x, y = x_new, y_new
        if (k + 1) % record_every == 0 or k == 0 or k == steps - 1:  # the final iterate is always recorded
            rec = _record(problem, eng, x, y, k + 1)
            res.history.append(rec)
            if not torch.isfinite(x).all() or not torch.isfinite(y).all() or rec["stationarity"] > 1e12:
                break
            if tol is not None and rec["stationarity"] <= tol:
                break
    res.x, res.y = x, y
    return res


def _grads(problem, nodes: list, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The stacked local gradients of ``nodes``: the problem's batched ``local_grads`` where it has one (the same
    numbers for any subset of nodes, so both engines agree bitwise), else one ``local_grad`` call per node."""
    batched = getattr(problem, "local_grads", None)
    if batched is not None:
        return batched(nodes, x, y, step)
    g = [problem.local_grad(i, x[r], y[r], step) for r, i in enumerate(nodes)]
    return torch.stack([a for a, _ in g]), torch.stack([b for _, b in g])


def _start(given, default, n: int, L: int, name: str) -> torch.Tensor:
    t = given if given is not None else default
    t = torch.zeros(n, dtype=torch.float64) if t is None else torch.as_tensor(t, dtype=torch.float64)
    if t.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    return t.expand(L, n).clone()


def _record(problem, eng, x, y, step: int) -> dict:
    xb, yb = eng.mean(x), eng.mean(y)
    dev = ((x - xb) ** 2).sum(1) + ((y - yb) ** 2).sum(1)
    return {"step": step, "stationarity": problem.stationarity(xb, yb), "consensus": float(eng.mean(dev[:, None])[0])}
