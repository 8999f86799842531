"""Truncated recordings: `perf record` killed with SIGKILL leaves data size 0 in the header
(never finalised). Every complete record is decoded, with perf report's warning."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time

import pytest

from perfparser_py import protocol as P
from tests.robustness.cli_run import FP, assert_clean, env, options, parser_cmd
from tests.robustness.fuzzer import layout

TIMEOUT = 60


def _parse(path) -> tuple[subprocess.CompletedProcess, int]:
    res = subprocess.run([*parser_cmd(), *options(FP), "--input", str(path)],
                         capture_output=True, timeout=TIMEOUT, env=env())
    assert_clean(res.returncode, res.stderr, res.stdout)
    return res, sum(isinstance(m, P.Sample) for m in P.read_stream(res.stdout).messages)


def _unfinalised(tmp_path, cut_inside_record: bool):
    """The fp recording as perf leaves it when killed: data size 0, no feature sections."""
    data = (FP / "perf.data").read_bytes()
    records = layout(data).records
    off, _, size = records[len(records) // 2]
    end = off + size // 2 if cut_inside_record else off
    head = bytearray(data[:end])
    struct.pack_into("<Q", head, 48, 0)
    path = tmp_path / "unfinished.data"
    path.write_bytes(head)
    return path, sum(1 for r in records if r[1] == 9 and r[0] < off)


@pytest.mark.parametrize("inside", [False, True], ids=["at-record", "inside-record"])
def test_header_never_finalised_decodes_every_complete_record(tmp_path, inside):
    path, complete_samples = _unfinalised(tmp_path, inside)
    res, samples = _parse(path)
    assert res.returncode == 0
    _assert_one_warning(res.stderr, inside)
    assert samples == complete_samples > 0


def _assert_one_warning(stderr: bytes, cut: bool | None = None) -> None:
    """perf's words once, with what was read and what to do, and no second message about a
    record cut at the end (cut: whether one was; None: either)."""
    assert stderr.count(b"data size field is 0") == 1
    assert stderr.count(b"the file looks unfinished") == 1
    assert stderr.count(b"Stop perf record with Ctrl-C") == 1
    if cut is not None:
        assert stderr.count(b"ends inside a record") == int(cut)


def _start_recording(out) -> subprocess.Popen:
    """perf record of a busy shell loop, returned once it has written 200 kB to `out`."""
    proc = subprocess.Popen(
        ["perf", "record", "-F", "10000", "-g", "-m", "16", "-o", str(out), "--",
         "sh", "-c", "while :; do /bin/true; done"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if out.exists() and out.stat().st_size > 200_000:
            break
        time.sleep(0.05)
    return proc


def test_perf_record_killed_with_sigkill(tmp_path):
    out = tmp_path / "perf.data"
    proc = _start_recording(out)
    os.killpg(proc.pid, signal.SIGKILL)  # perf and its workload, nothing else
    proc.wait(10)
    assert struct.unpack_from("<Q", out.read_bytes(), 48)[0] == 0  # data size never written
    res, samples = _parse(out)
    assert res.returncode == 0
    _assert_one_warning(res.stderr)
    assert samples > 100


def test_file_still_being_written(tmp_path):
    """Read while perf record is still writing: what is there so far, one warning."""
    out = tmp_path / "perf.data"
    proc = _start_recording(out)
    try:
        res, samples = _parse(out)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert res.returncode == 0
    _assert_one_warning(res.stderr)
    assert samples > 100
