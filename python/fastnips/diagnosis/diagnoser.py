"""From events to diagnoses: per-node time windows, their features, the rules, and a learned classifier.

A *window* is a maximal run of one node's events with no gap longer than ``gap`` seconds (a session window:
one incident's symptoms arrive together; by default half an hour of quiet closes it). Its features
(:func:`window_features`) are ``log(1 + count)`` of every evidence token (:data:`~fastnips.diagnosis.TOKENS`), the
rule score of every fault, the number of distinct components and the highest severity. The rules diagnose the
fault with the highest score (``none`` below :data:`~fastnips.diagnosis.taxonomy.MIN_SCORE`); the
:class:`FaultClassifier` (scikit-learn's histogram gradient boosting, deterministic for a seed) learns the same
decision from labelled windows and so can weigh combinations the hand-set weights miss.

The paper (DrWatson) uses a pretrained foundation model over fleet telemetry; neither the model nor the fleet data
is available, so this is the honest stand-in: the same inputs and outputs, a small learned model, trained and
evaluated on :mod:`fastnips.diagnosis.simulate`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .events import SEVERITIES, Event
from .taxonomy import ACTIONS, FAULTS, MIN_SCORE, NONE, RULES, TOKENS, rule_scores, token

__all__ = ["Diagnosis", "FaultClassifier", "diagnose", "diagnose_window", "split_windows", "window_features"]

_TOK = {t: i for i, t in enumerate(TOKENS)}
N_FEATURES = len(TOKENS) + len(FAULTS) + 2


def split_windows(events: Sequence[Event], gap: float = 1800.0) -> list[list[Event]]:
    """Per node, the maximal runs of events with no gap over ``gap`` seconds (sorted by node, then time).

    Parameters
    ----------
    events : sequence of Event
    gap : float
        Seconds of quiet that close a window (> 0).

    Returns
    -------
    list of list of Event
    """
    if not isinstance(gap, (int, float)) or isinstance(gap, bool) or not gap > 0 or gap != gap:
        raise ValueError(f"gap: expected seconds > 0, got {gap!r}")
    by_node: dict[str, list[Event]] = {}
    for e in events:
        if not isinstance(e, Event):
            raise TypeError(f"events: expected Event items, got {type(e).__name__}")
        by_node.setdefault(e.node, []).append(e)
    out = []
    for node in sorted(by_node):
        evs = sorted(by_node[node])
        cur = [evs[0]]
        for e in evs[1:]:
            if e.time - cur[-1].time > gap:
                out.append(cur)
                cur = []
            cur.append(e)
        out.append(cur)
    return out


def window_features(window: Sequence[Event]) -> np.ndarray:
    """The feature vector of one window (float64, length ``len(TOKENS) + len(FAULTS) + 2``): ``log1p`` token
    counts, the rule scores, ``log1p`` of the number of distinct components, the highest severity (0-3)."""
    x = np.zeros(N_FEATURES)
    toks = [token(e) for e in window]
    for t, n in Counter(toks).items():
        x[_TOK[t]] = np.log1p(n)
    s = rule_scores(toks)
    x[len(TOKENS):len(TOKENS) + len(FAULTS)] = [s[f] for f in FAULTS]
    x[-2] = np.log1p(len({e.component for e in window if e.component}))
    x[-1] = max((SEVERITIES.index(e.severity) for e in window if e.severity in SEVERITIES), default=0)
    return x


@dataclass(frozen=True)
class Diagnosis:
    """The diagnosis of one window of one node.

    Attributes: ``node``; ``start``, ``end`` (seconds since the epoch); ``fault`` (one of
    :data:`~fastnips.diagnosis.FAULTS` or ``"none"``); ``action`` and ``action_text`` (the recommended repair,
    :data:`~fastnips.diagnosis.ACTIONS`); ``confidence`` (the rule score's share of the total; for ``"none"``
    from the rules, ``1 - best_score / (2 * MIN_SCORE)`` in (0.5, 1], 1 when there is no evidence at all; or the
    model's probability); ``method`` (``"rules"`` or ``"model"``); ``component`` (the part most implicated);
    ``evidence`` (the tokens behind the fault with their counts, most frequent first); ``n_events``.
    """

    node: str
    start: float
    end: float
    fault: str
    action: str
    action_text: str
    confidence: float
    method: str
    component: str
    evidence: tuple[tuple[str, int], ...]
    n_events: int

    def to_dict(self) -> dict:
        """The diagnosis as a JSON-ready dict."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["evidence"] = [list(x) for x in self.evidence]
        return d


def _rules(window: Sequence[Event]) -> tuple[str, float]:
    s = rule_scores(token(e) for e in window)
    best = max(FAULTS, key=lambda f: (s[f], -FAULTS.index(f)))
    total = sum(s.values())
    if s[best] < MIN_SCORE:
        return NONE, 1.0 - s[best] / MIN_SCORE / 2
    return best, s[best] / total


def _explain(window: Sequence[Event], fault: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    relevant = [e for e in window if RULES.get(token(e), {}).get(fault, 0) > 0] if fault != NONE else []
    comps = Counter(e.component for e in relevant if e.component)
    comp = min(comps, key=lambda c: (-comps[c], c)) if comps else ""
    ev = Counter(token(e) for e in relevant)
    return comp, tuple(sorted(ev.items(), key=lambda kv: (-kv[1], kv[0])))


def diagnose_window(window: Sequence[Event], classifier: FaultClassifier | None = None) -> Diagnosis:
    """Diagnose one window (all events of one node): the rules, or ``classifier`` when given.

    Parameters
    ----------
    window : sequence of Event
        Non-empty; all of one node.
    classifier : FaultClassifier or None
        A fitted classifier; None uses the rules.

    Returns
    -------
    Diagnosis
    """
    if len(window) == 0:
        raise ValueError("window: expected at least one event")
    if len({e.node for e in window}) != 1:
        raise ValueError("window: expected the events of one node")
    if classifier is None:
        fault, conf = _rules(window)
        method = "rules"
    else:
        p = classifier.predict_proba([window])[0]
        k = int(np.argmax(p))
        fault, conf, method = classifier.classes_[k], float(p[k]), "model"
    comp, ev = _explain(window, fault)
    act = ACTIONS[fault]
    return Diagnosis(window[0].node, min(e.time for e in window), max(e.time for e in window), fault, act.id,
                     act.text, float(conf), method, comp, ev, len(window))


def diagnose(events: Sequence[Event], *, classifier: FaultClassifier | None = None,
             gap: float = 1800.0) -> list[Diagnosis]:
    """Diagnose every window (:func:`split_windows`) of an event stream.

    Parameters
    ----------
    events : sequence of Event
    classifier : FaultClassifier or None
        A fitted classifier; None uses the rules.
    gap : float
        Seconds of quiet that close a window.

    Returns
    -------
    list of Diagnosis
        One per window, by node then time; windows diagnosed ``"none"`` included.

    Examples
    --------
    >>> from fastnips.diagnosis import ingest_text
    >>> ev = ingest_text("Dec  2 21:00:01 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 95, pid=1, Uncontained: FBHUB")
    >>> d, = diagnose(ev)
    >>> d.fault, d.action, d.component
    ('hbm', 'reset_remap', '0000:3b:00.0')
    """
    return [diagnose_window(w, classifier) for w in split_windows(events, gap)]


class FaultClassifier:
    """A gradient-boosted classifier of windows into faults (scikit-learn ``HistGradientBoostingClassifier``).

    Parameters
    ----------
    seed : int
        The random state (the fit is deterministic for a seed).
    max_iter : int
        Boosting iterations.
    """

    def __init__(self, seed: int = 0, max_iter: int = 60):
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter: expected an int >= 1, got {max_iter!r}")
        self.seed = int(seed)
        self.max_iter = max_iter
        self.model = None
        self.classes_: list[str] = []

    def fit(self, windows: Sequence[Sequence[Event]], labels: Sequence[str]) -> FaultClassifier:
        """Fit on windows and their fault labels (``FAULTS`` or ``"none"``); returns self."""
        from sklearn.ensemble import HistGradientBoostingClassifier

        if len(windows) != len(labels) or len(windows) == 0:
            raise ValueError(f"windows, labels: expected equal non-zero lengths, got {len(windows)} and "
                             f"{len(labels)}")
        bad = sorted({str(y) for y in labels} - set(FAULTS) - {NONE})
        if bad:
            raise ValueError(f"labels: unknown fault(s) {bad}; expected {', '.join(FAULTS)} or none")
        X = np.stack([window_features(w) for w in windows])
        self.model = HistGradientBoostingClassifier(max_iter=self.max_iter, learning_rate=0.15, max_leaf_nodes=15,
                                                    random_state=self.seed, early_stopping=False)
        self.model.fit(X, np.asarray(labels))
        self.classes_ = [str(c) for c in self.model.classes_]
        return self

    def predict_proba(self, windows: Sequence[Sequence[Event]]) -> np.ndarray:
        """Class probabilities, shape ``(len(windows), len(classes_))``; an empty window is all ``"none"``."""
        if self.model is None:
            raise RuntimeError("FaultClassifier: call fit before predict")
        X = np.stack([window_features(w) for w in windows]) if len(windows) else np.zeros((0, N_FEATURES))
        p = self.model.predict_proba(X)
        empty = [i for i, w in enumerate(windows) if len(w) == 0]
        if empty and NONE in self.classes_:
            p[empty] = 0.0
            p[empty, self.classes_.index(NONE)] = 1.0
        return p

    def predict(self, windows: Sequence[Sequence[Event]]) -> list[str]:
        """The most probable fault of each window."""
        p = self.predict_proba(windows)
        return [self.classes_[k] for k in np.argmax(p, axis=1)]
