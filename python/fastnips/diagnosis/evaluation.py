"""Injected-fault recovery on the simulator and the paper-style downtime table (SIMULATION, labelled as such)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .diagnoser import FaultClassifier, _rules
from .downtime import DowntimeRow, downtime_table
from .simulate import simulate_incidents

__all__ = ["SimulationReport", "evaluate_on_simulator", "format_downtime_table"]


@dataclass(frozen=True)
class SimulationReport:
    """Top-1 accuracy of the rules and of the learned classifier on held-out simulated incidents, the downtime
    table of the classifier's predictions, and the fitted classifier (all SIMULATION)."""

    n_train: int
    n_test: int
    rules_accuracy: float
    model_accuracy: float
    table: list
    classifier: FaultClassifier
    truth: list
    predicted: list


def evaluate_on_simulator(n_train: int = 1200, n_test: int = 800, *, seed: int = 0) -> SimulationReport:
    """Train the :class:`~fastnips.diagnosis.FaultClassifier` on ``n_train`` simulated incidents (seed ``seed``)
    and score both diagnosers on ``n_test`` others (seed ``seed + 1``): injected-fault recovery, top-1.

    Each incident is one window (its node's events over the incident hour). Returns a
    :class:`SimulationReport`; its numbers are simulation, not fleet measurements.

    Examples
    --------
    >>> r = evaluate_on_simulator(200, 100, seed=0)       # doctest: +SKIP
    >>> r.model_accuracy >= 0.9                            # doctest: +SKIP
    True
    """
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 8:
            raise ValueError(f"{name}: expected an int >= 8, got {v!r}")
    train = simulate_incidents(n_train, seed=seed)
    test = simulate_incidents(n_test, seed=seed + 1)
    w_train = [i.events() for i in train]
    w_test = [i.events() for i in test]
    truth = [i.fault for i in test]
    clf = FaultClassifier(seed=seed).fit(w_train, [i.fault for i in train])
    predicted = clf.predict(w_test)
    rules = [_rules(w)[0] for w in w_test]
    return SimulationReport(n_train, n_test, float(np.mean([a == b for a, b in zip(rules, truth)])),
                            float(np.mean([a == b for a, b in zip(predicted, truth)])),
                            downtime_table(truth, predicted, seed=seed), clf, truth, predicted)


def format_downtime_table(rows: list[DowntimeRow]) -> str:
    """The downtime table as Markdown, headed as a simulation."""
    out = ["SIMULATION (fastnips.diagnosis.simulate + downtime model; assumptions in fastnips.diagnosis.downtime)",
           "",
           "| fault | incidents | top-1 | downtime without (h) | downtime with (h) | reduction | TTD without (h) "
           "| TTD with (h) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r.fault} | {r.n} | {r.accuracy:.3f} | {r.downtime_without:.2f} | {r.downtime_with:.2f} | "
                   f"{r.reduction:.1%} | {r.ttd_without:.2f} | {r.ttd_with:.2f} |")
    return "\n".join(out)
