"""Issue 24 rule 6: a record whose framing is sound (its size fits) but whose content is not
(a SAMPLE's call chain or array running past the record) is skipped and counted, with one
warning, as perf does; the run goes on. Only a lost framing ends it."""

from __future__ import annotations

import struct

from tests.robustness.hostile import PID, PROG, recording, run
from perfparser_py.perfdata.abi import RECORD_SAMPLE

TIMEOUT = 30


def _bad_samples(w, count: int, nr: int) -> None:
    """SAMPLEs (ip, tid, time, period, callchain) whose call chain claims `nr` entries but
    whose record holds one."""
    for k in range(count):
        body = struct.pack("<QIIQQQQ", 0x1234, PID, PID, 500 + k, 1000, nr, 0x1234)
        w._record(RECORD_SAMPLE, 2, body)


def _options() -> list[str]:
    return ["--app", str(PROG.parent), "--kallsyms", "/dev/null", "--no-cache",
            "--protocol", "current"]


def test_sample_with_a_chain_past_its_record_is_skipped(tmp_path):
    w, n1 = recording([], samples_per_map=30, prog=str(PROG).encode())
    _bad_samples(w, 3, 1 << 40)
    _bad_samples(w, 2, 5)
    w2, n2 = recording([], samples_per_map=40, prog=str(PROG).encode(), writer=w)
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run([*_options(), "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 0, res.stderr
    assert res.samples == n1 + n2  # the samples after the bad ones too
    assert res.stderr.count("skipping malformed record of type 9") == 1
    assert "5 malformed records skipped" in res.stderr


def test_lost_framing_still_ends_the_run(tmp_path):
    w, n = recording([], samples_per_map=30, prog=str(PROG).encode())
    w._record(RECORD_SAMPLE, 2, b"")
    w.out[-2:] = struct.pack("<H", 4)  # a record size < 8: where the next one starts is lost
    recording([], samples_per_map=10, prog=str(PROG).encode(), writer=w)
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run([*_options(), "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 5 and res.samples == n
