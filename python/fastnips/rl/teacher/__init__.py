r"""Budget allocation of teacher supervision for agent SFT (paper 6, "teacher").

"A Few Teacher Steps Go a Long Way: Cost-Efficient On-Policy Data Augmentation for Agent Post-Training"
(ICML 2026): a small student imitates a costly teacher. Behaviour cloning (BC) on teacher episodes suffers
covariate shift -- a student that errs with probability :math:`\epsilon` per step on the teacher's states,
and was never taught how to recover, loses :math:`O(\epsilon T^2)` over a horizon :math:`T`, while training
at the student's own states gives :math:`O(\epsilon T)` (Ross & Bagnell 2010; Ross et al. 2011). The paper
asks how to spend a fixed teacher budget :math:`B` (tokens or calls) on states the student reaches, comparing
(i) short unfiltered teacher continuations, (ii) full teacher trajectories filtered for success and (iii) the
same only on tasks the student fails alone; it finds (i) beats BC at matched budget and matches or beats the
filtered alternatives on some tasks, with a task-dependent best continuation length.

* Protocols: :class:`~fastnips.rl.teacher.protocols.TextEnv`, :class:`~fastnips.rl.teacher.protocols.Teacher`,
  :class:`~fastnips.rl.teacher.protocols.Student` (importable from here too; structural, so any object with
  the methods qualifies).
* :class:`Ledger` -- the budget every construction draws from; never overspends.
* :func:`build_dataset` -- the constructions ``"continuation"`` (i), ``"filtered"`` (ii), ``"failed_only"``
  (iii), ``"bc"`` and ``"dagger"``; returns an :class:`SFTDataset` (trl's prompt-completion rows, JSONL with a
  checksum, ``to_hf_dataset()``).
* Environments with a scripted optimal teacher, no download: :class:`CombinationLock`, :class:`KeyDoorMaze`,
  :class:`ArithmeticTool`, :class:`ScriptedTeacher`; TextWorld games when ``textworld`` is installed
  (:mod:`fastnips.rl.teacher.textworld_env`).
* Students: :class:`TabularStudent` (count-based, numpy only) and :class:`TinyDecoderStudent` (fastnips.prune's
  byte-level :class:`~fastnips.prune.tiny.TinyDecoder`, fine-tuned on CPU; needs torch, imported on use);
  :func:`train_on_budget` runs a strategy in rounds, :func:`success_rate` evaluates.

Only the student that needs torch imports it: ``import fastnips.rl.teacher`` is numpy-only.
"""

from __future__ import annotations

from .builders import CONSTRUCTIONS, build_dataset
from .dataset import SFTDataset
from .envs import ArithmeticTool, CombinationLock, KeyDoorMaze, ScriptedTeacher
from .ledger import UNITS, Ledger
from .protocols import BudgetExceededError, IllegalActionError, make_prompt
from .protocols import Student as Student  # the protocols: importable here, not in __all__ (no constructor)
from .protocols import Teacher as Teacher
from .protocols import TextEnv as TextEnv
from .training import TabularStudent, success_rate, train_on_budget

__all__ = [
    "CONSTRUCTIONS",
    "UNITS",
    "ArithmeticTool",
    "BudgetExceededError",
    "CombinationLock",
    "IllegalActionError",
    "KeyDoorMaze",
    "Ledger",
    "SFTDataset",
    "ScriptedTeacher",
    "TabularStudent",
    "build_dataset",
    "make_prompt",
    "success_rate",
    "train_on_budget",
]


def __getattr__(name: str):
    """``TinyDecoderStudent`` is imported on first use (it needs torch); everything else here is numpy-only."""
    if name == "TinyDecoderStudent":
        from .tiny_student import TinyDecoderStudent

        return TinyDecoderStudent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
