"""Shared fixtures of the designbench tests: lica-gdb (the reference implementation) when it is installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def gdb_layout():
    """lica-gdb's layout tasks module (its detection mAP, macro F1 and count metrics)."""
    return pytest.importorskip("gdb.tasks.layout", reason="lica-gdb is the reference: pip install lica-gdb")


@pytest.fixture(scope="session")
def gdb_template():
    """lica-gdb's template tasks module (matching, retrieval, clustering, generation metrics)."""
    return pytest.importorskip("gdb.tasks.template", reason="lica-gdb is the reference: pip install lica-gdb")


@pytest.fixture(scope="session")
def gdb_iou():
    """lica-gdb's box IoU."""
    return pytest.importorskip("gdb.metrics.core", reason="lica-gdb is the reference: pip install lica-gdb").iou
