r"""Budgeted builders of teacher-supervised SFT data: the paper's three constructions, BC and DAgger.

Paper 6, "A Few Teacher Steps Go a Long Way: Cost-Efficient On-Policy Data Augmentation for Agent
Post-Training" (ICML 2026): a student imitates a costly teacher; collecting teacher labels at states the
student itself reaches corrects the covariate shift of behaviour cloning (BC); the question is how to spend a
teacher budget :math:`B`. With the student's trajectory :math:`s_0, a_0, \dots, s_{n-1}, a_{n-1}, s_n`
(played for free) and a state :math:`s_t`, :math:`t \sim \mathcal U\{0, \dots, n-1\}` on it:

* ``"continuation"`` -- construction (i): the teacher plays ``k`` steps from :math:`s_t`, every step kept
  (unfiltered). The first row's state is learner-induced (origin ``"student"``), the later ones were reached by
  the teacher (``"teacher"``).
* ``"filtered"`` -- construction (ii): the teacher plays from :math:`s_t` to the end of the episode; the rows
  are kept only if the task is solved (rejection sampling). Rejected steps are still paid for.
* ``"failed_only"`` -- construction (iii): as (ii), but only on tasks whose student rollout failed (a solved
  task costs nothing and is skipped).
* ``"bc"`` -- full teacher episodes from the reset state (origin ``"reset"``), unfiltered.
* ``"dagger"`` -- DAgger's relabelling (Ross et al. 2011, :math:`\beta = 0`): the student plays, the teacher
  labels every state the student visits with one action that is not executed.

Every teacher action is charged to one :class:`~fastnips.rl.teacher.Ledger` before it is used; a build stops
at the first action the budget cannot afford (the spend is within one teacher call of :math:`B`).

Limits, the identities the tests check: with ``states="all"`` and ``k = 1``, "continuation" relabels every
state of every student rollout once, which is DAgger's relabelling row for row -- DAgger spends
:math:`n \le T` teacher calls per student episode, i.e. :math:`T` one-step continuations; with
``execute=False`` (the teacher labels ``k`` consecutive states of the student's rollout, none executed) and
``k = T`` it is DAgger's relabelling again, row for row; from the reset state with ``k >= horizon`` it is BC.

Choices the abstract leaves open, and why:

* The state :math:`s_t` is uniform over the student's trajectory, i.e. drawn from the student's state
  distribution :math:`d_\pi` as in DAgger; ``states="all"`` takes every state of the rollout instead.
* One SFT row per teacher step (prompt: the state's observation, completion: the action), not one row per
  continuation: the student acts step by step, and trl's prompt-completion format then masks the prompt.
* The student rollout is free (no teacher tokens); only teacher actions cost. Environments are deterministic,
  so the builder returns to :math:`s_t` by replaying the student's actions from ``reset(task)`` and checks
  each replayed observation.
* (iii) judges "fails alone" by the same single rollout whose state is then supervised.
"""

from __future__ import annotations

import math

import numpy as np

from .dataset import SFTDataset
from .ledger import Ledger
from .protocols import IllegalActionError, Student, Teacher, TextEnv, check_action, check_protocols, make_prompt

__all__ = ["CONSTRUCTIONS", "build_dataset"]

CONSTRUCTIONS = ("bc", "continuation", "filtered", "failed_only", "dagger")
ON_POLICY = ("continuation", "filtered", "failed_only", "dagger")


