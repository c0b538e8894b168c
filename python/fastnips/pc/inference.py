r"""Public inference functions of predictive coding, deep feedback control and Approx PC (validation,
dispatch), over a :class:`fastnips.pc.PCNet` and a batch ``x`` (B, n_0), ``y`` (B, n_L).

PC's inner loop is the hot path and has three backends: ``reference`` (autograd on the energy,
:mod:`fastnips.pc.reference`), ``fused`` (the hand-derived gradient in preallocated buffers with in-place
updates; CPU and CUDA tensors, :mod:`fastnips.pc._fused`) and ``triton`` (two fused matmul kernels per layer and
step, :mod:`fastnips.kernels.pc`; CUDA float32 tensors, or CPU under ``TRITON_INTERPRET=1``). ``auto`` picks
triton, then fused, then reference, among those that run where ``x`` lives.
"""

from __future__ import annotations

import torch

from .. import _backend
from ._fused import pc_infer_fused
from .approx import approx_pc_infer
from .network import PCNet, check_count, check_positive
from .reference import Inference, dfc_infer, feedforward_jacobians, pc_infer

__all__ = ["PC_BACKENDS", "approx_pc_inference", "dfc_inference", "pc_inference"]

PC_BACKENDS = ("reference", "fused", "triton")
_CLAMPS = ("soft", "hard")


def _known(names) -> list[str]:
    # "fused" is a backend name this field proposes; until fastnips._backend lists it, dispatch skips it
    return [b for b in names if b in _backend.BACKENDS]


def _triton_check(net: PCNet, x: torch.Tensor):
    def check(name: str) -> str:
        if name == "triton" and x.dtype != torch.float32:
            return f"the Triton PC kernels take float32, got {x.dtype}"
        return ""
    return check


def resolve_pc_backend(backend: str, net: PCNet, x: torch.Tensor) -> str:
    """The concrete backend of :func:`pc_inference` for these inputs (``_backend.resolve``)."""
    where = _backend.location(x)
    order = ("triton", "fused", "reference") if where == "cuda" else ("fused", "reference")
    return _backend.resolve(backend, op="pc_inference", supported=_known(PC_BACKENDS), like=x,
                            auto=_known(order), check=_triton_check(net, x))


def _check_common(net: PCNet, x: torch.Tensor, y: torch.Tensor, steps: int) -> None:
    if not isinstance(net, PCNet):
        raise TypeError(f"net must be a fastnips.pc.PCNet, got {type(net).__name__}")
    check_count("steps (inference steps)", steps)
    net.check_batch(x, y)


def pc_inference(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, gamma: float = 1.0, clamp: str = "soft",
                 steps: int = 20, lr: float = 0.1, tol: float = 0.0, backend: str = "auto") -> Inference:
    r"""Predictive-coding inference: gradient descent on
    :math:`E = \tfrac12\sum_l\|x_l - \mu_l\|^2 + \tfrac1{2\gamma}\|y - x_L\|^2` from the feedforward state.

    Parameters
    ----------
    net : PCNet
    x : Tensor (B, n_0)
    y : Tensor (B, n_L)
    gamma : float
        Soft-clamp variance, > 0 (small: the output is pulled hard to y). Ignored by ``clamp="hard"``.
    clamp : {"soft", "hard"}
        ``"hard"`` fixes :math:`x_L = y` (the gamma -> 0 limit).
    steps : int
        Inference steps, >= 1 (an upper bound when ``tol`` > 0).
    lr : float
        Step size (the soft-clamped output node uses lr / (1 + 1/gamma)).
    tol : float
        Stop when no state moves more than ``tol`` in a step (0: run all ``steps``).
    backend : {"auto", "reference", "fused", "triton"}

    Returns
    -------
    Inference
        States, errors :math:`\varepsilon_l`, iterations, converged.

    Examples
    --------
    >>> net = PCNet([4, 8, 2], dtype=torch.float64)
    >>> x, y = torch.randn(3, 4, dtype=torch.float64), torch.zeros(3, 2, dtype=torch.float64)
    >>> pc_inference(net, x, y, gamma=0.5, steps=10).errors[-1].shape
    torch.Size([3, 2])
    """
    _check_common(net, x, y, steps)
    if clamp not in _CLAMPS:
        raise ValueError(f"clamp must be one of {_CLAMPS}, got {clamp!r}")
    g = None if clamp == "hard" else check_positive("gamma", gamma, what=" (the soft-clamp variance)")
    lr = check_positive("lr", lr)
    if not (float(tol) >= 0):
        raise ValueError(f"tol must be >= 0, got {tol!r}")
    b = resolve_pc_backend(backend, net, x)
    if b == "reference":
        return pc_infer(net, x, y, gamma=g, steps=steps, lr=lr, tol=float(tol))
    return pc_infer_fused(net, x, y, gamma=g, steps=steps, lr=lr, tol=float(tol), triton=b == "triton")


