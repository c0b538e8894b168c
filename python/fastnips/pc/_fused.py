"""PC inference with the hand-derived energy gradient (no autograd), in preallocated buffers with in-place
updates; with ``triton=True`` each layer's error and update are one Triton kernel each (fastnips.kernels.pc).

The input is clamped, so ``mu_1 = W_1 x_0 + b_1`` is computed once, not at every step (the widest matmul
for image inputs). Per step, from the same state for every layer (as the reference's simultaneous step):
``eps_l = x_l - (f(x_{l-1}) W_l^T + b_l)``; for hidden l: ``x_l += lr (f'(x_l) * (eps_{l+1} W_{l+1}) - eps_l)``;
soft-clamped output: ``x_L += lr s (-eps_L + (y - x_L)/gamma)`` with ``s = 1/(1 + 1/gamma)``.
"""

from __future__ import annotations

import torch

from .network import PCNet, act
from .reference import Inference, errors_of, output_step_scale

_ACT_CODE = {"linear": 0, "tanh": 1, "relu": 2}


def pc_infer_fused(net: PCNet, x: torch.Tensor, y: torch.Tensor, *, gamma: float | None, steps: int, lr: float,
                   tol: float = 0.0, triton: bool = False) -> Inference:
    """Same contract as :func:`fastnips.pc.reference.pc_infer`."""
    L = net.depth
    code = _ACT_CODE[net.activation]
    if triton:
        from fastnips.kernels import pc as K
    with torch.no_grad():
        Ws = [lin.weight.contiguous() for lin in net.layers]
        bs = [None if lin.bias is None else lin.bias.contiguous() for lin in net.layers]
        xs = [t.contiguous() for t in net.states(x.contiguous())]
        mu1 = xs[1].clone()  # the input is clamped: mu_1 = W_1 x_0 + b_1 is the same at every step
        if gamma is None:
            xs[L] = y.clone()
        eps = [torch.empty_like(xs[l]) for l in range(1, L + 1)]
        fx = [xs[0]] + [act(xs[l], net.activation) if net.activation != "linear" else xs[l] for l in range(1, L)]
        buf = [torch.empty_like(xs[l]) for l in range(1, L)]
        sq = [torch.empty_like(xs[l]) for l in range(1, L)]
        out_scale = output_step_scale(gamma)
        it, converged = 0, False
        old = [t.clone() for t in xs[1:]] if tol > 0 else None
        for it in range(1, steps + 1):  # noqa: B007
            torch.sub(xs[1], mu1, out=eps[0])
            for l in range(2, L + 1):
                if triton:
                    K.pc_errors(xs[l - 1], Ws[l - 1], bs[l - 1], xs[l], eps[l - 1], code)
                else:
                    if bs[l - 1] is None:
                        torch.mm(fx[l - 1], Ws[l - 1].T, out=eps[l - 1])
                    else:
                        torch.addmm(bs[l - 1], fx[l - 1], Ws[l - 1].T, out=eps[l - 1])
                    torch.sub(xs[l], eps[l - 1], out=eps[l - 1])
            for l in range(1, L):
                if triton:
                    K.pc_update(xs[l], eps[l - 1], eps[l], Ws[l], lr, code)
                else:
                    _hidden_step(net.activation, xs[l], fx[l], eps[l - 1], eps[l], Ws[l], buf[l - 1], sq[l - 1], lr)
                if net.activation != "linear":
                    _act_into(net.activation, xs[l], fx[l])
            if gamma is not None:
                xs[L].add_((y - xs[L]).div_(gamma).sub_(eps[L - 1]), alpha=lr * out_scale)
            if old is not None:
                change = max(float((a - b).abs().max()) for a, b in zip(xs[1:], old))
                if change < tol:
                    converged = True
                    break
                for a, b in zip(old, xs[1:]):
                    a.copy_(b)
        return Inference(xs, errors_of(net, xs), it, converged, {})


def _act_into(kind: str, x: torch.Tensor, out: torch.Tensor) -> None:
    if kind == "tanh":
        torch.tanh(x, out=out)
    else:
        torch.clamp(x, min=0, out=out)


def _hidden_step(kind, x, fx, eps, eps_next, W_next, g, sq, lr) -> None:
    """In place: ``x += lr (f'(x) * (eps_next W_next) - eps)``, with f'(x) from the cached ``fx = f(x)``."""
    torch.mm(eps_next, W_next, out=g)
    if kind == "tanh":  # f' = 1 - f^2
        torch.mul(fx, fx, out=sq)
        g.addcmul_(g, sq, value=-1.0)
    elif kind == "relu":
        g.mul_(x > 0)
    g.sub_(eps)
    x.add_(g, alpha=lr)
