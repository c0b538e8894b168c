r"""The teacher budget: one ledger that every construction draws from and that never overspends.

A teacher action :math:`a` costs :math:`c(a) = 1` (``unit="calls"``: an agent teacher answers one turn per
call) or :math:`c(a) = |\mathrm{tok}(a)|` (``unit="tokens"``: the completion tokens the teacher generated,
counted by ``tokenizer``; UTF-8 bytes by default, the byte-level student's tokens). A construction stops at
the first action it cannot afford, so a finished build leaves

.. math::  0 \le B - \sum_i c(a_i) < c(a_{\text{refused}}) \le \max_a c(a),

the budget used "to within one teacher call". Rejected (filtered-out) teacher actions are charged like kept
ones: the budget counts what the teacher produced, not what survived the filter -- the point of the paper's
comparison (Section 4 of the notes on paper 6, "A Few Teacher Steps Go a Long Way", ICML 2026).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .protocols import BudgetExceededError

__all__ = ["UNITS", "Ledger"]

UNITS = ("calls", "tokens")


def _utf8_len(text: str) -> Sequence[int]:
    return text.encode("utf-8")


class Ledger:
    r"""A teacher budget :math:`B` and the charges against it.

    Parameters
    ----------
    budget : int
        :math:`B \ge 0`, in ``unit``.
    unit : {"calls", "tokens"}
        One per teacher action, or the tokens of the action's text.
    tokenizer : callable, optional
        ``text -> sequence of tokens`` for ``unit="tokens"`` (e.g. an HF tokenizer's ``encode``); default the
        UTF-8 bytes. Ignored for ``"calls"``.
    parent : Ledger, optional
        Charges are also made on the parent (see :meth:`sub`).

    Examples
    --------
    >>> led = Ledger(5)
    >>> led.charge("go north"), led.spent, led.remaining
    (1, 1, 4)
    >>> Ledger(10, unit="tokens").cost("go north")
    8
    """

    def __init__(self, budget: int, unit: str = "calls", tokenizer: Callable[[str], Sequence] | None = None,
                 parent: Ledger | None = None):
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"budget: expected a non-negative int (teacher {unit}), got {budget!r}")
        if unit not in UNITS:
            raise ValueError(f"unit: expected one of {UNITS}, got {unit!r}")
        if tokenizer is not None and not callable(tokenizer):
            raise TypeError(f"tokenizer: expected a callable text -> tokens, got {type(tokenizer).__name__}")
        self.budget = budget
        self.unit = unit
        self.tokenizer = tokenizer
        self.parent = parent
        self.spent = 0
        self.charges = 0
        self.refused: int | None = None  # the cost of the first action that could not be afforded

    def __repr__(self) -> str:
        return f"Ledger(budget={self.budget}, unit={self.unit!r}, spent={self.spent})"

    @property
    def remaining(self) -> int:
        """Budget left: :math:`B - \\text{spent}` (and never more than the parent has left)."""
        left = self.budget - self.spent
        return left if self.parent is None else min(left, self.parent.remaining)

    def cost(self, action: str) -> int:
        """The cost of one teacher action in this ledger's unit (>= 1)."""
        if self.unit == "calls":
            return 1
        n = len((self.tokenizer or _utf8_len)(action))
        return max(1, int(n))  # an empty completion still costs the call's end-of-turn token

    def can_afford(self, action: str) -> bool:
        """True when charging ``action`` would not exceed the budget; records the first refusal."""
        c = self.cost(action)
        if c <= self.remaining:
            return True
        if self.refused is None:
            self.refused = c
        return False

    def charge(self, action: str) -> int:
        """Spend the cost of ``action``; raise :class:`BudgetExceededError` (spending nothing) if it does not fit."""
        c = self.cost(action)
        if c > self.remaining:
            raise BudgetExceededError(f"teacher budget exhausted: {action!r} costs {c} {self.unit}, "
                                      f"{self.remaining} of {self.budget} left")
        if self.parent is not None:
            self.parent.charge(action)
        self.spent += c
        self.charges += 1
        return c

    def sub(self, amount: int) -> Ledger:
        """A child ledger of at most ``amount`` (capped by what is left here) that also charges this one."""
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise ValueError(f"amount: expected a non-negative int, got {amount!r}")
        return Ledger(min(amount, self.remaining), self.unit, self.tokenizer, parent=self)

    def summary(self) -> dict:
        """``{"budget", "spent", "unit", "charges", "refused"}`` (plain values, for dataset headers)."""
        return {"budget": self.budget, "spent": self.spent, "unit": self.unit, "charges": self.charges,
                "refused": self.refused}
