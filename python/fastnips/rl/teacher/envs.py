r"""Synthetic text environments that need no download, each with a scripted optimal teacher.

All three follow :class:`~fastnips.rl.teacher.TextEnv`: deterministic given the task, text observations that
determine the teacher's action (the maze's and the calculator's describe the whole state; the lock's names the
rune but not the dial's index, on purpose), a finite legal action set per state, a fixed horizon, and
*recoverable mistakes* -- the
covariate-shift setting of Ross & Bagnell (2010): a student that errs with probability :math:`\epsilon` on the
teacher's states and was never shown how to recover loses :math:`O(\epsilon T^2)`, one trained at its own
states :math:`O(\epsilon T)`.

* :class:`CombinationLock` -- ``length`` dials; each shows a rune, and a fixed (per environment seed) map from
  ``n_runes`` runes to ``n_digits`` digits says which ``turn d`` is right. A wrong turn jams the lock; ``back``
  un-jams it. The observation names only the rune (not the dial's index), so knowledge transfers across tasks
  and positions; the student's error rate is the share of runes it has not been taught. Horizon
  ``length + slack``.
* :class:`KeyDoorMaze` -- a ``size x size`` grid of rooms with random walls (density sets the branching); take
  the key, walk to the door, open it. Tasks are the start rooms. Horizon ``ceil(slack * longest optimal
  path)``.
* :class:`ArithmeticTool` -- compute a left-nested expression of ``n_ops`` operations with a calculator tool:
  ``+ n``, ``- n``, ``* n`` on the unused numbers, ``clear`` (start over) and ``answer``.

:class:`ScriptedTeacher` plays each environment's ``oracle_plan``: the shortest solution on the lock and the
maze (recovery first: ``back``; the tests check it against breadth-first search), on the calculator the
canonical order of the expression after a ``clear`` if needed (at most ``n_ops + 1`` steps; a coincidence such
as :math:`(a + b) - b` can allow a shorter one). An optional ``noise`` probability of a uniformly random legal
action gives filtering for success something to remove.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from .protocols import TextEnv, check_action

__all__ = ["ArithmeticTool", "CombinationLock", "KeyDoorMaze", "ScriptedTeacher"]


def _pos_int(v: object, name: str, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {v!r}")
    return int(v)


class _Episodic:
    """Shared episode bookkeeping: step counting, legality, done, the oracle plan by simulation."""

    horizon: int
    n_tasks: int

    def reset(self, task: int) -> str:
        """Start ``task`` (an int in ``[0, n_tasks)``); return the first observation."""
        task = _pos_int(task, "task", 0)
        if task >= self.n_tasks:
            raise ValueError(f"task: expected an int in [0, {self.n_tasks}), got {task}")
        self.task, self.t, self.done = task, 0, False
        self._reset(task)
        return self.observation()

    def step(self, action: str) -> tuple[str, bool]:
        """Apply a legal action; return ``(observation, done)``. Raises IllegalActionError otherwise."""
        if getattr(self, "done", True):
            raise RuntimeError(f"{type(self).__name__}.step: the episode is over (or never reset); call reset")
        check_action(action, self._legal(), "step", f"at step {self.t} of task {self.task}")
        self._apply(action)
        self.t += 1
        self.done = self._finished() or self.t >= self.horizon
        return self.observation(), self.done

    def available_actions(self) -> list[str]:
        """The legal actions now (empty once the episode is over)."""
        return [] if self.done else list(self._legal())

    def oracle_plan(self, k: int) -> list[str]:
        """The optimal next ``k`` actions (fewer if the episode ends first), found by simulating; state kept."""
        saved = (self.t, self.done, self._get())
        plan: list[str] = []
        while len(plan) < k and not self.done:
            a = self._optimal()
            plan.append(a)
            self._apply(a)
            self.t += 1
            self.done = self._finished() or self.t >= self.horizon
        self.t, self.done = saved[0], saved[1]
        self._set(saved[2])
        return plan


class CombinationLock(_Episodic):
    """A combination lock with runes (see the module docstring).

    Parameters
    ----------
    length : int
        Dials :math:`T` (the optimal episode length).
    n_digits : int
        Digits per dial; the branching is ``n_digits + 1`` (with ``back``).
    n_runes : int
        Distinct runes; runes are shared by all tasks, each maps to one digit.
    slack : int, optional
        Extra steps beyond ``length`` (default ``length``); the horizon is ``length + slack``.
    n_tasks : int
        Number of combinations (task ``i`` is seeded by ``(seed, i)``).
    seed : int
        The rune names and the rune-to-digit map.

    Examples
    --------
    >>> env = CombinationLock(3, seed=0)
    >>> obs = env.reset(0)
    >>> plan = env.oracle_plan(3)
    >>> [env.step(a)[1] for a in plan], env.success()
    ([False, False, True], True)
    """

    def __init__(self, length: int = 8, n_digits: int = 4, n_runes: int = 32, slack: int | None = None,
                 n_tasks: int = 10_000, seed: int = 0):
        self.length = _pos_int(length, "length")
        self.n_digits = _pos_int(n_digits, "n_digits", 2)
        self.n_runes = _pos_int(n_runes, "n_runes")
        self.slack = self.length if slack is None else _pos_int(slack, "slack", 0)
        self.n_tasks = _pos_int(n_tasks, "n_tasks")
        self.seed = int(seed)
        self.horizon = self.length + self.slack
        rng = np.random.default_rng([self.seed, 0x10C])
        cons, vows = "bdfgklmnprstvz", "aeiou"
        names = [c1 + v + c2 for c1 in cons for v in vows for c2 in cons]
        if self.n_runes > len(names):
            raise ValueError(f"n_runes: at most {len(names)}, got {self.n_runes}")
        self.runes = [names[i] for i in rng.choice(len(names), self.n_runes, replace=False)]
        self.digit_of = rng.integers(0, self.n_digits, self.n_runes)
        self.actions = [f"turn {d}" for d in range(self.n_digits)] + ["back"]

    def combination(self, task: int) -> np.ndarray:
        """The rune indices of ``task``'s dials."""
        return np.random.default_rng([self.seed, 1, int(task)]).integers(0, self.n_runes, self.length)

    def _reset(self, task):
        self.combo, self.pos, self.jammed = self.combination(task), 0, False

    def _get(self):
        return self.pos, self.jammed

    def _set(self, s):
        self.pos, self.jammed = s

    def _legal(self):
        return self.actions

    def _finished(self):
        return self.pos == self.length

    def success(self) -> bool:
        """True once every dial is set."""
        return self.pos == self.length

    def _apply(self, a):
        if a == "back":
            self.jammed = False
        elif not self.jammed:
            if int(a[5:]) == self.digit_of[self.combo[self.pos]]:
                self.pos += 1
            else:
                self.jammed = True

    def _optimal(self):
        return "back" if self.jammed else f"turn {self.digit_of[self.combo[self.pos]]}"

    def observation(self) -> str:
        """The text of the current state."""
        if self.pos == self.length:
            return "The lock clicks open."
        if self.done:
            return "Time is up; the lock stays shut."
        if self.jammed:
            return "The dial is jammed."
        return f"The next dial shows the rune '{self.runes[self.combo[self.pos]]}'."


