r"""Minimax problems :math:`\min_x \max_y f(x, y)`, :math:`f = \frac1M \sum_i f_i`, split across M nodes.

Every problem gives node i's gradients ``local_grad(i, x, y, step) -> (g_x, g_y)`` (float64 torch vectors) and a
stationarity measure of the averaged iterate. Stochastic gradients draw their noise from
``numpy.random.default_rng([seed, i, step])``, so a run is the same whichever process computes node i.

* :class:`Quadratic`: :math:`f_i(x, y) = \tfrac12 x^\top A_i x + x^\top B y - \tfrac12 y^\top C y` with
  :math:`\frac1M \sum_i A_i = A` indefinite, :math:`C \succ 0` and :math:`\Phi(x) = \max_y f = \tfrac12 x^\top
  (A + B C^{-1} B^\top) x` convex (PL): nonconvex in x, strongly concave in y, condition number
  :math:`\kappa = \ell / \mu` (:math:`\ell` = the norm of the Hessian of f, :math:`\mu = \lambda_{\min}(C)`).
  Stationarity: :math:`\lVert \nabla \Phi(\bar x) \rVert`.
* :class:`RobustLogistic`: distributionally robust logistic regression on a scikit-learn dataset with per-sample
  weights y, :math:`f = \frac1N \sum_s y_s \ell_s(x) - \frac{\lambda}{2} \lVert y - \mathbf 1 \rVert^2 +
  \alpha \sum_j \frac{x_j^2}{1 + x_j^2}` (nonconvex regulariser), samples split iid or label-skewed.
  Stationarity: :math:`\lVert \nabla \Phi(\bar x) \rVert` with the inner max in closed form.
* :class:`AUCMaximization`: the minimax form of AUC maximisation of Ying, Wen and Lyu (NeurIPS 2016, "Stochastic
  online AUC maximization") for a linear scorer :math:`h = w^\top a` with the positive rate p of the whole data,
  :math:`F = \mathbb E[(1-p)(h-u)^2 I_+ + p(h-v)^2 I_- + 2(1+\alpha)(p\,h I_- - (1-p)\,h I_+)] - p(1-p)\alpha^2
  + \rho \sum_j \frac{w_j^2}{1 + w_j^2}`, minimised over :math:`x = (w, u, v)`, maximised over
  :math:`y = \alpha` (strongly concave, modulus :math:`2p(1-p)`); the same nonconvex regulariser as above.
  Stationarity: :math:`\lVert \nabla \Phi(\bar x) \rVert` with :math:`\alpha^\star` in closed form.
* :class:`TorchProblem`: any user objective ``loss(module, batch)`` of a torch module whose parameters are split
  into a min group and a max group, one batch per node.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch


def _noise(seed: int, i: int, step: int, n: int, sigma: float) -> torch.Tensor:
    if sigma == 0:
        return torch.zeros(n, dtype=torch.float64)
    return torch.from_numpy(np.random.default_rng([seed, i, step]).normal(0, sigma, n))


class Quadratic:
    """A nonconvex-PL quadratic minimax problem with a chosen condition number (module docstring).

    Parameters
    ----------
    kappa : float
        Target :math:`\\kappa \\ge 1` (the realised one is the attribute ``kappa``).
    nodes : int
        M.
    dim : int, default 10
        Size of x and of y.
    heterogeneity : float, default 0.1
        Size of the node-specific parts of :math:`A_i` (they sum to 0).
    noise : float, default 0.0
        Std of Gaussian gradient noise (0: deterministic gradients).
    seed : int, default 0

    Examples
    --------
    >>> p = Quadratic(10.0, nodes=4)
    >>> round(p.kappa)
    10
    """

    def __init__(self, kappa: float, *, nodes: int, dim: int = 10, heterogeneity: float = 0.1, noise: float = 0.0,
                 seed: int = 0):
        if not (kappa >= 1 and np.isfinite(kappa)):
            raise ValueError(f"kappa must be finite and >= 1, got {kappa!r}")
        if not isinstance(nodes, int) or nodes < 1 or not isinstance(dim, int) or dim < 2:
            raise ValueError(f"nodes must be >= 1 and dim >= 2 (integers), got {nodes!r}, {dim!r}")
        rng = np.random.default_rng(seed)
        mu = 1.0 / kappa
        C = np.diag(np.linspace(mu, 1.0, dim))
        Q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        S = Q @ np.diag(np.linspace(0.0, 0.5, dim)) @ Q.T  # Hessian of Phi: PSD, one zero direction
        B0 = rng.standard_normal((dim, dim))
        B = np.sqrt(mu) * B0 / np.linalg.norm(B0, 2)
        A = S - B @ np.linalg.solve(C, B.T)
        D = [rng.standard_normal((dim, dim)) for _ in range(nodes)]
        D = [(d + d.T) / 2 for d in D]
        mean = sum(D) / nodes
        self.A_i = [torch.from_numpy(A + heterogeneity * (d - mean)) for d in D]
        self._A_stack = torch.stack(self.A_i)
        self.A, self.B, self.C, self.S = (torch.from_numpy(m) for m in (A, B, C, S))
        H = np.block([[A, B], [B.T, -C]])
        self.kappa = float(np.linalg.norm(H, 2) / mu)
        self.nodes, self.n_x, self.n_y, self.noise, self.seed = nodes, dim, dim, float(noise), seed
        #: Default start (the saddle point is 0): a fixed random point of the generator.
        self.x0 = torch.from_numpy(rng.standard_normal(dim))
        self.y0 = torch.from_numpy(rng.standard_normal(dim))

    def local_grads(self, nodes: list, x: torch.Tensor, y: torch.Tensor,
                    step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The (noisy) gradients of ``nodes`` at their rows of x, y ((L, n) each), stacked.

        Every product is an elementwise multiply and a row sum, so a node's numbers do not depend on which other
        nodes are computed with it (the in-process and the distributed engines agree bitwise).
        """
        A = self._A_stack[list(nodes)]
        gx = (A * x[:, None, :]).sum(-1) + (self.B[None] * y[:, None, :]).sum(-1)
        gy = (self.B.T[None] * x[:, None, :]).sum(-1) - (self.C[None] * y[:, None, :]).sum(-1)
        if self.noise:
            gx = gx + torch.stack([_noise(self.seed, i, 2 * step, self.n_x, self.noise) for i in nodes])
            gy = gy + torch.stack([_noise(self.seed, i, 2 * step + 1, self.n_y, self.noise) for i in nodes])
        return gx, gy

    def local_grad(self, i: int, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Node i's (noisy) gradients at (x, y)."""
        gx, gy = self.local_grads([i], x[None], y[None], step)
        return gx[0], gy[0]

    def stationarity(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """:math:`\\lVert \\nabla \\Phi(x) \\rVert = \\lVert S x \\rVert`."""
        return float((self.S @ x).norm())


class RobustLogistic:
    """Distributionally robust logistic regression across nodes (module docstring).

    Parameters
    ----------
    X, labels : arrays
        Features (N, p) and labels in {0, 1}.
    nodes : int
    split : {"iid", "label-skewed"}, default "iid"
        iid: a random partition; label-skewed: samples sorted by label, then cut into contiguous parts.
    lam : float, default 1.0
        :math:`\\lambda` (strong concavity in y).
    alpha : float, default 0.01
        Weight of the nonconvex regulariser.
    seed : int, default 0

    Examples
    --------
    >>> import numpy as np
    >>> p = RobustLogistic(np.eye(4), np.array([0, 1, 0, 1]), nodes=2)
    >>> p.n_x, p.n_y
    (4, 4)
    """

    def __init__(self, X: np.ndarray, labels: np.ndarray, *, nodes: int, split: str = "iid", lam: float = 1.0,
                 alpha: float = 0.01, seed: int = 0):
        X, labels = _binary_data(X, labels)
        self.parts = _split(labels, nodes, split, seed)
        self.X = torch.from_numpy(X)
        self.sgn = torch.from_numpy(2.0 * labels - 1)
        self.N, self.nodes, self.lam, self.alpha = X.shape[0], nodes, float(lam), float(alpha)
        self.n_x, self.n_y = X.shape[1], X.shape[0]

    def _losses(self, x: torch.Tensor, idx) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.sgn[idx] * (self.X[idx] @ x)
        return torch.nn.functional.softplus(-m), -torch.sigmoid(-m) * self.sgn[idx]  # loss, d loss / d (X x)

    def local_grad(self, i: int, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Node i's gradients (its samples, weighted M / N so the node average is the global f)."""
        idx = self.parts[i]
        loss, dl = self._losses(x, idx)
        w = self.nodes / self.N
        gx = w * (self.X[idx].T @ (y[idx] * dl)) + self.alpha * 2 * x / (1 + x * x) ** 2
        gy = -self.lam * (y - 1)
        gy[idx] += w * loss
        return gx, gy

    def stationarity(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """:math:`\\lVert \\nabla \\Phi(x) \\rVert` with :math:`y^\\star(x) = 1 + \\ell(x) / (\\lambda N)`."""
        idx = torch.arange(self.N)
        loss, dl = self._losses(x, idx)
        ystar = 1 + loss / (self.lam * self.N)
        g = (self.X.T @ (ystar * dl)) / self.N + self.alpha * 2 * x / (1 + x * x) ** 2
        return float(g.norm())


def _split(labels: np.ndarray, nodes: int, split: str, seed: int) -> list:
    """Sample indices per node: a random partition (iid) or label-sorted contiguous parts (label-skewed)."""
    if split not in ("iid", "label-skewed"):
        raise ValueError(f"split must be 'iid' or 'label-skewed', got {split!r}")
    if not isinstance(nodes, int) or not 1 <= nodes <= len(labels):
        raise ValueError(f"nodes must be an integer in [1, N], got {nodes!r}")
    order = np.random.default_rng(seed).permutation(len(labels))
    if split == "label-skewed":
        order = order[np.argsort(labels[order], kind="stable")]
    return [torch.from_numpy(p) for p in np.array_split(order, nodes)]


def _binary_data(X, labels) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels)
    if X.ndim != 2 or labels.shape != (X.shape[0],) or not set(np.unique(labels).tolist()) <= {0, 1}:
        raise ValueError("X must be (N, p) and labels (N,) in {0, 1}")
    if not np.isfinite(X).all():
        raise ValueError("X must be finite")
    return X, labels


class AUCMaximization:
    """AUC maximisation as a minimax problem across nodes (module docstring; Ying, Wen and Lyu 2016).

    x = (w, u, v) has p + 2 entries, y = (alpha,) one. Each node's loss averages its own samples with weight
    M / N, so the node average is the global objective.

    Parameters
    ----------
    X, labels : arrays
        Features (N, p) and labels in {0, 1}, both classes present.
    nodes : int
    split : {"iid", "label-skewed"}, default "iid"
    rho : float, default 0.01
        Weight of the nonconvex regulariser.
    seed : int, default 0

    Examples
    --------
    >>> import numpy as np
    >>> p = AUCMaximization(np.eye(4), np.array([0, 1, 0, 1]), nodes=2)
    >>> p.n_x, p.n_y
    (6, 1)
    """

    def __init__(self, X: np.ndarray, labels: np.ndarray, *, nodes: int, split: str = "iid", rho: float = 0.01,
                 seed: int = 0):
        X, labels = _binary_data(X, labels)
        self.parts = _split(labels, nodes, split, seed)
        self.p = float(labels.mean())
        if not 0 < self.p < 1:
            raise ValueError("labels must contain both classes")
        self.X, self.pos = torch.from_numpy(X), torch.from_numpy(labels == 1)
        self.N, self.nodes, self.rho = X.shape[0], nodes, float(rho)
        self.n_x, self.n_y = X.shape[1] + 2, 1

    def _objective(self, x: torch.Tensor, alpha: torch.Tensor, idx, weight: float) -> torch.Tensor:
        w, u, v, p = x[:-2], x[-2], x[-1], self.p
        h, pos = self.X[idx] @ w, self.pos[idx]
        per = torch.where(pos, (1 - p) * (h - u) ** 2 - 2 * (1 + alpha) * (1 - p) * h,
                          p * (h - v) ** 2 + 2 * (1 + alpha) * p * h)
        return weight * per.sum() - p * (1 - p) * alpha ** 2 + self.rho * (w * w / (1 + w * w)).sum()

    def _grad(self, x, y, idx, weight):
        """Analytic gradients of :meth:`_objective` (checked against autograd in the tests)."""
        w, u, v, p, alpha = x[:-2], x[-2], x[-1], self.p, y[0]
        A, pos = self.X[idx], self.pos[idx]
        h = A @ w
        dh = torch.where(pos, 2 * (1 - p) * (h - u - 1 - alpha), 2 * p * (h - v + 1 + alpha))
        gx = torch.empty_like(x)
        gx[:-2] = weight * (A.T @ dh) + self.rho * 2 * w / (1 + w * w) ** 2
        gx[-2] = -weight * 2 * (1 - p) * torch.where(pos, h - u, 0.0).sum()
        gx[-1] = -weight * 2 * p * torch.where(pos, 0.0, h - v).sum()
        ga = weight * torch.where(pos, -2 * (1 - p) * h, 2 * p * h).sum() - 2 * p * (1 - p) * alpha
        return gx, ga[None]

    def local_grad(self, i: int, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Node i's gradients (its samples, weighted M / N)."""
        return self._grad(x, y, self.parts[i], self.nodes / self.N)

    def alpha_star(self, x: torch.Tensor) -> float:
        """The inner maximiser :math:`\\alpha^\\star = \\mathbb E[p\\,h I_- - (1-p)\\,h I_+] / (p(1-p))`."""
        h = self.X @ x[:-2]
        p = self.p
        return float(torch.where(self.pos, -(1 - p) * h, p * h).mean() / (p * (1 - p)))

    def stationarity(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """:math:`\\lVert \\nabla \\Phi(x) \\rVert` (Danskin: the x-gradient at :math:`\\alpha^\\star`)."""
        a = torch.tensor([self.alpha_star(x)], dtype=torch.float64)
        return float(self._grad(x, a, slice(None), 1.0 / self.N)[0].norm())

    def auc(self, x: torch.Tensor) -> float:
        """ROC AUC of the scores :math:`w^\\top a` on all samples (ties count one half)."""
        from scipy.stats import rankdata

        h = (self.X @ x[:-2]).numpy()
        pos = self.pos.numpy()
        r = rankdata(h)
        n1 = int(pos.sum())
        return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(h) - n1)))


class TorchProblem:
    """A user's minimax problem: ``loss(module, batch)`` minimised over the parameters ``min_params`` and maximised
    over ``max_params`` of ``module``, node i using ``batches[i]``. Gradients by autograd; the stationarity
    measure is the norm of the full gradient of the node-averaged loss.

    Parameters
    ----------
    module : torch.nn.Module
    min_params, max_params : list of torch.nn.Parameter
        Disjoint groups, float64 (the engine works in float64).
    loss : callable (module, batch) -> scalar tensor
    batches : list
        One batch per node.

    Examples
    --------
    >>> import torch
    >>> m = torch.nn.Module(); m.a = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    >>> m.b = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
    >>> p = TorchProblem(m, [m.a], [m.b], lambda mod, t: (mod.a * t).sum() * mod.b.sum() - mod.b.sum() ** 2,
    ...                  [torch.ones(2, dtype=torch.float64)] * 3)
    >>> p.nodes, p.n_x, p.n_y
    (3, 2, 1)
    """

    def __init__(self, module: torch.nn.Module, min_params: list, max_params: list, loss: Callable, batches: list):
        ids_min, ids_max = {id(p) for p in min_params}, {id(p) for p in max_params}
        if not min_params or not max_params or ids_min & ids_max:
            raise ValueError("min_params and max_params must be non-empty and disjoint parameter groups")
        if any(p.dtype != torch.float64 for p in (*min_params, *max_params)):
            raise TypeError("the parameter groups must be float64 (module.double())")
        if not batches:
            raise ValueError("batches must hold one batch per node")
        self.module, self.pmin, self.pmax, self.loss, self.batches = module, list(min_params), list(max_params), \
            loss, list(batches)
        self.nodes = len(self.batches)
        self.n_x = sum(p.numel() for p in self.pmin)
        self.n_y = sum(p.numel() for p in self.pmax)
        vec = torch.nn.utils.parameters_to_vector
        self.x0, self.y0 = vec(self.pmin).detach().clone(), vec(self.pmax).detach().clone()

    def _grads(self, x, y, batches):
        to_params = torch.nn.utils.vector_to_parameters
        with torch.no_grad():
            to_params(x, self.pmin)
            to_params(y, self.pmax)
        total = sum(self.loss(self.module, b) for b in batches) / len(batches)
        g = torch.autograd.grad(total, self.pmin + self.pmax)
        flat = torch.cat([t.reshape(-1) for t in g])
        return flat[: self.n_x], flat[self.n_x:]

    def local_grad(self, i: int, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Node i's gradients of its batch's loss."""
        return self._grads(x, y, [self.batches[i]])

    def stationarity(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Norm of the gradient of the node-averaged loss in (x, y)."""
        gx, gy = self._grads(x, y, self.batches)
        return float(torch.cat([gx, gy]).norm())
