"""A repair-downtime model (SIMULATION): how long a node stays down with and without the diagnoser.

The paper reports production downtime and QA-time reductions from a real fleet; neither the fleet nor its repair
records are available. This model replays simulated incidents (:mod:`fastnips.diagnosis.simulate`) through two
repair processes, with stated assumptions (:data:`ACTION_HOURS`, :data:`TRIAGE_HOURS`, :data:`MANUAL_RIGHT`):

* **without** the diagnoser: an engineer triages by hand (log-normal, median :data:`TRIAGE_HOURS` hours), picks
  the right repair with probability :data:`MANUAL_RIGHT`, and otherwise walks the generic escalation
  :data:`LADDER` (cheap to expensive) until the repair that fixes the fault has been done;
* **with** the diagnoser: diagnosis arrives after :data:`PIPELINE_HOURS` (log shipping + ingestion); its
  recommended repair is done first; if it was wrong, the manual process above follows.

Downtime = time to diagnosis + the hours of every repair tried. Nothing here is a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .taxonomy import ACTIONS, FAULTS, NONE

__all__ = ["ACTION_HOURS", "DowntimeRow", "downtime_table"]

ACTION_HOURS = {"none": 0.25, "reset": 1.0, "reset_remap": 1.0, "reseat_pcie": 4.0, "reseat_nvlink": 6.0,
                "replace_psu": 3.0, "check_cooling": 3.0, "replace_cable": 2.0}
LADDER = ("none", "reset", "replace_cable", "check_cooling", "replace_psu", "reseat_pcie", "reseat_nvlink")
TRIAGE_HOURS = 3.0  # median of manual triage
TRIAGE_SIGMA = 0.8  # of its logarithm
MANUAL_RIGHT = 0.6
PIPELINE_HOURS = 5.0 / 60
_FIXES = {f: {ACTIONS[f].id} | ({"reset", "reset_remap"} if f in ("gpu_core", "hbm") else set())
          for f in (*FAULTS, NONE)}


@dataclass(frozen=True)
class DowntimeRow:
    """One row of the table: ``fault`` (or ``"all"``), ``n`` incidents, mean downtime and mean time to diagnosis
    (hours) without and with the diagnoser, and the diagnoser's top-1 accuracy on those incidents."""

    fault: str
    n: int
    downtime_without: float
    downtime_with: float
    ttd_without: float
    ttd_with: float
    accuracy: float

    @property
    def reduction(self) -> float:
        """Relative downtime reduction, ``1 - with / without``."""
        return 1.0 - self.downtime_with / self.downtime_without if self.downtime_without > 0 else 0.0


def _ladder_hours(fault: str, tried: set[str]) -> float:
    hours = 0.0
    for a in LADDER:
        if a in tried:
            continue
        hours += ACTION_HOURS[a]
        if a in _FIXES[fault]:
            return hours
    return hours


def _manual(fault: str, rng: np.random.Generator, tried: set[str]) -> tuple[float, float]:
    """(triage hours, repair hours) of the manual process."""
    triage = float(rng.lognormal(np.log(TRIAGE_HOURS), TRIAGE_SIGMA))
    right = ACTIONS[fault].id
    if rng.random() < MANUAL_RIGHT and right not in tried:
        return triage, ACTION_HOURS[right]
    return triage, _ladder_hours(fault, tried)


def downtime_table(truth: Sequence[str], predicted: Sequence[str], *, seed: int = 0) -> list[DowntimeRow]:
    """The paper-style table (SIMULATION): mean downtime and time to diagnosis per fault, without and with the
    diagnoser, given the true faults of simulated incidents and the diagnoser's predictions.

    Parameters
    ----------
    truth, predicted : sequence of str
        Fault per incident (``FAULTS`` or ``"none"``), same length.
    seed : int
        Seed of the manual-process draws (the same draws serve both arms where they coincide).

    Returns
    -------
    list of DowntimeRow
        One per fault present, then ``"all"``.
    """
    if len(truth) != len(predicted) or len(truth) == 0:
        raise ValueError(f"truth, predicted: expected equal non-zero lengths, got {len(truth)} and {len(predicted)}")
    allowed = set(FAULTS) | {NONE}
    bad = sorted({str(x) for x in (*truth, *predicted)} - allowed)
    if bad:
        raise ValueError(f"truth, predicted: unknown fault(s) {bad}")
    rng = np.random.default_rng(seed)
    recs = []
    for f, p in zip(truth, predicted):
        triage, repair = _manual(f, rng, set())
        without = (triage, triage + repair)
        first = ACTIONS[p].id
        if first in _FIXES[f]:
            with_ = (PIPELINE_HOURS, PIPELINE_HOURS + ACTION_HOURS[first])
        else:
            t2, r2 = _manual(f, rng, {first})
            with_ = (PIPELINE_HOURS, PIPELINE_HOURS + ACTION_HOURS[first] + t2 + r2)
        recs.append((f, p, without, with_))
    rows = []
    for fault in [*(f for f in (*FAULTS, NONE) if f in set(truth)), "all"]:
        sel = [r for r in recs if fault in ("all", r[0])]
        without = np.array([r[2] for r in sel]).mean(axis=0)  # (ttd, downtime)
        with_ = np.array([r[3] for r in sel]).mean(axis=0)
        rows.append(DowntimeRow(fault, len(sel), float(without[1]), float(with_[1]), float(without[0]),
                                float(with_[0]), float(np.mean([r[0] == r[1] for r in sel]))))
    return rows
