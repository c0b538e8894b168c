r"""scikit-learn estimators of deep scalar-on-function regression: :class:`CurveCoefficients` (curves to basis
coefficients, a transformer for pipelines) and :class:`FunctionalRegressor` (coefficients + network).

Inputs ``X`` (every method): a list with one entry per subject, each a ``(t_i, x_i)`` pair (one functional
predictor) or a list of such pairs (several predictors, the same number for every subject); or, with scikit-fda,
an ``FDataGrid`` / ``FDataIrregular`` (one predictor). A list indexes like any sequence, so
``cross_val_score``, ``GridSearchCV`` and pipelines work on it.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .basis import BSplineBasis, FourierBasis
from .coefficients import curve_coefficients
from .curves import CurvesLike, PackedCurves, as_packed
from .fpca import FPCA

__all__ = ["CurveCoefficients", "FunctionalRegressor"]

_BASES = ("bspline", "fourier", "fpca")


def split_predictors(X: CurvesLike) -> list[PackedCurves]:
    """One :class:`PackedCurves` per functional predictor of ``X`` (see the module docstring)."""
    if type(X).__name__ in ("FDataGrid", "FDataIrregular") or isinstance(X, PackedCurves):
        return [as_packed(X)]
    if not isinstance(X, list | tuple) or len(X) == 0:
        raise ValueError("X must be a non-empty list of (t, x) pairs (or of lists of pairs, one per predictor), "
                         f"an FDataGrid or an FDataIrregular; got {type(X).__name__}")
    first = X[0]
    multi = isinstance(first, list | tuple) and len(first) > 0 and isinstance(first[0], list | tuple) \
        and len(first[0]) == 2 and np.ndim(first[0][0]) == 1
    if not multi:
        return [as_packed(list(X))]
    p = len(first)
    for i, item in enumerate(X):
        if not (isinstance(item, list | tuple) and len(item) == p):
            raise ValueError(f"subject {i}: expected {p} (t, x) pairs (one per predictor) like subject 0")
    return [as_packed([item[k] for item in X]) for k in range(p)]


def _domain(packed: PackedCurves, margin: float) -> tuple[float, float]:
    lo, hi = float(packed.t.min()), float(packed.t.max())
    span = hi - lo if hi > lo else 1.0
    return lo - margin * span, hi + margin * span


class CurveCoefficients(TransformerMixin, BaseEstimator):
    r"""Curves to basis coefficients, per functional predictor, concatenated: a scikit-learn transformer.

    ``basis="bspline"`` / ``"fourier"``: :func:`fastnips.functional.curve_coefficients` with ``n_basis``
    functions (Fourier: the next odd number) and penalty ``smoothing``; ``"fpca"``: the scores of an
    :class:`fastnips.functional.FPCA` with ``n_components`` components over a B-spline basis of ``n_basis``
    functions, fitted on the training curves.

    Parameters
    ----------
    basis : {"bspline", "fourier", "fpca"}
    n_basis : int
        :math:`K` per predictor.
    n_components : int
        FPCA components per predictor (``basis="fpca"``).
    smoothing : float
        :math:`\lambda` of the roughness penalty (second derivative).
    domain_range : (float, float), optional
        The common domain of the curves; default: the training times' range widened by ``domain_margin`` of its
        length on each side (so that held-out curves sampled slightly outside it are still accepted).
    domain_margin : float
        See ``domain_range``.
    backend : {"auto", "reference", "cpp"}
        Of the coefficient solves.

    Examples
    --------
    >>> t = np.linspace(0, 1, 20)
    >>> CurveCoefficients(n_basis=6).fit_transform([(t, t), (t, t**2)]).shape
    (2, 6)
    """

    def __init__(self, basis: str = "bspline", n_basis: int = 12, n_components: int = 5, smoothing: float = 1e-4,
                 domain_range: tuple[float, float] | None = None, domain_margin: float = 0.05,
                 backend: str = "auto") -> None:
        self.basis = basis
        self.n_basis = n_basis
        self.n_components = n_components
        self.smoothing = smoothing
        self.domain_range = domain_range
        self.domain_margin = domain_margin
        self.backend = backend

    def _make_basis(self, domain):
        if self.basis == "fourier":
            return FourierBasis(int(self.n_basis) | 1, domain)
        return BSplineBasis(int(self.n_basis), domain)

    def fit(self, X: CurvesLike, y: object = None) -> CurveCoefficients:
        """Fix the domain and, for ``basis="fpca"``, fit one FPCA per predictor."""
        if self.basis not in _BASES:
            raise ValueError(f"basis must be one of {_BASES}, got {self.basis!r}")
        preds = split_predictors(X)
        self.n_predictors_ = len(preds)
        self.bases_ = [self._make_basis(self.domain_range or _domain(p, self.domain_margin)) for p in preds]
        self.fpca_ = [FPCA(int(self.n_components), b, smoothing=self.smoothing, backend=self.backend).fit(p)
                      for p, b in zip(preds, self.bases_)] if self.basis == "fpca" else []
        return self

    def transform(self, X: CurvesLike) -> np.ndarray:
        """The coefficients ``(n_subjects, n_predictors * K)``."""
        check_is_fitted(self, "bases_")
        preds = split_predictors(X)
        if len(preds) != self.n_predictors_:
            raise ValueError(f"X has {len(preds)} functional predictors, the fit had {self.n_predictors_}")
        if self.fpca_:
            return np.hstack([f.transform(p) for f, p in zip(self.fpca_, preds)])
        return np.hstack([curve_coefficients(p, b, smoothing=self.smoothing, backend=self.backend)
                          for p, b in zip(preds, self.bases_)])


class FunctionalRegressor(RegressorMixin, BaseEstimator):
    r"""Deep scalar-on-function regression: basis coefficients of every curve, standardised, into an equal-width
    or a bottleneck network trained by Adam on the squared error (paper 14; a reconstruction from the abstract).

    .. math:: \hat f = \arg\min_{f \in \mathcal{F}} \frac1n \sum_i (y_i - f(\hat c_i))^2, \qquad
              \mathcal{F} = \text{EqualWidthNet or BottleneckNet}.

    Choices the abstract leaves open: coefficients and the response are standardised with the training mean and
    deviation; ``validation_fraction`` of the training set (a seeded split) picks the epoch with the lowest
    validation loss (checked every ``eval_every`` epochs; the weights of that epoch are kept, the network is
    not refitted on the validation part); weight decay is the only other regulariser.

    Parameters
    ----------
    architecture : {"equal_width", "bottleneck"}
    n_index : int
        :math:`d` of the bottleneck.
    width, depth : int
        Of the equal-width part.
    basis, n_basis, n_components, smoothing, domain_range : see :class:`CurveCoefficients`.
    epochs, batch_size, lr, weight_decay : training.
    validation_fraction : float in [0, 0.5)
        0: train on everything for ``epochs``.
    eval_every, patience : int
        Validation every ``eval_every`` epochs; training stops after ``patience`` checks without improvement.
    seed : int
        Seeds the split, the initialisation and the batches (results reproduce on one torch thread).
    backend : {"auto", "reference", "cpp"}

    Examples
    --------
    >>> from fastnips.functional import gaussian_process_curves, functional_linear_response
    >>> curves, Z = gaussian_process_curves(60, seed=0)
    >>> y, _ = functional_linear_response(Z, seed=0)
    >>> X = [curves.curve(i) for i in range(60)]
    >>> FunctionalRegressor(epochs=5, width=8).fit(X, y).predict(X).shape
    (60,)
    """

    def __init__(self, architecture: str = "equal_width", n_index: int = 2, width: int = 32, depth: int = 2,
                 basis: str = "bspline", n_basis: int = 12, n_components: int = 5, smoothing: float = 1e-4,
                 domain_range: tuple[float, float] | None = None, epochs: int = 300, batch_size: int = 32,
                 lr: float = 1e-3, weight_decay: float = 1e-4, validation_fraction: float = 0.2,
                 eval_every: int = 5, patience: int = 20, seed: int = 0, backend: str = "auto") -> None:
        self.architecture, self.n_index, self.width, self.depth = architecture, n_index, width, depth
        self.basis, self.n_basis, self.n_components, self.smoothing = basis, n_basis, n_components, smoothing
        self.domain_range, self.epochs, self.batch_size, self.lr = domain_range, epochs, batch_size, lr
        self.weight_decay, self.validation_fraction, self.eval_every = weight_decay, validation_fraction, eval_every
        self.patience = patience
        self.seed, self.backend = seed, backend

    def _check_params(self) -> None:
        if self.architecture not in ("equal_width", "bottleneck"):
            raise ValueError(f"architecture must be 'equal_width' or 'bottleneck', got {self.architecture!r}")
        for name in ("epochs", "batch_size", "eval_every", "patience", "width", "depth", "n_index"):
            v = getattr(self, name)
            if not (isinstance(v, int | np.integer) and v >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not 0 <= self.validation_fraction < 0.5:
            raise ValueError(f"validation_fraction must lie in [0, 0.5), got {self.validation_fraction!r}")
        if not (self.lr > 0 and self.weight_decay >= 0):
            raise ValueError("lr must be > 0 and weight_decay >= 0")

    def fit(self, X: CurvesLike, y: np.ndarray) -> FunctionalRegressor:
        """Coefficients of the training curves, then the network (see the class docstring)."""
        from ._training import train_network

        self._check_params()
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        self.coefficients_ = CurveCoefficients(self.basis, self.n_basis, self.n_components, self.smoothing,
                                               self.domain_range, backend=self.backend)
        C = self.coefficients_.fit_transform(X)
        if len(C) != len(y):
            raise ValueError(f"X has {len(C)} subjects but y has {len(y)} values")
        self.c_mean_, self.c_scale_ = C.mean(axis=0), C.std(axis=0) + 1e-12
        self.y_mean_, self.y_scale_ = float(y.mean()), float(y.std() + 1e-12)
        self.n_features_coef_ = C.shape[1]
        self.network_, self.history_ = train_network(self, (C - self.c_mean_) / self.c_scale_,
                                                     (y - self.y_mean_) / self.y_scale_)
        return self

    def predict(self, X: CurvesLike) -> np.ndarray:
        """Predicted responses ``(n_subjects,)``."""
        import torch

        check_is_fitted(self, "network_")
        C = (self.coefficients_.transform(X) - self.c_mean_) / self.c_scale_
        with torch.no_grad():
            out = self.network_(torch.as_tensor(C, dtype=torch.float32)).numpy().astype(np.float64)
        return out * self.y_scale_ + self.y_mean_
