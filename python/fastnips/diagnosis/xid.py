"""The NVIDIA Xid catalogue: what each driver error code means, how severe it is, and which part it points at.

Written from NVIDIA's "Xid Errors" documentation (docs.nvidia.com/deploy/xid-errors): the description column and
the "possible causes" columns (HW error, driver error, user application error, system memory corruption, bus
error, thermal issue, frame-buffer corruption). ``fault`` is the category of :mod:`fastnips.diagnosis.taxonomy`
the code is evidence for; ``"software"`` marks codes that the documentation attributes mainly to the user's
application (13, 31, 43, 45), which a diagnoser must not turn into a repair.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["XID", "XidInfo", "xid_info"]


class XidInfo(NamedTuple):
    """One Xid code: its documented name, the severity used here and the fault category it points at."""

    name: str
    severity: str
    fault: str


XID: dict[int, XidInfo] = {
    8: XidInfo("GPU stopped processing", "error", "gpu_core"),
    13: XidInfo("Graphics Engine Exception", "warning", "software"),
    31: XidInfo("GPU memory page fault", "warning", "software"),
    32: XidInfo("Invalid or corrupted push buffer stream", "error", "pcie"),
    38: XidInfo("Driver firmware error", "error", "gpu_core"),
    43: XidInfo("GPU stopped processing", "warning", "software"),
    45: XidInfo("Preemptive cleanup, due to previous errors", "info", "software"),
    48: XidInfo("Double Bit ECC Error", "critical", "hbm"),
    56: XidInfo("Display Engine error", "error", "gpu_core"),
    57: XidInfo("Error programming video memory interface", "error", "hbm"),
    61: XidInfo("Internal micro-controller breakpoint/warning", "warning", "gpu_core"),
    62: XidInfo("Internal micro-controller halt", "error", "gpu_core"),
    63: XidInfo("ECC page retirement or row remapping recording event", "warning", "hbm"),
    64: XidInfo("ECC page retirement or row remapper recording failure", "critical", "hbm"),
    68: XidInfo("NVDEC0 Exception", "error", "gpu_core"),
    69: XidInfo("Graphics Engine class error", "error", "gpu_core"),
    74: XidInfo("NVLINK Error", "critical", "nvlink"),
    79: XidInfo("GPU has fallen off the bus", "critical", "pcie"),
    92: XidInfo("High single-bit ECC error rate", "warning", "hbm"),
    94: XidInfo("Contained ECC error", "error", "hbm"),
    95: XidInfo("Uncontained ECC error", "critical", "hbm"),
    109: XidInfo("Context Switch Timeout Error", "error", "gpu_core"),
    119: XidInfo("GSP RPC Timeout", "critical", "gpu_core"),
    120: XidInfo("GSP Error", "error", "gpu_core"),
    121: XidInfo("C2C Link corrected error", "warning", "nvlink"),
    122: XidInfo("SPI PMU RPC read failure", "error", "gpu_core"),
    123: XidInfo("SPI PMU RPC write failure", "error", "gpu_core"),
    124: XidInfo("SPI PMU RPC erase failure", "error", "gpu_core"),
    140: XidInfo("Unrecovered ECC Error", "critical", "hbm"),
    143: XidInfo("GPU Initialization Failure", "critical", "gpu_core"),
    144: XidInfo("NVLINK: SAW Error", "error", "nvlink"),
    145: XidInfo("NVLINK: RLW Error", "error", "nvlink"),
    146: XidInfo("NVLINK: TLW Error", "error", "nvlink"),
    147: XidInfo("NVLINK: TREX Error", "error", "nvlink"),
    148: XidInfo("NVLINK: NVLPW_CTRL Error", "error", "nvlink"),
    149: XidInfo("NVLINK: NETIR Error", "error", "nvlink"),
    150: XidInfo("NVLINK: MSE Error", "error", "nvlink"),
    154: XidInfo("GPU Recovery Action Changed", "warning", "gpu_core"),
}

_UNKNOWN = XidInfo("unknown Xid", "warning", "gpu_core")


def xid_info(code: int) -> XidInfo:
    """The catalogue entry of Xid ``code`` (an "unknown Xid" entry, severity warning, for codes not listed).

    Examples
    --------
    >>> xid_info(79).name
    'GPU has fallen off the bus'
    """
    return XID.get(code, _UNKNOWN)
