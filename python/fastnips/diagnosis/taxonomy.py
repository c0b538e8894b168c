"""The fault taxonomy, the repair action of each fault, and the rules that score events as evidence.

Every event is first reduced to a *token* (:func:`token`): ``xid79``, ``aer_fatal``, ``sel_psu``,
``dcgm_memory``, ``smi_remap_pending``, ... Tokens are the vocabulary of both diagnosers: the rules sum a fixed
evidence weight per token and fault (:data:`RULES`); the learned classifier counts tokens per window.

The weights encode the documented meaning of each signal (NVIDIA's Xid table, the PCIe AER severities, the IPMI
sensor types); where a signal is shared by several faults (Xid 79 "fallen off the bus" follows PCIe link loss,
power loss and thermal shutdown alike; NCCL timeouts follow any failure of a peer) its weight is split, so the
rules need the co-occurring evidence to decide -- which is where a learned classifier helps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .events import Event

__all__ = ["ACTIONS", "FAULTS", "RULES", "TOKENS", "Action", "rule_scores", "token"]

FAULTS = ("gpu_core", "hbm", "nvlink", "pcie", "power", "thermal", "network")
NONE = "none"  # no hardware fault (healthy, or application errors only)


class Action(NamedTuple):
    """A repair: a short id, what to do, and the repair order in which an engineer would try it."""

    id: str
    text: str


ACTIONS: dict[str, Action] = {
    "gpu_core": Action("reset", "drain the node, reset the GPU (nvidia-smi -r or reboot), run dcgmi diag -r 3; "
                                "drain + RMA if the error recurs"),
    "hbm": Action("reset_remap", "drain, reset the GPU so that pending row remaps / page retirements apply; drain + "
                                 "RMA on a remapping failure or recurring uncorrectable ECC"),
    "nvlink": Action("reseat_nvlink", "reset the GPUs and the NVLink fabric (fabric manager), reseat the baseboard / "
                                      "NVLink bridge; drain + RMA if link errors recur"),
    "pcie": Action("reseat_pcie", "drain, reseat the GPU / riser, check link width and speed (lspci -vv); drain + "
                                  "RMA if AER errors recur"),
    "power": Action("replace_psu", "check the PSUs and power cables named in the SEL, replace the failing PSU"),
    "thermal": Action("check_cooling", "check cooling: fans, airflow, inlet temperature, heatsink contact"),
    "network": Action("replace_cable", "check the NIC, cable / transceiver and switch port (ibstat, link flaps); "
                                       "replace the cable or transceiver"),
    NONE: Action("none", "no hardware action: restart the job; application errors only"),
}

_XID_TOKENS = (8, 13, 31, 32, 38, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 119, 120, 121, 140,
               143, 154)
_DCGM_GROUPS = (("memory", ("memory", "page retirement", "row remap", "ecc")), ("pcie", ("pcie", "pci")),
                ("nvlink", ("nvlink", "nvbandwidth", "nvswitch")), ("power", ("power", "pulse")),
                ("thermal", ("thermal", "temperature")))
TOKENS = tuple(
    [f"xid{c}" for c in _XID_TOKENS] + ["xid_nvlink", "xid_other"]
    + ["aer_corrected", "aer_nonfatal", "aer_fatal", "aer_bit_corrected", "aer_bit_uncorrected", "aer_surprise_down"]
    + ["nccl_timeout", "nccl_hang", "nccl_net", "nccl_error", "nccl_cuda", "nccl_warn"]
    + ["sel_psu", "sel_thermal", "sel_memory", "sel_pcie", "sel_cpu", "sel_other", "sel_clear"]
    + [f"dcgm_{g}" for g, _ in _DCGM_GROUPS] + ["dcgm_other"]
    + ["smi_ecc_uncorrectable", "smi_ecc_correctable", "smi_retired_pages", "smi_retire_pending", "smi_remapped_unc",
       "smi_remap_pending", "smi_remap_failure", "smi_temp_high", "smi_thermal_slowdown", "smi_power_brake",
       "smi_hw_slowdown", "smi_pcie_degraded", "smi_pcie_replay"])
_INDEX = {t: i for i, t in enumerate(TOKENS)}


def token(e: Event) -> str:
    """The evidence token of an event (one of :data:`TOKENS`).

    Examples
    --------
    >>> token(Event(0.0, "n", "xid", "0000:3b:00.0", "xid", "79", "critical", ""))
    'xid79'
    """
    s = e.source
    if s == "xid":
        c = int(e.code) if e.code.isdigit() and len(e.code) < 6 else -1
        return f"xid{c}" if c in _XID_TOKENS else "xid_nvlink" if 144 <= c <= 150 else "xid_other"
    if s == "aer":
        if e.kind == "aer_bit":
            return "aer_surprise_down" if e.code == "SurpriseDown" else \
                "aer_bit_corrected" if e.severity == "info" else "aer_bit_uncorrected"
        return e.kind if e.kind in _INDEX else "aer_corrected"
    if s == "sel":
        return "sel_clear" if e.kind.endswith("_clear") else e.kind if e.kind in _INDEX else "sel_other"
    if s == "dcgm":
        low = e.code.lower()
        return next((f"dcgm_{g}" for g, words in _DCGM_GROUPS if any(w in low for w in words)), "dcgm_other")
    return e.kind if e.kind in _INDEX else f"{s}_warn" if f"{s}_warn" in _INDEX else "xid_other"


def _w(**kw: float) -> dict[str, float]:
    return kw


# Evidence weight of one occurrence of a token for each fault (counts enter as 1 + log(count), see rule_scores).
RULES: dict[str, dict[str, float]] = {
    "xid8": _w(gpu_core=2), "xid32": _w(pcie=1.5), "xid38": _w(gpu_core=2), "xid61": _w(gpu_core=1.5),
    "xid62": _w(gpu_core=2.5, thermal=0.5), "xid68": _w(gpu_core=2), "xid69": _w(gpu_core=2),
    "xid109": _w(gpu_core=2.5), "xid119": _w(gpu_core=3), "xid120": _w(gpu_core=2.5), "xid143": _w(gpu_core=3),
    "xid154": _w(gpu_core=1), "xid_other": _w(gpu_core=0.5),
    "xid48": _w(hbm=3), "xid63": _w(hbm=1.5), "xid64": _w(hbm=4), "xid92": _w(hbm=2), "xid94": _w(hbm=3),
    "xid95": _w(hbm=4), "xid140": _w(hbm=4),
    "xid74": _w(nvlink=4), "xid_nvlink": _w(nvlink=3.5), "xid121": _w(nvlink=1),
    "xid79": _w(pcie=1.5, power=1, thermal=0.7, gpu_core=0.3),
    "aer_corrected": _w(pcie=0.35), "aer_nonfatal": _w(pcie=2.5), "aer_fatal": _w(pcie=3.5),
    "aer_bit_corrected": _w(pcie=0.15), "aer_bit_uncorrected": _w(pcie=1), "aer_surprise_down": _w(pcie=2.5),
    "nccl_timeout": _w(network=0.4, nvlink=0.4), "nccl_hang": _w(network=0.5, nvlink=0.5),
    "nccl_net": _w(network=3.5), "nccl_error": _w(network=1.5), "nccl_cuda": _w(gpu_core=0.5),
    "sel_psu": _w(power=3.5), "sel_thermal": _w(thermal=3.5), "sel_memory": _w(hbm=0.5), "sel_pcie": _w(pcie=2.5),
    "dcgm_memory": _w(hbm=2.5), "dcgm_pcie": _w(pcie=2.5), "dcgm_nvlink": _w(nvlink=2.5), "dcgm_power": _w(power=2),
    "dcgm_thermal": _w(thermal=2), "dcgm_other": _w(gpu_core=1.5),
    "smi_ecc_uncorrectable": _w(hbm=3), "smi_ecc_correctable": _w(hbm=0.3), "smi_retired_pages": _w(hbm=1.5),
    "smi_retire_pending": _w(hbm=2.5), "smi_remapped_unc": _w(hbm=1.5), "smi_remap_pending": _w(hbm=3),
    "smi_remap_failure": _w(hbm=4), "smi_temp_high": _w(thermal=3), "smi_thermal_slowdown": _w(thermal=2.5),
    "smi_power_brake": _w(power=3), "smi_hw_slowdown": _w(thermal=0.7, power=0.7), "smi_pcie_degraded": _w(pcie=2),
    "smi_pcie_replay": _w(pcie=1),
}
MIN_SCORE = 1.5  # below this total evidence a window is diagnosed "none"


def rule_scores(tokens: Iterable[str]) -> dict[str, float]:
    """Evidence per fault: ``sum over tokens t of w[t, fault] * (1 + ln count_t)`` (repeats count sub-linearly:
    a burst of 50 corrected AER lines is stronger than one, not 50 times stronger).

    Examples
    --------
    >>> s = rule_scores(["xid79", "aer_fatal"])
    >>> max(s, key=s.get)
    'pcie'
    """
    import math

    counts: dict[str, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    score = dict.fromkeys(FAULTS, 0.0)
    for t, n in counts.items():
        for fault, w in RULES.get(t, {}).items():
            score[fault] += w * (1.0 + math.log(n))
    return score
