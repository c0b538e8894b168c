r"""TextWorld games as a :class:`~fastnips.rl.teacher.TextEnv`, generated locally (needs ``pip install textworld``).

TextWorld (Cote et al. 2018) compiles random text adventures with Inform 7, which its wheel ships, so
:func:`make_textworld_games` needs no network. Its ``EnvInfos(policy_commands=True)`` gives the walkthrough
from the *current* state -- a ready teacher at learner-induced states (:meth:`TextWorldEnv.oracle_plan`, which
:class:`~fastnips.rl.teacher.ScriptedTeacher` plays); the legal actions are TextWorld's ``admissible_commands``.

The observation is the room description, the inventory and the objective (not the last feedback line), so
that it describes the state (Markov) and the prompt needs no history.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from ... import _optional
from .protocols import check_action

__all__ = ["TextWorldEnv", "make_textworld_games"]

_HINT = "pip install textworld (its wheel ships Inform 7; games are generated offline)"


def _textworld():
    if not _optional.installed("textworld"):
        raise ImportError(f"this feature needs the optional package 'textworld': {_HINT}")
    return _optional.require("textworld")


def make_textworld_games(n: int, directory: str | os.PathLike, *, seed: int = 0, nb_rooms: int = 3,
                         nb_objects: int = 4, quest_length: int = 3) -> list[Path]:
    """Generate and compile ``n`` games into ``directory`` (seeds ``seed .. seed + n - 1``); return the paths.

    Each game takes a few seconds (Inform 7 compilation).
    """
    tw = _textworld()
    import textworld.generator as gen

    for name, v in (("n", n), ("nb_rooms", nb_rooms), ("nb_objects", nb_objects), ("quest_length", quest_length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected a positive int, got {v!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        opts = tw.GameOptions()
        opts.seeds = seed + i
        opts.nb_rooms, opts.nb_objects, opts.quest_length = nb_rooms, nb_objects, quest_length
        opts.path = str(directory / f"tw_{seed + i}.z8")
        opts.force_recompile = True
        paths.append(Path(gen.compile_game(gen.make_game(opts), opts)))
    return paths


class TextWorldEnv:
    """Compiled TextWorld games as tasks ``0 .. len(game_files) - 1``.

    Parameters
    ----------
    game_files : sequence of paths
        ``.z8`` / ``.ulx`` files (e.g. from :func:`make_textworld_games`).
    horizon : int
        Step limit per episode.
    """

    def __init__(self, game_files: Sequence[str | os.PathLike], horizon: int = 30):
        tw = _textworld()
        files = [Path(f) for f in game_files]
        if not files:
            raise ValueError("game_files: expected at least one game file")
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise ValueError(f"game_files: not found: {missing}")
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"horizon: expected a positive int, got {horizon!r}")
        self.files, self.horizon, self.n_tasks = files, horizon, len(files)
        self._infos = tw.EnvInfos(policy_commands=True, admissible_commands=True, won=True, lost=True,
                                  description=True, inventory=True, objective=True)
        self._envs: dict[int, object] = {}
        self.done = True

    def _obs(self) -> str:
        gs = self.state
        if gs.won:
            return "You won."
        if gs.lost or self.done:
            return "The game is over."
        return f"{gs.description.strip()}\n{gs.inventory.strip()}\nGoal: {gs.objective.strip()}"

    def reset(self, task: int) -> str:
        """Start game ``task``; return the first observation."""
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < self.n_tasks:
            raise ValueError(f"task: expected an int in [0, {self.n_tasks}), got {task!r}")
        if task not in self._envs:
            with warnings.catch_warnings():  # jericho: "not fully supported ... score detection disabled";
                warnings.simplefilter("ignore")  # TextWorld tracks won/lost itself, which is all we read
                self._envs[task] = _textworld().start(str(self.files[task]), request_infos=self._infos)
        self.env, self.t, self.done = self._envs[task], 0, False
        self.state = self.env.reset()
        return self._obs()

    def step(self, action: str) -> tuple[str, bool]:
        """Apply an admissible command; return ``(observation, done)``."""
        if self.done:
            raise RuntimeError("TextWorldEnv.step: the episode is over (or never reset); call reset")
        check_action(action, self.available_actions(), "step", f"at step {self.t}")
        self.state, _, done = self.env.step(action)
        self.t += 1
        self.done = bool(done or self.state.won or self.state.lost or self.t >= self.horizon)
        return self._obs(), self.done

    def available_actions(self) -> list[str]:
        """TextWorld's admissible commands (empty once the episode is over)."""
        return [] if self.done else sorted(self.state.admissible_commands)

    def success(self) -> bool:
        """True once the quest is won."""
        return bool(self.state.won)

    def oracle_plan(self, k: int) -> list[str]:
        """The first ``k`` commands of TextWorld's walkthrough from the current state."""
        return list(self.state.policy_commands or [])[:k]

    def close(self) -> None:
        """Close the game interpreters."""
        for env in self._envs.values():
            env.close()
        self._envs.clear()

