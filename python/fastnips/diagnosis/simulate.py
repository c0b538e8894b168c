"""A fault-injection simulator of a GPU fleet's telemetry (SIMULATION: every number it yields is simulated).

Each :class:`Incident` is one node (8 GPUs) over about an hour, carrying one injected fault of
:data:`~fastnips.diagnosis.FAULTS` -- or none -- rendered as the raw files an operator would collect: a kernel
log with NVIDIA Xid and PCIe AER lines, an NCCL / PyTorch log, an ``ipmitool sel elist`` dump, an
``nvidia-smi -q -x`` report and a ``dcgmi diag -j`` report, in the formats the parsers read. So the whole
pipeline (parse, window, diagnose) runs on it.

Each fault emits each of its signals with a stated probability (:data:`SIGNATURES`), so signals go missing as in
real telemetry; every incident also gets background noise: ordinary kernel lines, application Xids (13, 31, 43),
sporadic corrected AER, correctable ECC counts, and the NCCL timeouts that follow any failure of a peer. The
probabilities are assumptions of this simulator, not measurements.
"""

from __future__ import annotations

import json
import time as _time
from dataclasses import dataclass, field

import numpy as np

from .events import Event, merge_events
from .ingestion import ingest_text
from .taxonomy import FAULTS, NONE

__all__ = ["SIGNATURES", "Incident", "simulate_incidents", "synthetic_log"]

BUS = ("0000:18:00", "0000:2a:00", "0000:3a:00", "0000:5d:00", "0000:9a:00", "0000:ab:00", "0000:ba:00", "0000:db:00")
T0 = 1_800_000_000.0  # 2027-01-15, the simulated fleet's epoch
XID_TEXT = {
    8: "Channel 00000010: GPU stopped processing", 13: "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of "
    "Range Address", 31: "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ "
    "0x7f00_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ", 43: "Ch 00000010", 45: "Ch 00000010",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
    "subpartition 0.", 61: "Internal micro-controller breakpoint/warning", 62: "Internal micro-controller halt",
    63: "Row Remapper: New row (0x00000000004f3d21) has been marked for remapping",
    64: "Row Remapper: Failed to remap row (0x00000000004f3d21)", 74: "NVLink: fatal error detected on link 3(0x0, "
    "0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", 79: "GPU has fallen off the bus.", 92: "High single-bit ECC error rate",
    94: "Contained: SM (0x1). RST: No, D-RST: No", 95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
    109: "Context switch timeout", 119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected "
    "function 76 (GSP_RM_CONTROL)", 120: "GSP task timeout @ pc:0x1a2b3c4", 140: "An unrecovered ECC error has "
    "been detected", 143: "GPU Initialization Failure", 145: "NVLINK: RLW Error"}

# fault -> [(probability, signal, parameter)]; a signal is rendered by _emit.
SIGNATURES: dict[str, list[tuple[float, str, object]]] = {
    "gpu_core": [(0.9, "xid_any", (119, 62, 109, 120, 61, 8, 143)), (0.25, "dcgm", "Diagnostic"),
                 (0.15, "xid", 79), (0.5, "xid", 45), (0.6, "nccl_timeout", None)],
    "hbm": [(0.85, "xid_any", (48, 94, 95, 63, 64, 92, 140)), (0.5, "xid_any", (63, 94)), (0.55, "smi", "hbm"),
            (0.25, "dcgm", "GPU Memory"), (0.5, "nccl_timeout", None)],
    "nvlink": [(0.8, "xid", 74), (0.2, "xid", 145), (0.3, "dcgm", "NVLink"), (0.8, "nccl_timeout", None),
               (0.3, "nccl_hang", None)],
    "pcie": [(0.6, "aer", "corrected"), (0.5, "aer", "fatal"), (0.25, "aer_bit", "SurpriseDown"), (0.5, "xid", 79),
             (0.3, "smi", "pcie"), (0.2, "sel", ("Critical Interrupt", "PCIe_Slot3", "Bus Uncorrectable error")),
             (0.15, "dcgm", "PCIe"), (0.6, "nccl_timeout", None)],
    "power": [(0.8, "sel", ("Power Supply", "PSU{k}_Status", "Power Supply AC lost")), (0.5, "xid", 79),
              (0.35, "smi", "power"), (0.2, "dcgm", "Targeted Power"), (0.6, "nccl_timeout", None),
              (0.2, "sel", ("Voltage", "P12V_GPU{k}", "Lower Critical going low"))],
    "thermal": [(0.8, "sel", ("Temperature", "GPU{k}_Temp", "Upper Critical going high")), (0.6, "smi", "thermal"),
                (0.2, "xid", 79), (0.15, "xid", 62), (0.2, "sel", ("Fan", "FAN{k}", "Lower Critical going low")),
                (0.4, "nccl_timeout", None)],
    "network": [(0.85, "nccl_net", None), (0.6, "nccl_error", "ncclRemoteError"), (0.8, "nccl_timeout", None),
                (0.3, "nccl_hang", None)],
    NONE: [],
}
NOISE: list[tuple[float, str, object]] = [(0.3, "xid_any", (13, 31, 43)), (0.15, "aer", "noise"),
                                          (0.25, "nccl_timeout", None), (0.2, "smi", "sbe")]