class _Build:
    """One build's state: the roles, the ledger, the rows and the counters."""

    def __init__(self, construction, env, teacher, student, ledger, rng):
        self.construction, self.env, self.teacher, self.student = construction, env, teacher, student
        self.ledger, self.rng = ledger, rng
        self.rows: list[dict] = []
        self.episode = -1
        self.stats = {"episodes": 0, "student_rollouts": 0, "student_solved": 0, "segments": 0,
                      "segments_kept": 0, "rows_discarded": 0, "cost_discarded": 0, "stopped": "budget"}

    def new_task(self) -> int:
        self.episode += 1
        self.stats["episodes"] += 1
        return int(self.rng.integers(self.env.n_tasks))

    def row(self, obs, action, origin, cost, task, step) -> dict:
        return {"prompt": make_prompt(obs), "completion": action,
                "metadata": {"construction": self.construction, "origin": origin, "teacher_cost": cost,
                             "task": task, "episode": self.episode, "step": step}}

    def teacher_action(self, plan: list[str], k_left: float, task: int, step: int) -> str:
        """The next planned teacher action (asking the teacher when the plan is empty), checked legal."""
        if not plan:
            ask = int(min(k_left, self.env.horizon))
            got = self.teacher.next_actions(self.env, ask)
            if not isinstance(got, list | tuple) or not got:
                raise IllegalActionError(f"teacher returned {got!r} for next_actions(env, {ask}) at step {step} "
                                         f"of task {task}; expected a non-empty list of actions")
            plan.extend(list(got)[:ask])
        return check_action(plan.pop(0), self.env.available_actions(), "teacher", f"at step {step} of task {task}")

    def segment(self, obs: str, task: int, t0: int, k: float, origin: str) -> tuple[list[dict], str]:
        """Let the teacher play up to ``k`` steps from the current state; ('done' | 'k' | 'budget')."""
        rows: list[dict] = []
        plan: list[str] = []
        n, done = 0, False
        while n < k and not done:
            a = self.teacher_action(plan, k - n, task, t0 + n)
            if not self.ledger.can_afford(a):
                return rows, "budget"
            cost = self.ledger.charge(a)
            self.stats["segments"] += n == 0  # segments that got at least one teacher action
            rows.append(self.row(obs, a, origin if n == 0 else "teacher", cost, task, t0 + n))
            obs, done = self.env.step(a)
            n += 1
        return rows, "done" if done else "k"

    def student_rollout(self, task: int) -> tuple[list[str], list[str], bool]:
        """The student's free episode: (observations s_0..s_n, actions a_0..a_{n-1}, solved)."""
        obs, done = self.env.reset(task), False
        observations, actions = [obs], []
        while not done:
            legal = self.env.available_actions()
            a = check_action(self.student.act(make_prompt(obs), legal, self.rng), legal, "student",
                             f"at step {len(actions)} of task {task}")
            obs, done = self.env.step(a)
            actions.append(a)
            observations.append(obs)
        self.stats["student_rollouts"] += 1
        solved = bool(self.env.success())
        self.stats["student_solved"] += solved
        return observations, actions, solved

    def replay(self, task: int, observations: list[str], actions: list[str], t0: int) -> str:
        """Return the environment to s_t0 of a recorded rollout (checking determinism)."""
        obs = self.env.reset(task)
        for t in range(t0):
            if obs != observations[t]:
                raise RuntimeError(f"env is not deterministic: replaying task {task} gave {obs!r} at step {t}, "
                                   f"the student's rollout saw {observations[t]!r}")
            obs, _ = self.env.step(actions[t])
        return obs


def _bc(b: _Build) -> None:
    while True:
        task = b.new_task()
        rows, status = b.segment(b.env.reset(task), task, 0, math.inf, "reset")
        b.rows += rows
        b.stats["segments_kept"] += bool(rows)
        if status == "budget":
            return


def _on_policy(b: _Build, k: float, states: str, filtered: bool, only_failed: bool, max_free: int) -> None:
    free = 0
    while True:
        task = b.new_task()
        observations, actions, solved = b.student_rollout(task)
        if only_failed and solved:
            free += 1
            if free >= max_free:
                b.stats["stopped"] = f"{max_free} solved rollouts in a row (the student solves the tasks alone)"
                return
            continue
        free = 0
        starts = [int(b.rng.integers(len(actions)))] if states == "one" else range(len(actions))
        for t0 in starts:
            obs = b.replay(task, observations, actions, t0)
            rows, status = b.segment(obs, task, t0, k, "reset" if t0 == 0 else "student")
            keep = not filtered or (status == "done" and b.env.success())
            if keep:
                b.rows += rows
                b.stats["segments_kept"] += bool(rows)
            else:
                b.stats["rows_discarded"] += len(rows)
                b.stats["cost_discarded"] += sum(r["metadata"]["teacher_cost"] for r in rows)
            if status == "budget":
                return


def _relabel_window(b: _Build, k: int) -> None:
    """(i) with ``execute=False``: one-step teacher labels on k consecutive states of each student rollout."""
    while True:
        task = b.new_task()
        observations, actions, _ = b.student_rollout(task)
        n = len(actions)
        t0 = int(b.rng.integers(n - k + 1)) if k < n else 0
        obs = b.replay(task, observations, actions, t0)
        for t in range(t0, min(n, t0 + k)):
            label = b.teacher_action([], 1, task, t)
            if not b.ledger.can_afford(label):
                return
            cost = b.ledger.charge(label)
            b.stats["segments"] += t == t0
            b.rows.append(b.row(obs, label, "reset" if t == 0 else "student", cost, task, t))
            obs, _ = b.env.step(actions[t])  # the student's action, as in the recorded rollout
            if obs != observations[t + 1]:
                raise RuntimeError(f"env is not deterministic: replaying task {task} gave {obs!r} at step {t + 1}")
        b.stats["segments_kept"] += 1


