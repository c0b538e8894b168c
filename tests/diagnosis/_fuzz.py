"""Seeded input generators for the fuzz runs: golden documents mutated by random edits (insert, delete,
duplicate, splice, truncate, big numbers, control and non-ASCII characters), plus structural extremes."""

from __future__ import annotations

import json

import numpy as np

from .test_parsers import AER_LOG, DIAG3, DIAG4, HEALTH, NCCL_LOG, SEL, SMI, XID_CASES

LOG_CORPUS = [c[0] for c in XID_CASES] + AER_LOG.splitlines() + NCCL_LOG.splitlines()
SEL_CORPUS = SEL.splitlines()
JSON_CORPUS = [json.dumps(d) for d in (DIAG3, DIAG4, HEALTH)]
XML_CORPUS = [SMI]
ALPHABET = [*"0123456789abcdefABCDEF:.,;[]()<>{}|/\\\"'=&#!?- \t\n\r", "\x00", "\x1c", "\u2028", "\u00e9", "\ud800",
            "NVRM: Xid (", "PCIe Bus Error", "]", "NCCL WARN", "<!ENTITY", "<!DOCTYPE", "99999999999999", "-1", "1e309"]
MAX_LEN = 20_000


def mutate(rng: np.random.Generator, s: str, pieces: list[str]) -> str:
    for _ in range(int(rng.integers(1, 5))):
        n = len(s)
        op = int(rng.integers(7))
        i = int(rng.integers(n + 1))
        j = min(n, i + int(rng.integers(1, 64)))
        if op == 0:
            s = s[:i] + "".join(ALPHABET[int(k)] for k in rng.integers(len(ALPHABET), size=int(rng.integers(1, 6)))) \
                + s[i:]
        elif op == 1:
            s = s[:i] + s[j:]
        elif op == 2:
            s = s[:j] + s[i:j] * int(rng.integers(1, 50)) + s[j:]
        elif op == 3:
            s = s[:i] + pieces[int(rng.integers(len(pieces)))] + s[i:]
        elif op == 4:
            s = s[:i]
        elif op == 5:
            s = s[:i] + str(int(rng.integers(0, 2**62)) * 10 ** int(rng.integers(0, 20))) + s[j:]
        else:
            s = s[:i] + "\n" + s[i:]
    return s[:MAX_LEN]


def inputs(kind: str, n: int, seed: int):
    """``n`` fuzz inputs for the parser ``kind`` ("log", "sel", "json", "xml")."""
    rng = np.random.default_rng(seed)
    corpus = {"log": LOG_CORPUS, "sel": SEL_CORPUS, "json": JSON_CORPUS, "xml": XML_CORPUS}[kind]
    extremes = {"log": ["", "\n" * 1000, "NVRM: Xid (" * 2000, "[" * 5000 + "NVRM: Xid (PCI:0000:00:00): 1,"],
                "sel": ["", " | " * 5000, "1 | 01/01/1970 | 00:00:00 | " + "x" * 9000],
                "json": ["", "{" * 5000, '{"a":' * 3000, "[" * 70 + "]" * 70, '{"GPU ID: 1": ' * 80 + "0" + "}" * 80],
                "xml": ["", "<" * 5000, "<nvidia_smi_log>" + "<gpu>" * 200,
                        "<?xml version='1.0' encoding='x-bad'?><a/>"]}[kind]
    for k in range(n):
        if k < len(extremes):
            yield extremes[k]
        elif kind == "log" and rng.random() < 0.5:  # multi-line logs spliced from several mutated lines
            yield "\n".join(mutate(rng, corpus[int(rng.integers(len(corpus)))], corpus)
                            for _ in range(int(rng.integers(1, 8))))[:MAX_LEN]
        else:
            yield mutate(rng, corpus[int(rng.integers(len(corpus)))], corpus)