_SHARED = ("nccl_timeout", "nccl_hang")  # symptoms of any fault that stops a GPU, not evidence of one
BENIGN = ("systemd[1]: Started Session 4 of User root.", "kernel: [ 812.331] usb 1-1: new high-speed USB device "
          "number 3 using xhci_hcd", "kernel: [ 900.102] mlx5_core 0000:0c:00.0: mlx5e_open_channels:2574: "
          "created 64 channels", "CRON[2211]: (root) CMD (run-parts /etc/cron.hourly)",
          "kernel: [ 901.000] EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro")


def _iso(t: float) -> str:
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}+00:00"


@dataclass(frozen=True)
class Incident:
    """One simulated node-hour: the injected ``fault`` (or ``"none"``) on GPU index ``gpu`` from ``start``, and
    the telemetry ``files`` (name -> text) it produced."""

    node: str
    fault: str
    gpu: int
    start: float
    files: dict = field(default_factory=dict)

    def events(self) -> list[Event]:
        """The events of all its files (the real parsers, formats detected from the content)."""
        return merge_events(*(ingest_text(text, self.node, year=2027, time=self.start + 1800.0)
                              for _, text in sorted(self.files.items())))


class _Writer:
    def __init__(self, rng: np.random.Generator, node: str, gpu: int, t0: float):
        self.rng, self.node, self.gpu, self.t0 = rng, node, gpu, t0
        self.kern: list[tuple[float, str]] = []
        self.nccl: list[tuple[float, str]] = []
        self.sel: list[str] = []
        self.smi: set[str] = set()
        self.dcgm: list[str] = []

    def t(self) -> float:
        return self.t0 + float(self.rng.uniform(0, 3000))

    def kernel(self, text: str) -> None:
        t = self.t()
        self.kern.append((t, f"{_iso(t)} {self.node} kernel: {text}"))

    def xid(self, code: int, gpu: int | None = None) -> None:
        bus = BUS[self.gpu if gpu is None else gpu]
        pid = int(self.rng.integers(1000, 99999))
        self.kernel(f"NVRM: Xid (PCI:{bus}): {code}, pid={pid}, name=python3, {XID_TEXT.get(code, 'error')}")


