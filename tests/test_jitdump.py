"""jitdump files (perfparser_py/jitdump.py) written here after the specification, behind a
synthesized recording: functions named at their times, moved, re-compiled at one address;
the dump's byte order, TSC timestamps, and dumps that are damaged or hostile."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from perfparser_py.jitdump import tsc_to_perf_time
from perfparser_py.perfdata.events import TimeConvEvent
from perfparser_py.perfdata.records import time_conv_struct
from tests.corpus.expect import decode, run_parser
from tests.synth import PipeWriter

PID = 4242
CODE = 0x7F0000001000
MONOTONIC = 1


class Dump:
    """A jit-PID.dump in either byte order."""

    def __init__(self, big_endian: bool = False, flags: int = 0) -> None:
        self.e = ">" if big_endian else "<"
        self.out = bytearray(struct.pack(self.e + "IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, PID,
                                         0, flags))

    def record(self, rid: int, time: int, body: bytes, size: int | None = None) -> None:
        self.out += struct.pack(self.e + "IIQ", rid, 16 + len(body) if size is None else size,
                                time) + body

    def load(self, time: int, addr: int, size: int, index: int, name: bytes) -> None:
        self.record(0, time, struct.pack(self.e + "IIQQQQ", PID, PID, addr, addr, size, index)
                    + name + b"\0" + b"\x90" * size)

    def move(self, time: int, old: int, new: int, size: int, index: int) -> None:
        self.record(1, time, struct.pack(self.e + "IIQQQQQ", PID, PID, new, old, new, size,
                                         index))

    def debug(self, time: int, addr: int, entries: list[tuple[int, int, bytes]],
              nr: int | None = None) -> None:
        body = struct.pack(self.e + "QQ", addr, len(entries) if nr is None else nr)
        for at, line, name in entries:
            body += struct.pack(self.e + "QiI", at, line, 0) + name + b"\0"
        self.record(2, time, body)


def _stream(dump_dir: Path, samples: list[tuple[int, int]], clockid: int | None = MONOTONIC,
            time_conv: bytes | None = None) -> bytes:
    w = PipeWriter(clockid=clockid)
    if time_conv is not None:
        w.record(79, time_conv, sample_id=False)
    w.comm(PID, PID, b"jit", 1)
    w.mmap2(PID, 0x7F0000100000, 0x1000, 0, str(dump_dir / f"jit-{PID}.dump").encode(), 2)
    for time, ip in samples:
        w.sample(PID, PID, time, ip, [ip])
    return w.data()


def _run(tmp_path: Path, dump: bytes | None, samples, **kw) -> tuple[list, bytes]:
    if dump is not None:
        (tmp_path / f"jit-{PID}.dump").write_bytes(dump)
    data = tmp_path / "perf.data"
    data.write_bytes(_stream(tmp_path, samples, **kw))
    res = run_parser(["--input", str(data)], timeout=60)
    assert res.returncode == 0, res.stderr
    frames = [(f.sym, f"{f.chain[0][2]}:{f.chain[0][3]}" if f.chain[0][2] else None)
              for s in decode(res.stdout)[0] for f in s.frames[:1]]
    return frames, res.stderr


@pytest.mark.parametrize("big_endian", [False, True])
def test_functions_are_named_in_time_order(tmp_path: Path, big_endian: bool) -> None:
    d = Dump(big_endian)
    d.debug(9, CODE, [(CODE, 5, b"a.js"), (CODE + 8, 6, b"\xff"), (CODE + 16, 7, b"b.js")])
    d.load(10, CODE, 32, 1, b"alpha")
    d.move(20, CODE, CODE + 0x1000, 32, 1)
    d.load(30, CODE, 32, 2, b"beta")  # re-compiled where alpha was
    samples = [(5, CODE + 4),  # before alpha existed
               (15, CODE + 4), (16, CODE + 9), (17, CODE + 20),  # past its last entry
               (25, CODE + 0x1009),  # alpha where it moved
               (35, CODE + 4), (36, CODE + 0x1004)]
    frames, stderr = _run(tmp_path, bytes(d.out), samples)
    assert stderr == b""
    assert frames == [(None, None), ("alpha", "a.js:5"), ("alpha", "a.js:6"), ("alpha", None),
                      ("alpha", "a.js:6"), ("beta", None), ("alpha", "a.js:5")]


def test_tsc_timestamps_are_converted_with_time_conv(tmp_path: Path) -> None:
    tc = TimeConvEvent(time_shift=1, time_mult=3, time_zero=1000, time_cycles=0,
                       time_mask=0, cap_user_time_zero=True, cap_user_time_short=False)
    assert tsc_to_perf_time(100, tc) == 1150  # time_zero + cycles * mult / 2**shift
    d = Dump(flags=1)
    d.load(100, CODE, 16, 1, b"gamma")  # at perf time 1150
    conv = time_conv_struct(False).build(dict(
        time_shift=1, time_mult=3, time_zero=1000, extension=dict(
            time_cycles=0, time_mask=0, cap_user_time_zero=1, cap_user_time_short=0)))
    frames, stderr = _run(tmp_path, bytes(d.out), [(1100, CODE), (1200, CODE)],
                          time_conv=conv)
    assert stderr == b""
    assert [f[0] for f in frames] == [None, "gamma"]
    frames, stderr = _run(tmp_path, bytes(d.out), [(1200, CODE)])
    assert b"no TIME_CONV" in stderr and frames == [(None, None)]


def test_a_recording_without_clock_monotonic_maps_functions_from_the_start(tmp_path):
    d = Dump()
    d.load(10**12, CODE, 16, 1, b"delta")  # not in the recording's clock
    frames, stderr = _run(tmp_path, bytes(d.out), [(5, CODE)], clockid=None)
    assert stderr.count(b"perf record -k mono") == 1
    assert frames == [("delta", None)]


def _hostile() -> dict[str, bytes]:
    cases = {}
    d = Dump()
    d.record(0, 10, b"", size=0)
    cases["record of size 0"] = bytes(d.out)
    d = Dump()
    d.record(0, 10, b"x" * 8, size=1 << 31)
    cases["record past the end"] = bytes(d.out)
    d = Dump()
    d.debug(9, CODE, [(CODE, 1, b"a.js")], nr=2**63)
    d.load(10, CODE, 16, 1, b"epsilon")
    cases["debug entry count too large"] = bytes(d.out)
    d = Dump()
    d.record(0, 10, struct.pack("<IIQQQQ", PID, PID, CODE, CODE, 16, 1) + b"n" * 100000)
    cases["name without its NUL"] = bytes(d.out)
    d = Dump()
    d.move(10, CODE, CODE + 64, 16, 99)
    cases["move of nothing loaded"] = bytes(d.out)
    cases["header only"] = bytes(Dump().out)
    cases["truncated header"] = bytes(Dump().out)[:20]
    cases["not a dump"] = b"\0" * 100
    return cases


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_a_damaged_dump_costs_at_most_its_functions(tmp_path: Path, case: str) -> None:
    frames, stderr = _run(tmp_path, _hostile()[case], [(20, CODE)])
    assert len(frames) == 1
    assert stderr.count(b"\n") <= 1
    if case == "debug entry count too large":
        assert frames == [("epsilon", None)]  # its one entry is the last: no line


def test_a_fifo_or_directory_named_like_a_dump_is_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / f"jit-{PID}.dump")  # opening it would block
    frames, stderr = _run(tmp_path, None, [(20, CODE)])
    assert frames == [(None, None)] and b"was not found" in stderr


def test_marker_names():
    """A dump's marker is the mapping of a file named exactly jit-<decimal pid>.dump."""
    from perfparser_py.jitdump import _marker_pid

    assert _marker_pid(b"jit-1234.dump") == 1234
    assert _marker_pid(b"jit-007.dump") == 7
    for name in (b"jit-.dump", b"jit-12a.dump", b"jit-12.dump.1", b"xjit-12.dump", b"jit-12.dum",
                 b"jit-+1.dump", b"jit- 1.dump", b"jit.dump", b""):
        assert _marker_pid(name) is None, name