class KeyDoorMaze(_Episodic):
    """Rooms on a grid, a key and a locked door (see the module docstring).

    Parameters
    ----------
    size : int
        The grid is ``size x size`` rooms; the reachable part (largest connected component) is kept.
    wall_density : float
        Probability that a room is walled off (fewer walls, more exits: the branching).
    slack : float
        Horizon = ``ceil(slack * longest optimal path)`` over all start rooms.
    seed : int
        Layout, key and door.
    """

    MOVES: ClassVar[dict[str, tuple[int, int]]] = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}

    def __init__(self, size: int = 5, wall_density: float = 0.2, slack: float = 2.0, seed: int = 0):
        self.size = _pos_int(size, "size", 2)
        if not 0 <= wall_density < 1:
            raise ValueError(f"wall_density: expected a float in [0, 1), got {wall_density!r}")
        if not slack >= 1:
            raise ValueError(f"slack: expected a float >= 1, got {slack!r}")
        rng = np.random.default_rng([int(seed), 0x3A2E])
        free = rng.random((self.size, self.size)) >= wall_density
        cells = self._largest_component(free)
        if len(cells) < 3:
            raise ValueError("KeyDoorMaze: fewer than 3 connected rooms; lower wall_density or change seed")
        self.cells = sorted(cells)
        key_i, door_i = rng.choice(len(self.cells), 2, replace=False)
        self.key_room, self.door_room = self.cells[key_i], self.cells[door_i]
        self.starts = [c for c in self.cells if c != self.door_room]
        self.n_tasks = len(self.starts)
        self.to_key, self.to_door = self._bfs(self.key_room), self._bfs(self.door_room)
        longest = max(self.to_key[s] + 1 + self.to_door[self.key_room] + 1 for s in self.starts)
        self.horizon = math.ceil(slack * longest)

    def _neighbours(self, cell):
        r, c = cell
        for name, (dr, dc) in self.MOVES.items():
            n = (r + dr, c + dc)
            if n in self._free:
                yield name, n

    def _largest_component(self, free):
        self._free = {(r, c) for r in range(self.size) for c in range(self.size) if free[r, c]}
        best: set = set()
        seen: set = set()
        for cell in sorted(self._free):
            if cell in seen:
                continue
            comp = set(self._bfs(cell))
            seen |= comp
            best = max(best, comp, key=len)
        self._free = best
        return best

    def _bfs(self, goal):
        dist, todo = {goal: 0}, deque([goal])
        while todo:
            cell = todo.popleft()
            for _, n in self._neighbours(cell):
                if n not in dist:
                    dist[n] = dist[cell] + 1
                    todo.append(n)
        return dist

    def _reset(self, task):
        self.room, self.has_key, self.opened = self.starts[task], False, False

    def _get(self):
        return self.room, self.has_key, self.opened

    def _set(self, s):
        self.room, self.has_key, self.opened = s

    def _legal(self):
        out = [f"go {name}" for name, _ in self._neighbours(self.room)]
        if self.room == self.key_room and not self.has_key:
            out.append("take key")
        if self.room == self.door_room and self.has_key:
            out.append("open door")
        return out

    def _finished(self):
        return self.opened

    def success(self) -> bool:
        """True once the door is open."""
        return self.opened

    def _apply(self, a):
        if a == "take key":
            self.has_key = True
        elif a == "open door":
            self.opened = True
        else:
            dr, dc = self.MOVES[a[3:]]
            self.room = (self.room[0] + dr, self.room[1] + dc)

    def _optimal(self):
        goal, dist = (self.door_room, self.to_door) if self.has_key else (self.key_room, self.to_key)
        if self.room == goal:
            return "open door" if self.has_key else "take key"
        return next(f"go {name}" for name, n in self._neighbours(self.room) if dist[n] < dist[self.room])

    def observation(self) -> str:
        """The text of the current state."""
        if self.opened:
            return "The door swings open. You are free."
        r, c = self.room
        text = [f"You are in room {r}-{c}.", "You hold the key." if self.has_key else "You have no key."]
        if self.room == self.key_room and not self.has_key:
            text.append("A key lies on the floor.")
        if self.room == self.door_room:
            text.append("A locked door is here.")
        text.append("Exits: " + ", ".join(name for name, _ in self._neighbours(self.room)) + ".")
        return " ".join(text)


