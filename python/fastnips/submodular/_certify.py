"""The public certificate: :func:`certify`, an exhaustive check of monotonicity and diminishing returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _backend
from .functions import SetFunction
from .reference import REFERENCE_CERTIFY_MAX_N, certify_reference, set_table

__all__ = ["CERTIFY_BACKENDS", "CERTIFY_MAX_N", "Certificate", "certify"]

CERTIFY_BACKENDS = ("reference", "cpp")
CERTIFY_MAX_N = 24  # 2^24 float64 values (128 MiB); csrc/submodular/certify.h: kMaxCertifyN


def _subset(mask: int, n: int) -> tuple[int, ...]:
    return tuple(i for i in range(n) if mask >> i & 1)


@dataclass(frozen=True)
class Certificate:
    """What :func:`certify` returns.

    Attributes
    ----------
    n : int
        Size of the ground set.
    alpha, tol : float
        The :math:`\\alpha` checked and the absolute tolerance used.
    monotone_violations : int
        Pairs (a, S), a not in S, with :math:`f(S + a) - f(S) < -\\mathrm{tol}`.
    dr_violations : int
        Pairs (a, T) for which some :math:`S \\subseteq T` has :math:`d_a(S) < \\alpha d_a(T) - \\mathrm{tol}`.
    first_monotone, first_dr : dict or None
        The first violation (smallest a, then smallest mask): ``a``, ``S`` and ``T`` as tuples of elements,
        ``dS`` and ``dT`` the marginal gains of a at S and T.
    alpha_observed : float
        :math:`\\min d_a(S) / d_a(T)` over :math:`S \\subseteq T` with :math:`d_a(T) > \\mathrm{tol}` (1 when none):
        the largest :math:`\\alpha` the table satisfies.
    backend : str
    """

    n: int
    alpha: float
    tol: float
    monotone_violations: int
    dr_violations: int
    first_monotone: dict | None
    first_dr: dict | None
    alpha_observed: float
    backend: str

    @property
    def ok(self) -> bool:
        """True when there is no violation of either kind."""
        return self.monotone_violations == 0 and self.dr_violations == 0

    def __str__(self) -> str:
        if self.ok:
            return (f"certified on all 2^{self.n} subsets: monotone and {self.alpha:g}-submodular "
                    f"(observed alpha {self.alpha_observed:.6g}, tol {self.tol:.2g})")
        parts = []
        if self.first_monotone:
            v = self.first_monotone
            parts.append(f"{self.monotone_violations} monotonicity violations, first f(S + {v['a']}) - f(S) = "
                         f"{v['dS']:.6g} at S = {v['S']}")
        if self.first_dr:
            v = self.first_dr
            parts.append(f"{self.dr_violations} diminishing-returns violations, first a = {v['a']}: gain "
                         f"{v['dS']:.6g} at S = {v['S']} < {self.alpha:g} x gain {v['dT']:.6g} at T = {v['T']}")
        return "; ".join(parts)


def _table(fn_or_table) -> np.ndarray:
    if hasattr(fn_or_table, "values") and hasattr(fn_or_table, "n"):
        n = fn_or_table.n
        if n > CERTIFY_MAX_N:
            raise ValueError(f"certify enumerates all 2^n subsets: n must be <= {CERTIFY_MAX_N}, got n = {n}")
        return set_table(fn_or_table)
    t = np.ascontiguousarray(np.asarray(fn_or_table, dtype=np.float64))
    if t.ndim != 1:
        raise ValueError(f"the table must be 1-D (f on all 2^n subsets), got shape {t.shape}")
    n = max(len(t).bit_length() - 1, 0)
    if len(t) < 2 or len(t) != 1 << n:
        raise ValueError(f"the table must hold 2^n values with n >= 1, got {len(t)}")
    if n > CERTIFY_MAX_N:
        raise ValueError(f"certify enumerates all 2^n subsets: n must be <= {CERTIFY_MAX_N}, got n = {n}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"the table must be finite; f is NaN or inf at mask {int(np.flatnonzero(~np.isfinite(t))[0])}")
    return t


def certify(fn: SetFunction | np.ndarray, *, alpha: float | None = None, tol: float | None = None,
            backend: str = "auto", n_threads: int = 0) -> Certificate:
    r"""Exhaustive certificate: is :math:`f` monotone and (:math:`\alpha`-)submodular on all :math:`2^n` subsets?

    With :math:`d_a(S) = f(S + a) - f(S)` it checks, for every element :math:`a` and all
    :math:`S \subseteq T \subseteq V \setminus \{a\}`,

    .. math:: d_a(S) \ge -\mathrm{tol}, \qquad d_a(S) \ge \alpha\, d_a(T) - \mathrm{tol},

    the second through the subset minimum :math:`\min_{S \subseteq T} d_a(S)`, a sum-over-subsets transform
    with min for sum: :math:`O(2^n n^2)` operations instead of :math:`O(3^n n)`. For :math:`\alpha = 1` this is
    submodularity itself. The cpp backend runs the elements in parallel (OpenMP); the reference enumerates every
    pair (n <= 12).

    Parameters
    ----------
    fn : set function or array of shape (2^n,)
        An object with ``n`` and ``values(masks)`` (evaluated on all subsets) or the table itself,
        ``table[mask]`` = f of the subset whose bit i is set iff i is in it. n <= 24.
    alpha : float, optional
        The :math:`\alpha \in (0, 1]` to check; default ``fn.alpha`` (1 for a table).
    tol : float, optional
        Absolute tolerance; default :math:`10^{-9} \max(1, \max |f|)` (rounding of float64 evaluations).
    backend : {"auto", "reference", "cpp"}
    n_threads : int
        OpenMP threads (0: OpenMP's default).

    Returns
    -------
    Certificate
        ``ok``, the violation counts and the first violation of each kind.

    Examples
    --------
    >>> import numpy as np
    >>> certify(np.sqrt([0.0, 1.0, 1.0, 2.0])).ok
    True
    >>> certify(np.array([0.0, 1.0, 1.0, 3.0])).dr_violations  # f({0,1}) = 3 > 1 + 1: supermodular
    2
    """
    if alpha is None:
        alpha = float(getattr(fn, "alpha", 1.0))
    alpha = float(alpha)
    if not np.isfinite(alpha) or not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha}")
    if tol is not None and (not np.isfinite(tol) or tol < 0):
        raise ValueError(f"tol must be finite and >= 0, got {tol}")
    table = _table(fn)
    n = len(table).bit_length() - 1
    tol = 1e-9 * max(1.0, float(np.max(np.abs(table)))) if tol is None else float(tol)
    b = _backend.resolve(backend, op="certify", supported=CERTIFY_BACKENDS,
                         check=lambda name: "" if name != "reference" or n <= REFERENCE_CERTIFY_MAX_N else
                         f"the reference enumerates 3^n pairs (n <= {REFERENCE_CERTIFY_MAX_N}), got n = {n}")
    if b == "cpp":
        raw = _backend.native().submodular_certify(table, alpha=alpha, tol=tol, n_threads=n_threads)
    else:
        raw = certify_reference(table, alpha=alpha, tol=tol)

    def first(v):
        if v["a"] < 0:
            return None
        return {"a": int(v["a"]), "S": _subset(int(v["S"]), n), "T": _subset(int(v["T"]), n),
                "dS": float(v["dS"]), "dT": float(v["dT"])}

    return Certificate(n, alpha, tol, int(raw["monotone_violations"]), int(raw["dr_violations"]),
                       first(raw["first_monotone"]), first(raw["first_dr"]), float(raw["alpha_observed"]), b)