def dfc_inference(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, alpha: float = 1.0,
                  Q: list[torch.Tensor] | None = None, steps: int = 100, dt: float = 0.2, tau_v: float = 1.0,
                  tau_u: float = 1.0, tol: float = 0.0) -> Inference:
    r"""Deep feedback control: Euler steps of :math:`\tau_v\dot v_l = -v_l + \mu_l(v_{l-1}) + Q_l u` and the
    leaky integral controller :math:`\tau_u\dot u = (y - v_L) - \alpha u` from the feedforward state, u = 0.

    Parameters
    ----------
    net, x, y
        As :func:`pc_inference`.
    alpha : float
        Controller leak, > 0 (plays PC's gamma: equal equilibria in linear networks for Q = J^T).
    Q : list of Tensor, optional
        Feedback ``Q[l-1]`` of shape (n_l, n_L) (shared) or (B, n_l, n_L); default the per-sample
        :math:`J_l^\top` at the feedforward state.
    steps, dt, tau_v, tau_u, tol
        Euler steps (>= 1), step size and time constants (> 0), early-stop tolerance.

    Returns
    -------
    Inference
        ``extra["u"]`` is the controller.
    """
    _check_common(net, x, y, steps)
    alpha = check_positive("alpha", alpha, what=" (the controller leak)")
    for name, v in (("dt", dt), ("tau_v", tau_v), ("tau_u", tau_u)):
        check_positive(name, v)
    if Q is None:
        _, J = feedforward_jacobians(net, x)
        Q = [j.transpose(1, 2) for j in J]
    elif len(Q) != net.depth or any(q.shape[-2:] != (n, net.sizes[-1]) for q, n in zip(Q, net.sizes[1:])):
        raise ValueError(f"Q must list {net.depth} matrices of shapes (n_l, n_L) = "
                         f"{[(n, net.sizes[-1]) for n in net.sizes[1:]]}, got {[tuple(q.shape) for q in Q]}")
    return dfc_infer(net, x, y, Q, alpha=alpha, steps=steps, dt=float(dt), tau_v=float(tau_v), tau_u=float(tau_u),
                     tol=float(tol))


def approx_pc_inference(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, gamma: float = 1.0, subgoals: int = 4,
                        steps_per_subgoal: int = 1) -> Inference:
    r"""Approx PC: one controller u, feedback :math:`Q_l = J_l^\top` from the feedforward state, driving the
    network toward the subgoals :math:`\hat y + \tfrac kS(y - \hat y)` (:mod:`fastnips.pc.approx`).

    Parameters
    ----------
    net, x, y
        As :func:`pc_inference`.
    gamma : float
        As PC's soft clamp, > 0.
    subgoals : int
        S >= 1.
    steps_per_subgoal : int
        Controller steps per subgoal, >= 1.

    Returns
    -------
    Inference
        ``iterations`` = S x steps_per_subgoal forward sweeps; ``extra["u"]`` the controller.
    """
    _check_common(net, x, y, 1)
    gamma = check_positive("gamma", gamma, what=" (the soft-clamp variance)")
    check_count("subgoals", subgoals)
    check_count("steps_per_subgoal", steps_per_subgoal)
    return approx_pc_infer(net, x, y, gamma=gamma, subgoals=subgoals, steps_per_subgoal=steps_per_subgoal)
