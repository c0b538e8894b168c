"""GPU-fleet hardware diagnosis from telemetry (drwatson, NeurIPS 2026): parse, normalise, diagnose, act.

The paper's system (DrWatson) diagnoses datacenter hardware faults with a pretrained foundation model over
production fleet telemetry; the model and the fleet are not available. This package is the tool a user runs on
their own logs:

* parsers of NVIDIA Xid kernel lines, PCIe AER, NCCL / PyTorch watchdog lines (:func:`parse_log_text`), IPMI SEL
  (:func:`parse_sel_text`), DCGM diagnostics and health JSON (:func:`parse_dcgm_json`) and ``nvidia-smi -q -x``
  XML (:func:`parse_nvidia_smi_xml`) into one typed, time-ordered stream of :class:`Event` (:func:`ingest`,
  :func:`ingest_text`, :func:`merge_events`);
* a fault taxonomy (:data:`FAULTS`: GPU core, HBM / ECC, NVLink, PCIe, power, thermal, network) with a repair
  action each (:data:`ACTIONS`);
* two diagnosers over per-node windows (:func:`diagnose`): evidence rules (:data:`RULES`) and a learned
  gradient-boosting :class:`FaultClassifier` over windowed features;
* a fault-injection fleet simulator (:func:`simulate_incidents`) and a repair-downtime model
  (:func:`downtime_table`); their numbers are simulation, labelled as such.

No hot path needs native code: ingestion is one compiled regex alternation over the text (see
``bench/diagnosis``); scikit-learn is needed only by :class:`FaultClassifier`.
"""

from __future__ import annotations

from .diagnoser import Diagnosis, FaultClassifier, diagnose, diagnose_window, split_windows, window_features
from .downtime import DowntimeRow, downtime_table
from .evaluation import SimulationReport, evaluate_on_simulator, format_downtime_table
from .events import SEVERITIES, SOURCES, Event, merge_events
from .ingestion import detect_format, ingest, ingest_text
from .simulate import Incident, simulate_incidents, synthetic_log
from .structured import parse_dcgm_json, parse_nvidia_smi_xml
from .taxonomy import ACTIONS, FAULTS, RULES, TOKENS, Action, rule_scores, token
from .text import parse_log_lines, parse_log_text, parse_sel_text
from .xid import XID, XidInfo, xid_info

__all__ = ["ACTIONS", "FAULTS", "RULES", "SEVERITIES", "SOURCES", "TOKENS", "XID", "Action", "Diagnosis",
           "DowntimeRow", "Event", "FaultClassifier", "Incident", "SimulationReport", "XidInfo", "detect_format",
           "diagnose", "diagnose_window", "downtime_table", "evaluate_on_simulator", "format_downtime_table",
           "ingest", "ingest_text", "merge_events", "parse_dcgm_json", "parse_log_lines", "parse_log_text",
           "parse_nvidia_smi_xml", "parse_sel_text", "rule_scores", "simulate_incidents", "split_windows",
           "synthetic_log", "token", "window_features", "xid_info"]
