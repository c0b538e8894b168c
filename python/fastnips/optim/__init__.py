r"""Optimisation: decentralised minimax over gossip networks (the doubly smoothed GDA and its baselines).

Paper: "A doubly smoothed decentralized stochastic minimax algorithm" (NeurIPS 2026; a descriptive title, see
docs/papers.md). A reconstruction (its code is not public): :mod:`fastnips.optim.minimax` states the updates.

* :func:`decentralized_minimax` with methods ``"dsgda"``, ``"gda"``, ``"tt-gda"``, ``"gt-gda"``; engines
  :class:`InProcess` (M nodes in one process) and :class:`Distributed` (one process per node on
  ``torch.distributed``; ``torchrun --nproc-per-node=M -m fastnips.optim.launch ...`` or
  ``fastnips minimax --nproc M``), bitwise-equal iterates.
* Topologies (:mod:`fastnips.optim.topology`): :func:`ring`, :func:`torus`, :func:`erdos_renyi`, :func:`complete`,
  :func:`check_mixing` for a user's W; Metropolis weights and the spectral gap.
* Problems (:mod:`fastnips.optim.problems`): :class:`Quadratic` (nonconvex-PL, chosen kappa),
  :class:`RobustLogistic` and :class:`AUCMaximization` (scikit-learn data split iid or label-skewed),
  :class:`TorchProblem` (a torch module with min and max parameter groups).
* The command ``fastnips minimax [--nproc M]`` (:mod:`fastnips.optim.launch`): a run in this process, or one
  process per node under torchrun.

Design notes and measurements: docs/notes/optim.md.
"""

from __future__ import annotations

from .. import _optional

if (_missing := _optional.missing_torch(__name__)) is not None:  # torch-only: say what to install
    raise _missing

from .minimax import METHODS, Distributed, InProcess, MinimaxResult, decentralized_minimax
from .problems import AUCMaximization, Quadratic, RobustLogistic, TorchProblem
from .topology import Topology, check_mixing, complete, erdos_renyi, metropolis_weights, ring, torus

__all__ = [
    "METHODS",
    "AUCMaximization",
    "Distributed",
    "InProcess",
    "MinimaxResult",
    "Quadratic",
    "RobustLogistic",
    "Topology",
    "TorchProblem",
    "check_mixing",
    "complete",
    "decentralized_minimax",
    "erdos_renyi",
    "metropolis_weights",
    "ring",
    "torus",
]
