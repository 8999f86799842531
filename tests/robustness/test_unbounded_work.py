"""Issue 24 rule 7: no input makes the parser do unbounded work. Feature counts are bounded
by their section, a .gnu_debuglink candidate gets no whole-file CRC past a size cap, and a
perf-PID.map is streamed with a line length cap. Each input is built here; each run is timed."""

from __future__ import annotations

import os
import struct
import subprocess
import time

import pytest

from perfparser_py.jitmap import MAX_LINE, PerfMap
from perfparser_py.perfdata.declare import feature_structs
from perfparser_py.perfdata.features import parse_feature
from tests.robustness.hostile import (
    BASE,
    FEAT_CMDLINE,
    PID,
    PROG,
    file_mode,
    recording,
    run,
    strings,
    symbol,
)

TIMEOUT = 10
FEAT_HOSTNAME = 3
MiB = 1 << 20


def test_cmdline_count_bounded_by_its_section(tmp_path):
    w, n = recording([], samples_per_map=10, prog=str(PROG).encode())
    cmdline = strings([], count=2**32 - 1) + bytes(4 * MiB)  # 2^32-1 empty strings claimed
    hostname = struct.pack("<I", 8) + b"box\0\0\0\0\0"
    data = file_mode(w.data(), {FEAT_CMDLINE: cmdline, FEAT_HOSTNAME: hostname})
    (tmp_path / "perf.data").write_bytes(data)
    res = run(["--input", str(tmp_path / "perf.data"), "--app", str(PROG.parent),
               "--kallsyms", "/dev/null", "--no-cache"], TIMEOUT)
    assert res.code == 0 and res.samples == n
    assert "feature 11 not properly read" in res.stderr
    assert res.seconds < 5


def test_string_lists_decode_fast_and_build_back():
    s = feature_structs(False)[FEAT_CMDLINE]
    values = [b"", b"perf", b"record", b"x" * 100] * 60000  # ~8 MB
    data = s.build(values)
    start = time.monotonic()
    assert list(s.parse(data)) == values  # construct's declaration
    assert list(parse_feature(FEAT_CMDLINE, data, False)["cmdline"]) == values  # the reader's
    assert time.monotonic() - start < 3


def test_huge_sparse_debuglink_candidate_gets_no_crc(tmp_path):
    d = tmp_path / "linked"
    d.mkdir()
    subprocess.run(["objcopy", "--only-keep-debug", str(PROG), str(d / "prog.debug")],
                   check=True)
    subprocess.run(["objcopy", "--strip-all", "--remove-section=.note.gnu.build-id",
                    f"--add-gnu-debuglink={d / 'prog.debug'}", str(PROG), str(d / "prog")],
                   check=True)
    os.truncate(d / "prog.debug", 10 << 30)  # a valid ELF header, then 10 GiB of holes
    w, n = recording([], prog=str(d / "prog").encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run(["--input", str(tmp_path / "pipe.data"), "--app", str(d), "--debug", str(d),
               "--kallsyms", "/dev/null", "--no-cache"], TIMEOUT)
    assert res.code == 0 and res.samples == n


def test_perf_map_streamed_with_a_line_cap(tmp_path):
    maps = tmp_path / "maps"
    maps.mkdir()
    path = maps / f"perf-{PID}.map"
    with open(path, "wb") as f:
        f.write(b"1000 10 first\n")
        f.write(b"2000 10 " + b"y" * (MAX_LINE + 5) + b"\n")  # too long: skipped
        f.write(b"3000 10 after\n")
        f.truncate(3 << 30)  # then 3 GiB of holes: no newline in them
    m = PerfMap(str(path))
    assert m.lookup(0x1005) == (0x1000, "first")
    assert m.lookup(0x2005) is None
    assert m.lookup(0x3005) == (0x3000, "after")
    w, n = recording([b"//anon"])
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run(["--input", str(tmp_path / "pipe.data"), "--perf-map-path", str(maps),
               "--kallsyms", "/dev/null", "--no-cache"], TIMEOUT)
    assert res.code == 0 and res.samples == n
    assert res.max_rss < 300 * MiB, res.max_rss


@pytest.mark.parametrize("between", ["nothing", "sample", "sample+comm"])
def test_round_ends_behind_waiting_mmaps_cost_no_walk_of_them(tmp_path, between):
    # mmaps wait in the time-ordering queue until a sample needs them (here: one later than
    # their time, which never comes); every FINISHED_ROUND sorted and walked all of them,
    # though at most a sample and a task event could go out: 15 000 waiting mmaps and 5 MB of
    # round ends took over a minute, with a sample or a sample and a COMM in between 41 s
    from perfparser_py.perfdata.abi import SAMPLE_IP, SAMPLE_PERIOD, SAMPLE_TID, SAMPLE_TIME
    from tests.synth import PipeWriter

    w, n = recording([], samples_per_map=10, prog=str(PROG).encode(),
                     writer=PipeWriter(SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_PERIOD))
    for k in range(22000):
        w.mmap2(PID + 1, 0x10000000 + k * 0x10000, 0x1000, 0, b"/x/%d" % k, 10**9 + k)
    ip = BASE + symbol(PROG, "main") - 0x1000
    round_end = struct.pack("<IHH", 68, 0, 8)
    rounds = 0
    while len(w.out) < 4_900_000:  # under 5 MB in all
        rounds += 1
        if between != "nothing":
            w.sample(PID, PID, 1000 + rounds, ip)
        if between == "sample+comm":
            w.comm(PID + 2, PID + 2, b"other", 10**10 + rounds)
        w.out += round_end
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run(["--input", str(tmp_path / "pipe.data"), "--app", str(PROG.parent),
               "--kallsyms", "/dev/null", "--no-cache"], 30)
    assert res.code == 0 and res.samples == n + (rounds if between != "nothing" else 0)
    assert res.seconds < 10  # the Limits aim (docs/robustness.md); ~1 s here
