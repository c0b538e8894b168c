"""Golden tests of every telemetry parser on message formats written by hand from NVIDIA's Xid / DCGM /
nvidia-smi documentation, the kernel's pcieaer-howto, ipmitool's SEL listing and PyTorch's NCCL watchdog.
Expected times come from the standard library's datetime, not from the parsers."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from fastnips.diagnosis import (
    Event,
    parse_dcgm_json,
    parse_log_lines,
    parse_log_text,
    parse_nvidia_smi_xml,
    parse_sel_text,
)


def utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def one(text: str, **kw) -> Event:
    fast, ref = parse_log_text(text, "node-x", **kw), parse_log_lines(text, "node-x", **kw)
    assert fast == ref
    assert len(fast) == 1, fast
    return fast[0]


XID_CASES = [
    ("Dec  2 21:00:01 gpu-07 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
     "GPU has fallen off the bus.", "gpu-07", "0000:3b:00.0", "79", "critical", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec 12 03:04:05 n2 kernel: NVRM: Xid (0000:86:00): 48, pid=901, name=train, An uncorrectable double bit "
     "error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.", "n2", "0000:86:00.0",
     "48", "critical", utc(2026, 12, 12, 3, 4, 5)),
    ("2026-12-02T21:00:01.250000+02:00 h3 kernel: NVRM: Xid (PCI:0000:3B:00): 63, pid=1, name=x, Row Remapper: "
     "New row (0x00000000004f3d21) has been marked for remapping", "h3", "0000:3b:00.0", "63", "warning",
     utc(2026, 12, 2, 19, 0, 1) + 0.25),
    ("2026-12-02T21:00:01Z h3 kernel: NVRM: Xid (PCI:0000:3b:00): 64, pid=1, Row Remapper: Failed to remap row",
     "h3", "0000:3b:00.0", "64", "critical", utc(2026, 12, 2, 21, 0, 1)),
    ("[Wed Dec  2 21:00:01 2026] NVRM: Xid (PCI:0000:5e:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal "
     "error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", "node-x", "0000:5e:00.0", "74", "critical",
     utc(2026, 12, 2, 21, 0, 1)),
    ("[Wed Dec  2 21:00:01 2026] NVRM: Xid (PCI:0000:5e:00): 74, pid=7, NVLink: Link 2 recovery (0x0, 0x0)",
     "node-x", "0000:5e:00.0", "74", "error", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00): 92, pid=1, High single-bit ECC error rate", "g",
     "0000:3b:00.0", "92", "warning", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00): 94, pid=1, Contained: SM (0x1). RST: No, D-RST: No",
     "g", "0000:3b:00.0", "94", "error", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00): 95, pid=1, Uncontained: FBHUB. RST: Yes, D-RST: No",
     "g", "0000:3b:00.0", "95", "critical", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00): 119, pid=1, Timeout after 6s of waiting for RPC "
     "response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL)", "g", "0000:3b:00.0", "119", "critical",
     utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=5, Graphics SM Warp Exception on (GPC 0, TPC 0,"
     " SM 0): Out Of Range Address", "g", "0000:3b:00.0", "13", "warning", utc(2026, 12, 2, 21, 0, 1)),
    ("Dec  2 21:00:01 g kernel: NVRM: Xid (PCI:0000:3b:00.1): 999, pid=5, something new", "g", "0000:3b:00.1", "999",
     "warning", utc(2026, 12, 2, 21, 0, 1)),
]


@pytest.mark.parametrize(("line", "node", "comp", "code", "sev", "t"), XID_CASES)
def test_xid_lines(line, node, comp, code, sev, t):
    e = one(line, year=2026)
    assert (e.source, e.kind, e.node, e.component, e.code, e.severity) == ("xid", "xid", node, comp, code, sev)
    assert e.time == pytest.approx(t, abs=1e-6)
    assert e.raw == line


def test_bare_dmesg_stamp_is_seconds_since_boot():
    e = one("[  123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.", boot_time=1e9)
    assert e.time == pytest.approx(1e9 + 123.456789)
    assert one("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", boot_time=5.0).time == 5.0


def test_bsd_stamp_takes_the_given_year_and_feb_29():
    assert one("Feb 29 00:00:00 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x").time == utc(2000, 2, 29)
    # An impossible date (Feb 29 of 2026) is no stamp: the line keeps its event, at boot_time.
    assert one("Feb 29 00:00:00 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x", year=2026, boot_time=7.0).time == 7.0


AER_LOG = """\
Dec  2 21:00:01 h1 kernel: pcieport 0000:00:03.0: AER: Corrected error received: 0000:3b:00.0
Dec  2 21:00:01 h1 kernel: nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
Dec  2 21:00:01 h1 kernel: nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00000001/0000a000
Dec  2 21:00:01 h1 kernel: nvidia 0000:3b:00.0:    [ 0] RxErr                  (First)
Dec  2 21:00:02 h1 kernel: 0000:50:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, \
(Requester ID)
Dec  2 21:00:02 h1 kernel: 0000:50:00.0:   device [8086:0329] error status/mask=00100000/00000000
Dec  2 21:00:02 h1 kernel: 0000:50:00.0:    [20] UnsupReq               (First)
Dec  2 21:00:02 h1 kernel: 0000:50:00.0: AER:   TLP Header: 04000001 00200a03 05010000 00050100
Dec  2 21:00:03 h1 kernel: pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), \
type=Transaction Layer, (Requester ID)
Dec  2 21:00:03 h1 kernel: pcieport 0000:00:01.0:    [ 5] SurpriseDown           (First)
"""


def test_aer_lines_from_the_kernel_howto():
    ev = parse_log_text(AER_LOG, year=2026)
    assert ev == parse_log_lines(AER_LOG, year=2026)
    got = [(e.component, e.kind, e.code, e.severity) for e in ev]
    assert got == [("0000:3b:00.0", "aer_corrected", "Physical Layer", "warning"),
                   ("0000:3b:00.0", "aer_bit", "RxErr", "info"),
                   ("0000:50:00.0", "aer_fatal", "Transaction Layer", "critical"),
                   ("0000:50:00.0", "aer_bit", "UnsupReq", "error"),
                   ("0000:00:01.0", "aer_nonfatal", "Transaction Layer", "error"),
                   ("0000:00:01.0", "aer_bit", "SurpriseDown", "error")]
    assert all(e.node == "h1" and e.source == "aer" for e in ev)
    assert ev[2].time == utc(2026, 12, 2, 21, 0, 2)


NCCL_LOG = """\
[rank3]:[E1202 21:10:00.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation \
timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for \
600012 milliseconds before timing out.
gpu-07:1234:5678 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.7<0>
gpu-07:1234:5678 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52412> with status=IBV_WC_RETRY_EXC_ERR(12) \
opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.7 remoteGids::ffff:10.0.0.2
gpu-08:77:78 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<40000> with error 12, opcode 0, len 0, vendor \
err 129
[rank0]:[E1202 21:11:00.5 ProcessGroupNCCL.cpp:1413] [PG 0 Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 \
seconds without making progress in monitoring enqueued collectives.
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was \
a network error, NCCL version 2.21.5
ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
"""


def test_nccl_and_watchdog_lines():
    ev = parse_log_text(NCCL_LOG, "trainer", year=2026)
    assert ev == parse_log_lines(NCCL_LOG, "trainer", year=2026)
    got = [(e.node, e.component, e.kind, e.code) for e in ev]
    assert got == [("trainer", "rank3", "nccl_timeout", "ALLREDUCE"),
                   ("gpu-07", "gpu3", "nccl_net", "IBV_WC_RETRY_EXC_ERR"),
                   ("gpu-08", "gpu0", "nccl_net", "error 12"),
                   ("trainer", "rank0", "nccl_hang", "watchdog_stuck"),
                   ("trainer", "", "nccl_error", "ncclRemoteError")]
    assert ev[0].time == pytest.approx(utc(2026, 12, 2, 21, 10, 0) + 0.123456789, abs=1e-6)
    assert ev[3].time == pytest.approx(utc(2026, 12, 2, 21, 11, 0) + 0.5)


SEL = """\
   1 | 12/02/2026 | 21:00:01 | Power Supply PSU1_Status | Power Supply AC lost | Asserted
   2 | 12/02/2026 | 21:00:09 | Power Supply PSU1_Status | Power Supply AC lost | Deasserted
  1a | 12/02/2026 | 09:05:11 PM | Temperature GPU3_Temp | Upper Critical going high | Asserted | Reading 95 > \
Threshold 90 degrees C
  1b | 12/02/26 | 21:06:00 | Memory #0x01 | Uncorrectable ECC | Asserted
  1c | Pre-Init  |0000000012| System Event #0xff | Timestamp Clock Sync | Asserted
  1d | 12/02/2026 | 21:07:00 | Critical Interrupt PCIe_Slot3 | Bus Uncorrectable error | Asserted
  1e | 12/02/2026 | 21:08:00 | Fan FAN2 | Lower Non-critical going low | Asserted
SEL has no entries
"""


def test_sel_records():
    ev = parse_sel_text(SEL, "bmc-7")
    got = [(e.kind, e.component, e.code, e.severity) for e in ev]
    assert got == [("sel_psu", "PSU1_Status", "Power Supply AC lost", "critical"),
                   ("sel_psu_clear", "PSU1_Status", "Power Supply AC lost", "info"),
                   ("sel_thermal", "GPU3_Temp", "Upper Critical going high", "critical"),
                   ("sel_memory", "#0x01", "Uncorrectable ECC", "critical"),
                   ("sel_pcie", "PCIe_Slot3", "Bus Uncorrectable error", "critical"),
                   ("sel_thermal", "FAN2", "Lower Non-critical going low", "warning")]
    assert [e.time for e in ev[:4]] == [utc(2026, 12, 2, 21, 0, 1), utc(2026, 12, 2, 21, 0, 9),
                                        utc(2026, 12, 2, 21, 5, 11), utc(2026, 12, 2, 21, 6, 0)]
    assert all(e.node == "bmc-7" and e.source == "sel" for e in ev)


DIAG3 = {"DCGM GPU Diagnostic": {"test_categories": [
    {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
    {"category": "Hardware", "tests": [
        {"name": "GPU Memory", "results": [{"gpu_ids": "0", "status": "Pass"}, {
            "gpu_ids": "1", "status": "Fail", "warnings": [{"warning": "Found 3 uncorrectable errors", "error_id": 83}],
            "info": "..."}]},
        {"name": "Diagnostic", "results": [{"gpu_ids": "0", "status": "Skip"}, {"gpu_ids": "1", "status": "Skip"}]}]},
    {"category": "Integration", "tests": [{"name": "PCIe", "results": [
        {"gpu_ids": "0", "status": "Warn", "warnings": ["PCIe replay count 120 exceeds 100"]}]}]}]}}
DIAG4 = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
    {"name": "NVLink", "results": [{"entity_id": 5, "status": "Fail"}]}]}]}}
HEALTH = {"header": ["Health Monitor Report"], "body": {"Overall Health": {"value": "Failure"}, "GPU": {"children": {
    "GPU ID: 0": {"children": {"Health": {"value": "Healthy"}}},
    "GPU ID: 2": {"children": {"Health": {"value": "Failure"}, "Errors": {"children": {
        "Memory": {"value": "Failure", "message": "A DBE has occurred"},
        "Thermal": {"value": "Warning", "message": "Clocks throttled"}}}}}}}}}


def test_dcgm_json():
    ev = parse_dcgm_json(json.dumps(DIAG3), "n1", time=100.0)
    assert [(e.component, e.kind, e.code, e.severity, e.time) for e in ev] == [
        ("gpu1", "dcgm_fail", "GPU Memory", "error", 100.0), ("gpu0", "dcgm_warn", "PCIe", "warning", 100.0)]
    assert "[83] Found 3 uncorrectable errors" in ev[0].raw
    assert [(e.component, e.kind, e.code) for e in parse_dcgm_json(json.dumps(DIAG4))] == [
        ("gpu5", "dcgm_fail", "NVLink")]
    ev = parse_dcgm_json(json.dumps(HEALTH), "n1")
    assert [(e.component, e.kind, e.code, e.severity) for e in ev] == [
        ("gpu2", "dcgm_health", "Memory", "error"), ("gpu2", "dcgm_health", "Thermal", "warning")]
    with pytest.raises(ValueError, match="not a JSON document"):
        parse_dcgm_json('{"DCGM GPU Diagnostic": ')
    with pytest.raises(ValueError, match=r"nested too deeply|nested deeper"):
        parse_dcgm_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="time"):
        parse_dcgm_json("{}", time=float("nan"))


SMI = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <timestamp>Wed Dec  2 21:00:00 2026</timestamp>
  <driver_version>550.54.15</driver_version>
  <attached_gpus>2</attached_gpus>
  <gpu id="00000000:3B:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <pci><pci_bus_id>00000000:3B:00.0</pci_bus_id>
      <pci_gpu_link_info><link_widths><max_link_width>16x</max_link_width>
        <current_link_width>16x</current_link_width></link_widths></pci_gpu_link_info>
      <replay_counter>0</replay_counter></pci>
    <clocks_event_reasons>
      <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
      <clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>
    </clocks_event_reasons>
    <ecc_errors><volatile><sram_correctable>0</sram_correctable><sram_uncorrectable>0</sram_uncorrectable>
      <dram_correctable>250</dram_correctable><dram_uncorrectable>2</dram_uncorrectable></volatile></ecc_errors>
    <retired_pages><double_bit_retirement><retired_count>0</retired_count></double_bit_retirement>
      <pending_retirement>No</pending_retirement></retired_pages>
    <remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>2</remapped_row_unc>
      <remapped_row_pending>Yes</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></remapped_rows>
    <temperature><gpu_temp>41 C</gpu_temp><gpu_temp_slow_threshold>90 C</gpu_temp_slow_threshold></temperature>
  </gpu>
  <gpu id="00000000:5E:00.0">
    <pci><pci_gpu_link_info><link_widths><max_link_width>16x</max_link_width>
      <current_link_width>8x</current_link_width></link_widths></pci_gpu_link_info>
      <replay_counter>37</replay_counter></pci>
    <clocks_throttle_reasons>
      <clocks_throttle_reason_hw_thermal_slowdown>Active</clocks_throttle_reason_hw_thermal_slowdown>
      <clocks_throttle_reason_hw_power_brake_slowdown>Active</clocks_throttle_reason_hw_power_brake_slowdown>
    </clocks_throttle_reasons>
    <ecc_errors><volatile><single_bit><total>3</total></single_bit><double_bit><total>0</total></double_bit>
      </volatile></ecc_errors>
    <retired_pages><double_bit_retirement><retired_count>4</retired_count></double_bit_retirement>
      <pending_retirement>Yes</pending_retirement></retired_pages>
    <temperature><gpu_temp>93 C</gpu_temp><gpu_temp_slow_threshold>90 C</gpu_temp_slow_threshold></temperature>
  </gpu>
</nvidia_smi_log>
"""


def test_nvidia_smi_xml():
    ev = parse_nvidia_smi_xml(SMI, "n9")
    got = [(e.component, e.kind, e.code, e.severity) for e in ev]
    assert got == [("0000:3b:00.0", "smi_ecc_uncorrectable", "2", "error"),
                   ("0000:3b:00.0", "smi_ecc_correctable", "250", "warning"),
                   ("0000:3b:00.0", "smi_remapped_unc", "2", "warning"),
                   ("0000:3b:00.0", "smi_remap_pending", "Yes", "error"),
                   ("0000:5e:00.0", "smi_ecc_correctable", "3", "info"),
                   ("0000:5e:00.0", "smi_retired_pages", "4", "warning"),
                   ("0000:5e:00.0", "smi_retire_pending", "Yes", "error"),
                   ("0000:5e:00.0", "smi_temp_high", "93 C", "error"),
                   ("0000:5e:00.0", "smi_thermal_slowdown", "clocks_throttle_reason_hw_thermal_slowdown", "error"),
                   ("0000:5e:00.0", "smi_power_brake", "clocks_throttle_reason_hw_power_brake_slowdown", "error"),
                   ("0000:5e:00.0", "smi_pcie_degraded", "x8/x16", "warning"),
                   ("0000:5e:00.0", "smi_pcie_replay", "37", "warning")]
    assert {e.time for e in ev} == {utc(2026, 12, 2, 21, 0, 0)}
    assert {e.time for e in parse_nvidia_smi_xml(SMI, time=5.0)} == {5.0}


BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<nvidia_smi_log><timestamp>&lol2;</timestamp></nvidia_smi_log>"""
XXE = """<?xml version="1.0"?>
<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><nvidia_smi_log>&xxe;</nvidia_smi_log>"""


@pytest.mark.parametrize(("doc", "match"), [
    (BOMB, "refused XML"), (XXE, "refused XML"), ("<nvidia_smi_log><gpu>", "not well-formed"),
    ("<other/>", "no <nvidia_smi_log> root"), ("<a>" * 100 + "</a>" * 100, r"refused XML|root"),
    ("<nvidia_smi_log>&undefined;</nvidia_smi_log>", "not well-formed")])
def test_nvidia_smi_xml_refuses(doc, match):
    with pytest.raises(ValueError, match=match):
        parse_nvidia_smi_xml(doc)


def test_bad_arguments_name_the_argument():
    with pytest.raises(TypeError, match="text"):
        parse_log_text(b"NVRM")
    with pytest.raises(ValueError, match="year"):
        parse_log_text("", year=1800)
    with pytest.raises(ValueError, match="boot_time"):
        parse_log_lines("", boot_time=float("inf"))
    with pytest.raises(TypeError, match="node"):
        parse_sel_text("", node=3)


def test_xid74_non_fatal_is_not_critical():
    """'non-fatal' contains 'fatal': the old substring test made a non-fatal NVLink error critical."""
    head = "2026-12-02T21:00:01Z h kernel: NVRM: Xid (PCI:0000:5e:00): 74, pid=7, NVLink: "
    for tail, sev in (("non-fatal error detected on link 1", "error"), ("Nonfatal error on link 1", "error"),
                      ("fatal error detected on link 3", "critical"), ("Fatal error detected", "critical")):
        (e,) = parse_log_text(head + tail)
        assert e.severity == sev, tail
        assert parse_log_lines(head + tail) == [e]


def test_syslog_priority_prefix_keeps_the_stamp_and_host():
    """Forwarded syslog keeps the <PRI> (RFC 5424 adds a version): the stamp and host were lost (time = boot_time,
    node = the caller's), silently."""
    xid = "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    for line in (f"<4>1 2026-12-02T21:00:01Z gpu-07 {xid}", f"<4>Dec  2 21:00:01 gpu-07 {xid}"):
        (e,) = parse_log_text(line, "fallback", year=2026)
        assert (e.time, e.node) == (utc(2026, 12, 2, 21, 0, 1), "gpu-07"), line
        assert parse_log_lines(line, "fallback", year=2026) == [e]
    (e,) = parse_log_text("<4>[   12.5] NVRM: Xid (PCI:0000:3b:00): 79, x", boot_time=100.0)  # dmesg -r
    assert e.time == 112.5
