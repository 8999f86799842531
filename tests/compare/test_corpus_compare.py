"""tools/compare on the corpus: ours against Debian's upstream build, and ours against itself."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus.expect import CORPUS

REFERENCE = Path("/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser")
RECORDED = CORPUS / "recorded"
SYSROOT = str(CORPUS / "sysroot") + "/"


def compare(*args: str) -> tuple[int, dict]:
    res = subprocess.run([sys.executable, "-m", "perfparser_py.compare", "--json", *args],
                         capture_output=True, timeout=600)
    assert res.returncode in (0, 1), res.stderr.decode()
    return res.returncode, json.loads(res.stdout)


def test_upstream_loses_preexisting_processes_we_resolve_them():
    """hotspot #783: in a `perf record -a` profile the programs already running show ?? upstream."""
    assert REFERENCE.exists(), "Debian's hotspot package must be installed (tools/run-tests does)"
    case = RECORDED / "syswide-preexisting"
    code, report = compare(str(case / "perf.data"), "--reference", str(REFERENCE),
                           "--", "--app", str(case), "--sysroot", SYSROOT)
    assert code == 1
    diffs = report["differences"]
    main_kind = max(diffs, key=diffs.get)
    assert main_kind == "missing symbol (reference)"
    assert diffs[main_kind] >= 0.95 * report["samples"]["aligned"]
    rates = {row["comm"]: row for row in report["symbolization"]}
    for comm in ("pre_alpha", "pre_beta"):
        assert rates[comm]["ours"] >= 0.99 and rates[comm]["reference"] <= 0.01


CASE_FILES = sorted(p for p in RECORDED.glob("*/*.data") if p.parent.name != "badinput")


@pytest.mark.parametrize("data", CASE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ours_against_itself_is_identical(data: Path):
    ours = shlex.join([sys.executable, "-m", "perfparser_py.cli"])
    code, report = compare(str(data), "--reference", ours, "--", "--app", str(data.parent),
                           "--sysroot", SYSROOT)
    assert code == 0
    assert report["samples"]["identical_percent"] == 100.0