class ArithmeticTool(_Episodic):
    """Compute a left-nested expression with a calculator tool (see the module docstring).

    Parameters
    ----------
    n_ops : int
        Operations per expression; the optimal episode takes ``n_ops + 1`` steps, the horizon is twice that.
    max_value : int
        Operands are drawn from ``1 .. max_value``.
    n_tasks : int
    seed : int
    """

    OPS = ("+", "-", "*")

    def __init__(self, n_ops: int = 3, max_value: int = 9, n_tasks: int = 1000, seed: int = 0):
        self.n_ops = _pos_int(n_ops, "n_ops")
        self.max_value = _pos_int(max_value, "max_value", 2)
        self.n_tasks = _pos_int(n_tasks, "n_tasks")
        self.seed = int(seed)
        self.horizon = 2 * (self.n_ops + 1)

    def problem(self, task: int) -> tuple[list[int], list[str]]:
        """The operands and operators of ``task``."""
        rng = np.random.default_rng([self.seed, 2, int(task)])
        nums = [int(v) for v in rng.integers(1, self.max_value + 1, self.n_ops + 1)]
        return nums, [self.OPS[i] for i in rng.integers(0, 3, self.n_ops)]

    @staticmethod
    def _op(v, op, n):
        return v + n if op == "+" else v - n if op == "-" else v * n

    def _reset(self, task):
        self.nums, self.ops = self.problem(task)
        self.prefix = [self.nums[0]]
        for op, n in zip(self.ops, self.nums[1:], strict=True):
            self.prefix.append(self._op(self.prefix[-1], op, n))
        expr = str(self.nums[0])
        for op, n in zip(self.ops, self.nums[1:], strict=True):
            expr = f"({expr} {op} {n})"
        self.expr = expr[1:-1] if self.n_ops else expr
        self.value, self.unused, self.answered = self.nums[0], list(self.nums[1:]), None

    def _get(self):
        return self.value, list(self.unused), self.answered

    def _set(self, s):
        self.value, self.unused, self.answered = s[0], list(s[1]), s[2]

    def _legal(self):
        return [f"{op} {n}" for n in sorted(set(self.unused)) for op in self.OPS] + ["clear", "answer"]

    def _finished(self):
        return self.answered is not None

    def success(self) -> bool:
        """True once the calculator's value was answered and equals the expression's."""
        return self.answered is not None and self.answered == self.prefix[-1]

    def _apply(self, a):
        if a == "answer":
            self.answered = self.value
        elif a == "clear":
            self.value, self.unused = self.nums[0], list(self.nums[1:])
        else:
            op, n = a.split()
            self.unused.remove(int(n))
            self.value = self._op(self.value, op, int(n))

    def _optimal(self):
        if self.value == self.prefix[-1]:  # also an early, shorter solution: answering then is optimal
            return "answer"
        i = self.n_ops - len(self.unused)
        if self.value == self.prefix[i] and sorted(self.unused) == sorted(self.nums[i + 1:]):
            return f"{self.ops[i]} {self.nums[i + 1]}"
        return "clear"

    def observation(self) -> str:
        """The text of the current state."""
        if self.answered is not None:
            return f"You answered {self.answered}: {'correct' if self.success() else 'wrong'}."
        unused = ", ".join(map(str, self.unused)) or "none"
        return f"Compute {self.expr}. The calculator shows {self.value}. Unused numbers: {unused}."


class ScriptedTeacher:
    """The optimal policy of a shipped environment (its ``oracle_plan``), optionally noisy.

    Parameters
    ----------
    noise : float
        Probability that an action is replaced by a uniformly random legal one. With ``noise > 0`` the
        teacher answers one action per query (the rest of a plan would depend on the random action).
    seed : int
        The noise stream.
    """

    def __init__(self, noise: float = 0.0, seed: int = 0):
        if not 0 <= noise <= 1:
            raise ValueError(f"noise: expected a probability in [0, 1], got {noise!r}")
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)

    def next_actions(self, env: TextEnv, k: int) -> list[str]:
        """The next ``k`` optimal actions (one when noisy) from ``env``'s current state."""
        if not hasattr(env, "oracle_plan"):
            raise TypeError(f"ScriptedTeacher needs an environment with oracle_plan(k); got {type(env).__name__}")
        if self.noise == 0:
            return env.oracle_plan(k)
        legal: Sequence[str] = env.available_actions()
        if legal and self.rng.random() < self.noise:
            return [legal[int(self.rng.integers(len(legal)))]]
        return env.oracle_plan(1)