def _emit(w: _Writer, signal: str, param: object) -> None:
    rng, bus = w.rng, BUS[w.gpu]
    if signal == "xid":
        w.xid(int(param))
    elif signal == "xid_any":
        w.xid(int(rng.choice(param)), None if param != (13, 31, 43) else int(rng.integers(8)))
    elif signal in ("aer", "aer_bit"):
        n = {"corrected": int(rng.integers(20, 120)), "noise": int(rng.integers(1, 3))}.get(str(param), 1)
        sev, typ = {"corrected": ("Corrected", "Physical Layer"), "noise": ("Corrected", "Physical Layer"),
                    "fatal": ("Uncorrected (Fatal)", "Transaction Layer")}.get(param, ("Uncorrected (Fatal)",
                                                                                      "Data Link Layer"))
        bit = {"corrected": "[ 0] RxErr", "noise": "[ 6] BadTLP", "fatal": "[20] UnsupReq"}.get(param, f"[ 5] {param}")
        for _ in range(n):
            w.kernel(f"nvidia {bus}.0: PCIe Bus Error: severity={sev}, type={typ}, (Receiver ID)")
            w.kernel(f"nvidia {bus}.0:    {bit}                  (First)")
    elif signal == "sel":
        kind, name, what = param
        t = w.t()
        stamp = _time.strftime("%m/%d/%Y | %H:%M:%S", _time.gmtime(t))
        w.sel.append(f"{len(w.sel) + 1:4x} | {stamp} | {kind} {name.format(k=w.gpu)} | {what} | Asserted")
    elif signal == "smi" or signal == "dcgm":
        (w.smi.add if signal == "smi" else w.dcgm.append)(str(param))
    else:
        t = w.t()
        stamp = f"[rank{w.gpu}]:[E{_time.strftime('%m%d %H:%M:%S', _time.gmtime(t))}.{int(t % 1 * 1e6):06d} "
        if signal == "nccl_timeout":
            line = (f"{stamp}ProcessGroupNCCL.cpp:632] [Rank {w.gpu}] Watchdog caught collective operation timeout: "
                    f"WorkNCCL(SeqNum={int(rng.integers(1, 10**6))}, OpType=ALLREDUCE, NumelIn=1048576, "
                    f"NumelOut=1048576, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
        elif signal == "nccl_hang":
            line = (f"{stamp}ProcessGroupNCCL.cpp:1413] [PG 0 Rank {w.gpu}] ProcessGroupNCCL's watchdog got stuck "
                    f"for 480 seconds without making progress in monitoring enqueued collectives.")
        elif signal == "nccl_net":
            line = (f"{_iso(t)} {w.node}:{int(rng.integers(1000, 9999))}:{int(rng.integers(1000, 9999))} [{w.gpu}] "
                    f"NCCL WARN NET/IB : Got completion from peer 10.0.3.{int(rng.integers(2, 250))}<52412> with "
                    f"status=IBV_WC_RETRY_EXC_ERR(12) opcode=0 len=0 vendor err 129 (Recv)")
        else:
            line = (f"{stamp}ProcessGroupNCCL.cpp:1895] [Rank {w.gpu}] NCCL error: remote process exited or there "
                    f"was a network error, NCCL version 2.21.5 {param}: A call failed possibly due to a network error")
        w.nccl.append((t, line))


def _smi_xml(w: _Writer) -> str:
    gpus = []
    for k, bus in enumerate(BUS):
        mine = k == w.gpu
        unc = int(w.rng.integers(1, 4)) if mine and "hbm" in w.smi else 0
        cor = int(w.rng.integers(1, 60)) if "sbe" in w.smi else 0
        pend = "Yes" if mine and "hbm" in w.smi and w.rng.random() < 0.6 else "No"
        temp = 92 if mine and "thermal" in w.smi else 41
        thermal = "Active" if mine and "thermal" in w.smi else "Not Active"
        brake = "Active" if mine and "power" in w.smi else "Not Active"
        width = "8x" if mine and "pcie" in w.smi else "16x"
        gpus.append(f"""<gpu id="0000{bus}.0"><pci><pci_bus_id>0000{bus}.0</pci_bus_id><pci_gpu_link_info>
<link_widths><max_link_width>16x</max_link_width><current_link_width>{width}</current_link_width></link_widths>
</pci_gpu_link_info><replay_counter>0</replay_counter></pci><clocks_event_reasons>
<clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
<clocks_event_reason_hw_thermal_slowdown>{thermal}</clocks_event_reason_hw_thermal_slowdown>
<clocks_event_reason_hw_power_brake_slowdown>{brake}</clocks_event_reason_hw_power_brake_slowdown>
</clocks_event_reasons><ecc_errors><volatile><dram_correctable>{cor}</dram_correctable>
<dram_uncorrectable>{unc}</dram_uncorrectable></volatile></ecc_errors><remapped_rows>
<remapped_row_corr>0</remapped_row_corr><remapped_row_unc>{unc}</remapped_row_unc>
<remapped_row_pending>{pend}</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></remapped_rows>
<temperature><gpu_temp>{temp} C</gpu_temp><gpu_temp_max_threshold>95 C</gpu_temp_max_threshold>
<gpu_temp_slow_threshold>90 C</gpu_temp_slow_threshold></temperature></gpu>""")
    stamp = _time.strftime("%a %b %d %H:%M:%S %Y", _time.gmtime(w.t0 + 3000))
    return (f'<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>'
            f"<timestamp>{stamp}</timestamp><driver_version>550.54.15</driver_version>{''.join(gpus)}</nvidia_smi_log>")


def _dcgm_json(w: _Writer) -> str:
    tests = [{"name": name, "results": [{"gpu_ids": str(k), "status": "Fail" if (k == w.gpu and name in w.dcgm)
                                         else "Pass"} for k in range(len(BUS))]}
             for name in ("Diagnostic", "GPU Memory", "PCIe", "NVLink", "Targeted Power")]
    return json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": tests}]}})


def _incident(rng: np.random.Generator, i: int, fault: str) -> Incident:
    node = f"sim-{i:05d}"
    gpu = int(rng.integers(len(BUS)))
    t0 = T0 + 7200.0 * i
    w = _Writer(rng, node, gpu, t0)
    sig = SIGNATURES[fault]
    drawn = [s for s in sig if rng.random() < s[0]]
    if sig and not any(s[1] not in _SHARED for s in drawn):  # a fault leaves at least one trace of its own
        specific = [s for s in sig if s[1] not in _SHARED]
        drawn.append(specific[int(rng.integers(len(specific)))])
    for _, signal, param in drawn + [s for s in NOISE if rng.random() < s[0]]:
        _emit(w, signal, param)
    for _ in range(int(rng.integers(2, 8))):
        t = w.t()
        w.kern.append((t, f"{_iso(t)} {node} {BENIGN[int(rng.integers(len(BENIGN)))]}"))
    files = {"kern.log": "\n".join(line for _, line in sorted(w.kern)) + "\n"}
    if w.nccl:
        files["train.log"] = "\n".join(line for _, line in sorted(w.nccl)) + "\n"
    if w.sel:
        files["sel.txt"] = "\n".join(w.sel) + "\n"
    if w.smi:
        files["nvidia-smi.xml"] = _smi_xml(w)
    if w.dcgm:
        files["dcgm.json"] = _dcgm_json(w)
    return Incident(node, fault, gpu, t0, files)


def simulate_incidents(n: int, *, seed: int = 0, none_fraction: float = 0.125) -> list[Incident]:
    """``n`` simulated incidents (SIMULATION), faults drawn uniformly from :data:`~fastnips.diagnosis.FAULTS`,
    a ``none_fraction`` of them healthy (noise only).

    Parameters
    ----------
    n : int
        Number of incidents (>= 1).
    seed : int
        The random seed; the same seed gives the same files, byte for byte.
    none_fraction : float
        Probability in [0, 1] that an incident carries no fault.

    Returns
    -------
    list of Incident
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: expected an int >= 1, got {n!r}")
    if not 0.0 <= float(none_fraction) <= 1.0:
        raise ValueError(f"none_fraction: expected a probability in [0, 1], got {none_fraction!r}")
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(n)):
        fault = NONE if rng.random() < none_fraction else FAULTS[int(rng.integers(len(FAULTS)))]
        out.append(_incident(rng, i, fault))
    return out


def synthetic_log(n_lines: int, *, relevant: float = 0.02, seed: int = 0) -> str:
    """A syslog-style kernel + NCCL log of ``n_lines`` lines, a ``relevant`` fraction of them telemetry the
    parsers extract (Xid, AER, NCCL), the rest ordinary kernel and daemon lines (for throughput benchmarks).

    Examples
    --------
    >>> log = synthetic_log(1000, relevant=0.1, seed=0)
    >>> log.count("\\n")
    1000
    """
    if isinstance(n_lines, bool) or not isinstance(n_lines, (int, np.integer)) or n_lines < 0:
        raise ValueError(f"n_lines: expected an int >= 0, got {n_lines!r}")
    if not 0.0 <= float(relevant) <= 1.0:
        raise ValueError(f"relevant: expected a fraction in [0, 1], got {relevant!r}")
    rng = np.random.default_rng(seed)
    pool: list[str] = []
    for i, fault in enumerate(FAULTS * 8):
        w = _Writer(rng, f"gpu-{i % 16:03d}", i % 8, T0)
        for p, signal, param in SIGNATURES[fault] + NOISE:
            if p > 0.3:
                _emit(w, signal, param)
        pool += [line for _, line in w.kern] + [line for _, line in w.nccl]
    out = []
    for j in range(int(n_lines)):
        t = T0 + j * 0.01
        if rng.random() < relevant:
            out.append(pool[int(rng.integers(len(pool)))])
        else:
            out.append(f"{_iso(t)} gpu-{j % 16:03d} {BENIGN[int(rng.integers(len(BENIGN)))]}")
    return "\n".join(out) + ("\n" if out else "")
