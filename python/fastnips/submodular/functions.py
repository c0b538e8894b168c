r"""Set functions as numpy objects: the pairwise network (:class:`PairwiseSubmodular`) and the two hand-set
functions of data summarisation (:class:`FeatureBased`, :class:`FacilityLocation`).

Each object has ``n`` (the ground set :math:`V = \{0, \dots, n-1\}`), ``alpha`` (1 for submodular, the
guaranteed :math:`\alpha` otherwise) and ``values(masks)``: :math:`f(S) - f(\emptyset)` for the rows of a
boolean ``(B, n)`` array. These are the reference evaluations: greedy, the certificate and the torch network
are all checked against them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

__all__ = ["FacilityLocation", "FeatureBased", "PairwiseSubmodular", "alpha_for_rho", "rho_for_alpha"]


class SetFunction(Protocol):  # the type of the `fn` arguments (not exported)
    """What greedy and the certificate need of a set function: the ground-set size ``n``, the guaranteed
    ``alpha`` (1: submodular) and ``values(masks)``, :math:`f(S) - f(\\emptyset)` per boolean row."""

    n: int
    alpha: float

    def values(self, masks: ArrayLike) -> np.ndarray:
        """:math:`f(S) - f(\\emptyset)` for each boolean row of ``masks`` (shape ``(B, n)``)."""

CONCAVE = {"sqrt": np.sqrt, "log": np.log1p, "sigmoid": lambda x: x / (1.0 + x)}  # apricot's names


def alpha_for_rho(rho: float) -> float:
    r"""The :math:`\alpha` guaranteed when the interactions may exceed the rate bound by a factor :math:`\rho`.

    .. math:: \alpha(\rho) = \rho^{-1} e^{1 - 1/\rho}, \qquad \rho \ge 1,

    decreasing from :math:`\alpha(1) = 1`. (A derivation of ours; see :class:`PairwiseSubmodular`.)

    Parameters
    ----------
    rho : float
        The relaxation factor, :math:`\rho \ge 1`.

    Returns
    -------
    float
        :math:`\alpha \in (0, 1]`.

    Examples
    --------
    >>> round(alpha_for_rho(2.0), 4)
    0.8244
    """
    rho = float(rho)
    if not np.isfinite(rho) or rho < 1.0:
        raise ValueError(f"rho must be a finite number >= 1, got {rho}")
    return float(np.exp(1.0 - 1.0 / rho) / rho)


def rho_for_alpha(alpha: float) -> float:
    r"""The largest relaxation :math:`\rho` whose guarantee is a given :math:`\alpha`: the inverse of
    :func:`alpha_for_rho`, :math:`\rho = -1 / W_0(-\alpha / e)` (Lambert's :math:`W`, principal branch).

    Parameters
    ----------
    alpha : float
        The wanted :math:`\alpha \in (0, 1]`.

    Returns
    -------
    float
        :math:`\rho \ge 1` (exactly 1 for :math:`\alpha = 1`).

    Examples
    --------
    >>> round(rho_for_alpha(alpha_for_rho(3.0)), 9)
    3.0
    """
    alpha = float(alpha)
    if not np.isfinite(alpha) or not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha}")
    if alpha == 1.0:
        return 1.0
    from scipy.special import lambertw

    return float(-1.0 / lambertw(-alpha / np.e, 0).real)


def _array(x, name: str, ndim: int, *, nonneg: bool = True) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")
    if nonneg and a.size and a.min() < 0:
        raise ValueError(f"{name} must be >= 0 (this keeps f monotone submodular), got a minimum of {a.min():g}")
    return a


def masks_of(masks: ArrayLike, n: int) -> np.ndarray:
    """``masks`` as a boolean ``(B, n)`` array (a single 1-D mask becomes one row)."""
    m = np.asarray(masks)
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2 or m.shape[1] != n:
        raise ValueError(f"masks must have shape (B, {n}) (one boolean row per set), got {np.shape(masks)}")
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError("masks must hold booleans or 0/1")
        m = m.astype(bool)
    return m


@dataclass(frozen=True, eq=False)
class PairwiseSubmodular:
    r"""A monotone (:math:`\alpha`-)submodular function with pairwise interactions, submodular by construction.

    For channels :math:`c = 1..C`, with :math:`m_{ca} \ge 0` and interaction factors :math:`U_{ca}`,

    .. math::
        g_c(S) = \sum_{a \in S} m_{ca} + \sum_{\{a, b\} \subseteq S} w_{cab}, \qquad
        w_{cab} = \rho\,\kappa_c\, m_{ca} m_{cb}\, \sigma(\langle U_{ca}, U_{cb} \rangle),

        h_c(S) = \varphi_c(g_c(S)), \qquad
        \varphi_c(y) = \sum_{r} a_{cr} \frac{1 - e^{-\beta_{cr} y}}{\beta_{cr}}, \quad a \ge 0,\ \beta \ge \kappa,

    then :math:`L` layers :math:`h \leftarrow \log(1 + W_\ell h + b_\ell)` with :math:`W_\ell, b_\ell \ge 0`, and
    :math:`f(S) = \langle v, h(S) \rangle - \langle v, h(\emptyset) \rangle`, :math:`v \ge 0`.

    **Why it is submodular.** :math:`g_c` is monotone *supermodular* (the pairs grow quadratically), and
    a merely concave :math:`\varphi` does not make :math:`\varphi \circ g` submodular. The paper's remedy is
    a *derivative rate-controlled* concave transform. The condition used here, derived by us from the abstract
    (the paper's exact statement is not public): if :math:`-\varphi''/\varphi' \ge \kappa` on
    :math:`[0, \infty)` and :math:`w_{ab} \le \kappa m_a m_b`, then :math:`\varphi \circ g` is monotone
    submodular. Sketch: with :math:`\psi(t) = \varphi(g(S) + t)` and :math:`\Delta_a = g(S+a) - g(S) \ge m_a`,
    the second difference is :math:`\int_{\Delta_a+\Delta_b}^{\Delta_a+\Delta_b+w_{ab}} \psi' +
    \int_0^{\Delta_a}\!\int_0^{\Delta_b} \psi'' \le (w_{ab} - \kappa \Delta_a \Delta_b)\,\psi'(\Delta_a +
    \Delta_b) \le 0`. Each exponential term has rate :math:`\beta_{cr} \ge \kappa_c`, so the mixture
    :math:`\varphi_c` meets the condition, and :math:`\sigma < 1` keeps :math:`w \le \kappa m m` at
    :math:`\rho = 1`. Layers keep it (a nonnegative sum of monotone submodular functions is one, and so is a
    concave nondecreasing function of one: the closure rule of deep submodular functions, Bilmes & Bai 2017).

    **The alpha-submodular variant** (:math:`\rho > 1`, ``alpha < 1``): the same argument with
    :math:`w \le \rho\kappa m m` gives :math:`f(S+a) - f(S) \ge \alpha\,(f(T+a) - f(T))` for
    :math:`S \subseteq T` with :math:`\alpha = e^{1-1/\rho}/\rho` (:func:`alpha_for_rho`; our derivation:
    :math:`\varphi'(g(T)+t) \le e^{-\kappa (g(T)-g(S))}\varphi'(g(S)+t)` and a concave ratio bound give
    :math:`\sup_u e^{-u}(1 + \rho u)`). Greedy then keeps :math:`1 - e^{-\alpha}` of the optimum. The layer
    rule does not carry over to :math:`\alpha < 1`, so this variant has no layers (refused otherwise).

    Parameters
    ----------
    m : array, shape (n, C)
        Modular weights, :math:`\ge 0`.
    U : array, shape (C, n, r)
        Interaction factors (any real values).
    kappa : array, shape (C,)
        Rate bounds :math:`\kappa_c > 0`.
    a, beta : arrays, shape (C, R)
        Mixture weights :math:`\ge 0` and rates :math:`\beta_{cr} \ge \kappa_c`.
    Ws, bs : sequences of arrays
        Layer weights ``(K_l, K_{l-1})`` and offsets ``(K_l,)``, all :math:`\ge 0`; ``K_0 = C``.
    v : array, shape (K_L,)
        Output weights, :math:`\ge 0`.
    alpha : float
        1 (submodular, the default) or the guaranteed :math:`\alpha \in (0, 1)` (sets :math:`\rho`).

    Examples
    --------
    >>> f = PairwiseSubmodular.random(6, seed=0)
    >>> f.values(np.eye(6, dtype=bool)).shape
    (6,)
    """

    m: np.ndarray
    U: np.ndarray
    kappa: np.ndarray
    a: np.ndarray
    beta: np.ndarray
    Ws: tuple = ()
    bs: tuple = ()
    v: np.ndarray | None = None
    alpha: float = 1.0
    rho: float = field(init=False)

    def __post_init__(self):
        put = object.__setattr__
        m, U = _array(self.m, "m", 2), _array(self.U, "U", 3, nonneg=False)
        n, C = m.shape
        if U.shape[:2] != (C, n):
            raise ValueError(f"U must have shape (C, n, r) = ({C}, {n}, r), got {U.shape}")
        kappa, a, beta = _array(self.kappa, "kappa", 1), _array(self.a, "a", 2), _array(self.beta, "beta", 2)
        if kappa.shape != (C,) or not np.all(kappa > 0):
            raise ValueError(f"kappa must hold {C} positive values, got {kappa}")
        if a.shape != beta.shape or a.shape[0] != C:
            raise ValueError(f"a and beta must have shape (C, R) with C = {C}, got {a.shape} and {beta.shape}")
        if np.any(beta < kappa[:, None] * (1 - 1e-12)):
            raise ValueError("beta must be >= kappa per channel (the rate condition -phi''/phi' >= kappa)")
        Ws = tuple(_array(W, f"Ws[{i}]", 2) for i, W in enumerate(self.Ws))
        bs = tuple(_array(b, f"bs[{i}]", 1) for i, b in enumerate(self.bs))
        width = C
        for i, (W, b) in enumerate(zip(Ws, bs, strict=True)):
            if W.shape[1] != width or b.shape != (W.shape[0],):
                raise ValueError(f"layer {i}: W must be (K, {width}) and b (K,), got {W.shape} and {b.shape}")
            width = W.shape[0]
        v = np.ones(width) if self.v is None else _array(self.v, "v", 1)
        if v.shape != (width,):
            raise ValueError(f"v must have shape ({width},), got {v.shape}")
        rho = rho_for_alpha(self.alpha)
        if rho > 1 and Ws:
            raise ValueError("the alpha-submodular variant (alpha < 1) has no layers: the layer rule holds for alpha=1")
        for k, x in dict(m=m, U=U, kappa=kappa, a=a, beta=beta, Ws=Ws, bs=bs, v=v, alpha=float(self.alpha),
                         rho=rho).items():
            put(self, k, x)

    @property
    def n(self) -> int:
        """The size of the ground set."""
        return self.m.shape[0]

    @classmethod
    def random(cls, n: int, *, channels: int = 3, rank: int = 4, terms: int = 2, layers: tuple[int, ...] = (4,),
               alpha: float = 1.0, seed: int = 0) -> PairwiseSubmodular:
        """A random instance (for tests and demos): every parameter drawn from ``seed``."""
        rng = np.random.default_rng(seed)
        kappa = rng.uniform(0.5, 2.0, channels)
        Ws, bs, width = [], [], channels
        for k in layers if alpha == 1.0 else ():
            Ws.append(rng.uniform(0, 1, (k, width)))
            bs.append(rng.uniform(0, 0.5, k))
            width = k
        return cls(m=rng.uniform(0.02, 0.3, (n, channels)), U=rng.normal(0, 1.5, (channels, n, rank)), kappa=kappa,
                   a=rng.uniform(0.2, 1.0, (channels, terms)),
                   beta=kappa[:, None] * (1 + rng.exponential(1.0, (channels, terms))), Ws=tuple(Ws), bs=tuple(bs),
                   v=rng.uniform(0.2, 1.0, width), alpha=alpha)

    def interactions(self, channel: int) -> np.ndarray:
        """The dense ``(n, n)`` matrix :math:`w_{c\\cdot\\cdot}` of one channel (zero diagonal)."""
        u, mc = self.U[channel], self.m[:, channel]
        w = self.rho * self.kappa[channel] * np.outer(mc, mc) * expit(u @ u.T)
        np.fill_diagonal(w, 0.0)
        return w

    def _g(self, masks: np.ndarray) -> np.ndarray:
        x = masks.astype(np.float64)
        g = x @ self.m
        if self.n <= 256:  # dense interactions
            for c in range(self.m.shape[1]):
                g[:, c] += 0.5 * np.einsum("bi,bi->b", x @ self.interactions(c), x)
            return g
        for i, row in enumerate(masks):  # large ground sets: only the pairs inside each set
            idx = np.flatnonzero(row)
            for c in range(self.m.shape[1]):
                u, mc = self.U[c, idx], self.m[idx, c]
                w = self.rho * self.kappa[c] * np.outer(mc, mc) * expit(u @ u.T)
                g[i, c] += 0.5 * (w.sum() - np.trace(w))
        return g

    def _top(self, g: np.ndarray) -> np.ndarray:
        h = np.einsum("cr,bcr->bc", self.a, -np.expm1(-self.beta[None] * g[:, :, None]) / self.beta[None])
        for W, b in zip(self.Ws, self.bs, strict=True):
            h = np.log1p(h @ W.T + b)
        return h @ self.v

    def values(self, masks: ArrayLike) -> np.ndarray:
        """:math:`f(S) - f(\\emptyset)` for each boolean row of ``masks`` (shape ``(B, n)``)."""
        masks = masks_of(masks, self.n)
        return self._top(self._g(masks)) - self._top(np.zeros((1, self.m.shape[1])))[0]


@dataclass(frozen=True, eq=False)
class FeatureBased:
    r"""Feature-based function :math:`f(S) = \sum_d w_d\, \phi\big(\sum_{a \in S} X_{ad}\big)` (apricot's
    ``FeatureBasedSelection``; Kirchhoff & Bilmes 2014), monotone submodular for :math:`X, w \ge 0` and
    concave nondecreasing :math:`\phi`: ``"sqrt"``, ``"log"`` (:math:`\log(1+x)`) or ``"sigmoid"``
    (:math:`x/(1+x)`), apricot's names.

    Parameters
    ----------
    X : array, shape (n, D)
        Nonnegative features of the candidates.
    weights : array, shape (D,), optional
        :math:`w \ge 0` (default ones, as apricot).
    concave : {"sqrt", "log", "sigmoid"}
        :math:`\phi`.

    Examples
    --------
    >>> f = FeatureBased(np.eye(3))
    >>> float(f.values(np.array([[True, True, False]]))[0])
    2.0
    """

    X: np.ndarray
    weights: np.ndarray | None = None
    concave: str = "sqrt"
    alpha: float = field(default=1.0, init=False)

    def __post_init__(self):
        X = _array(self.X, "X", 2)
        w = np.ones(X.shape[1]) if self.weights is None else _array(self.weights, "weights", 1)
        if w.shape != (X.shape[1],):
            raise ValueError(f"weights must have shape ({X.shape[1]},), got {w.shape}")
        if self.concave not in CONCAVE:
            raise ValueError(f"concave must be one of {sorted(CONCAVE)}, got {self.concave!r}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "weights", w)

    @property
    def n(self) -> int:
        """The size of the ground set."""
        return self.X.shape[0]

    def values(self, masks: ArrayLike) -> np.ndarray:
        """:math:`f(S)` for each boolean row of ``masks``."""
        masks = masks_of(masks, self.n)
        return CONCAVE[self.concave](masks.astype(np.float64) @ self.X) @ self.weights


@dataclass(frozen=True, eq=False)
class FacilityLocation:
    r"""Facility location :math:`f(S) = \sum_{v} \max\big(0, \max_{a \in S} K_{av}\big)` (apricot's
    ``FacilityLocationSelection``, submodlib's ``FacilityLocationFunction``; Cornuejols et al. 1977), monotone
    submodular for any similarities.

    Parameters
    ----------
    similarity : array, shape (n, n_ground)
        :math:`K_{av}`: similarity of candidate ``a`` to ground point ``v`` (often square and symmetric).

    Examples
    --------
    >>> f = FacilityLocation(np.array([[1.0, 0.5], [0.2, 1.0]]))
    >>> float(f.values(np.array([[True, False]]))[0])
    1.5
    """

    similarity: np.ndarray
    alpha: float = field(default=1.0, init=False)

    def __post_init__(self):
        object.__setattr__(self, "similarity", _array(self.similarity, "similarity", 2, nonneg=False))

    @property
    def n(self) -> int:
        """The size of the ground set."""
        return self.similarity.shape[0]

    def values(self, masks: ArrayLike) -> np.ndarray:
        """:math:`f(S)` for each boolean row of ``masks``."""
        masks = masks_of(masks, self.n)
        return np.array([np.maximum(self.similarity[row].max(axis=0, initial=0.0), 0).sum() for row in masks])