def _dagger(b: _Build) -> None:
    while True:
        task = b.new_task()
        obs, done, t = b.env.reset(task), False, 0
        while not done:
            label = b.teacher_action([], 1, task, t)
            if not b.ledger.can_afford(label):
                return
            cost = b.ledger.charge(label)
            b.stats["segments"] += t == 0
            b.rows.append(b.row(obs, label, "reset" if t == 0 else "student", cost, task, t))
            legal = b.env.available_actions()
            a = check_action(b.student.act(make_prompt(obs), legal, b.rng), legal, "student",
                             f"at step {t} of task {task}")
            obs, done = b.env.step(a)
            t += 1
        b.stats["student_rollouts"] += 1
        b.stats["student_solved"] += bool(b.env.success())
        b.stats["segments_kept"] += 1


def build_dataset(construction: str, env: TextEnv, teacher: Teacher, budget: int | Ledger, *,
                  student: Student | None = None, k: int = 1, states: str = "one", seed: int = 0,
                  unit: str = "calls", tokenizer: object = None, max_free_rollouts: int = 1000,
                  execute: bool = True) -> SFTDataset:
    r"""Spend a teacher budget on one construction and return its SFT rows (module docstring).

    Parameters
    ----------
    construction : {"bc", "continuation", "filtered", "failed_only", "dagger"}
        ``"continuation"``, ``"filtered"``, ``"failed_only"`` are the paper's constructions (i), (ii), (iii).
    env : TextEnv
        Deterministic given the task (see :mod:`fastnips.rl.teacher.protocols`).
    teacher : Teacher
    budget : int or Ledger
        :math:`B` in ``unit``, or a ledger to draw from (then ``unit`` and ``tokenizer`` are the ledger's).
    student : Student
        Required by every construction but ``"bc"``; its rollouts are free.
    k : int
        Continuation length of ``"continuation"`` (``>= 1``; ``k >= env.horizon`` plays to the end).
    states : {"one", "all"}
        Supervise one uniformly drawn state per student rollout, or every state of it.
    seed : int
        Tasks, the student's random choices and the drawn states.
    unit, tokenizer
        See :class:`~fastnips.rl.teacher.Ledger`.
    max_free_rollouts : int
        ``"failed_only"`` stops after this many solved (free) student rollouts in a row, so a student that
        solves everything cannot loop forever; ``info["stopped"]`` says so.
    execute : bool
        ``"continuation"`` only: ``False`` labels ``k`` consecutive states of the student's own rollout (a
        window drawn uniformly inside it) with one teacher action each, none executed -- DAgger on a window;
        with ``k >= horizon`` that is DAgger's relabelling exactly.

    Returns
    -------
    SFTDataset
        The rows and ``info``: construction, k, states, seed, the ledger's summary, the counters.

    Examples
    --------
    >>> from fastnips.rl.teacher import CombinationLock, ScriptedTeacher
    >>> ds = build_dataset("bc", CombinationLock(4), ScriptedTeacher(), 10)
    >>> len(ds), ds.info["spent"]
    (10, 10)
    """
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"construction: expected one of {CONSTRUCTIONS}, got {construction!r}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k: expected a continuation length >= 1 (teacher steps), got {k!r}")
    if states not in ("one", "all"):
        raise ValueError(f"states: expected 'one' or 'all', got {states!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    if isinstance(max_free_rollouts, bool) or not isinstance(max_free_rollouts, int) or max_free_rollouts < 1:
        raise ValueError(f"max_free_rollouts: expected a positive int, got {max_free_rollouts!r}")
    if construction in ON_POLICY and student is None:
        raise ValueError(f"student: construction {construction!r} rolls out a student; pass student=")
    if not execute and (construction != "continuation" or states != "one"):
        raise ValueError("execute=False: only for construction='continuation' with states='one', got "
                         f"construction={construction!r}, states={states!r}")
    check_protocols(env, teacher, student if construction in ON_POLICY else None)
    ledger = budget if isinstance(budget, Ledger) else Ledger(budget, unit, tokenizer)
    b = _Build(construction, env, teacher, student, ledger, np.random.default_rng(seed))
    if construction == "bc":
        _bc(b)
    elif construction == "dagger":
        _dagger(b)
    elif not execute:
        _relabel_window(b, int(k))
    else:
        _on_policy(b, math.inf if construction != "continuation" else int(k), states,
                   filtered=construction != "continuation", only_failed=construction == "failed_only",
                   max_free=max_free_rollouts)
    info = {"construction": construction, "k": int(k) if construction == "continuation" else None,
            "execute": bool(execute), "states": states, "seed": seed, **ledger.summary(), **b.stats}
    return SFTDataset(b.rows, info)
