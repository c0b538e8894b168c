r"""The three roles of teacher-supervised agent SFT, as structural protocols, and the errors they raise.

* :class:`TextEnv` -- a deterministic text environment: ``reset(task) -> observation``, ``step(action) ->
  (observation, done)``, ``available_actions()``, ``success()``, with ``n_tasks`` tasks and an episode horizon
  ``horizon`` (the most steps an episode can take).
* :class:`Teacher` -- ``next_actions(env, k)``: the teacher's next (at most ``k``) actions from the
  environment's current state, without changing that state. A scripted teacher plans them; a step-wise LLM
  teacher returns one action per call (the builders ask again for the rest).
* :class:`Student` -- ``act(prompt, actions, rng)``: one legal action for a prompt; ``fit(rows)``: train on
  SFT rows (from scratch, on all of them, as DAgger's aggregation does).

Determinism is required of environments: ``reset(task)`` followed by the same actions must give the same
observations. The builders replay a student's recorded actions to return to a state it reached (the
protocol has no snapshot/restore, which text games rarely offer) and check every replayed observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "BudgetExceededError",
    "IllegalActionError",
    "Student",
    "Teacher",
    "TextEnv",
    "check_action",
    "make_prompt",
]


class BudgetExceededError(RuntimeError):
    """A charge would take a :class:`~fastnips.rl.teacher.Ledger` past its budget."""


class IllegalActionError(ValueError):
    """An action that is not among the environment's available actions (from a teacher or a student)."""


@runtime_checkable
class TextEnv(Protocol):
    """A deterministic, episodic text environment with a finite set of legal actions per state.

    Attributes
    ----------
    n_tasks : int
        Tasks are ``0 .. n_tasks - 1`` (a game, a lock combination, a start room, an expression).
    horizon : int
        The most steps an episode takes; ``step`` returns ``done=True`` at the latest then.
    """

    n_tasks: int
    horizon: int

    def reset(self, task: int) -> str:
        """Start ``task``; return the first observation."""

    def step(self, action: str) -> tuple[str, bool]:
        """Apply a legal ``action``; return ``(observation, done)``."""

    def available_actions(self) -> list[str]:
        """The legal actions in the current state (non-empty while not done)."""

    def success(self) -> bool:
        """True once the current episode's task is solved."""


@runtime_checkable
class Teacher(Protocol):
    """A costly expert queried at a state for its next actions."""

    def next_actions(self, env: TextEnv, k: int) -> list[str]:
        """Up to ``k`` next actions from ``env``'s current state; must not change that state."""


@runtime_checkable
class Student(Protocol):
    """The policy being trained: maps a prompt and the legal actions to one of them."""

    def act(self, prompt: str, actions: Sequence[str], rng: np.random.Generator) -> str:
        """One of ``actions`` for ``prompt``."""

    def fit(self, rows: Sequence[dict]) -> Student:
        """Train on SFT rows ``{"prompt", "completion", ...}``; return self."""


def make_prompt(observation: str) -> str:
    """The SFT prompt of a state: its observation followed by ``"\\nAction:\\n"``.

    Observations of the shipped environments determine the teacher's action, so the prompt carries no history;
    this keeps the student's input short and makes the tabular student exact. The prompt ends with a newline,
    a token boundary for BPE tokenizers: a trailing space would merge into the completion's first token (GPT-2
    style ``" turn"``), and trl's SFTTrainer would then cut the prompt differently in training and at inference.
    """
    return f"{observation}\nAction:\n"


def check_action(action: object, legal: Sequence[str], who: str, where: str) -> str:
    """Return ``action`` if it is one of ``legal``, else raise :class:`IllegalActionError` naming both."""
    if not isinstance(action, str) or action not in legal:
        shown = list(legal)[:12]
        more = f" (+{len(legal) - 12} more)" if len(legal) > 12 else ""
        raise IllegalActionError(f"{who} returned the illegal action {action!r} {where}; legal actions: "
                                 f"{shown}{more}")
    return action


def check_protocols(env: object, teacher: object = None, student: object = None) -> None:
    """Raise TypeError naming the first argument that does not implement its protocol."""
    for name, obj, proto in (("env", env, TextEnv), ("teacher", teacher, Teacher), ("student", student, Student)):
        if obj is None and name != "env":
            continue
        if not isinstance(obj, proto):
            need = [m for m in ("reset", "step", "available_actions", "success", "next_actions", "act", "fit")
                    if hasattr(proto, m)]
            raise TypeError(f"{name}: expected an object with {need} (the {proto.__name__} protocol), "
                            f"got {type(obj).__name__}")
    n, h = getattr(env, "n_tasks", None), getattr(env, "horizon", None)
    for attr, v in (("n_tasks", n), ("horizon", h)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise TypeError(f"env.{attr}: expected a positive int, got {v!r}")
