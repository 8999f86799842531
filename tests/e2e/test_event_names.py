"""Event names as `perf script` prints them, for fresh recordings in pipe and file mode.

Pipe mode names an attr by the records after its HEADER_ATTR: an EVENT_UPDATE of type NAME,
the EVENT_DESC feature record, and for tracepoints the tracing data; without any of them perf
makes the name up from the attr (evsel__name: `cpu-clock:uH`). Each recording is checked as
perf wrote it and with those records cut out, against perf script on the same bytes.
"""

from __future__ import annotations

import collections
import struct
import subprocess
from pathlib import Path

import pytest

from tests.corpus.expect import decode, run_parser
from tests.e2e.programs import build_c

WORKLOAD = r"""
#include <stdlib.h>
#include <unistd.h>
static volatile long sink;
int main(void)
{
    for (int round = 0; round < 40; round++) {
        char *p = malloc(1 << 20);
        for (int i = 0; i < (1 << 20); i += 4096) p[i] = 1;  /* page faults */
        for (long i = 0; i < 3000000; i++) sink += i;
        free(p);
        usleep(100);  /* context switches */
    }
    return 0;
}
"""

EVENT_UPDATE, HEADER_FEATURE, HEADER_TRACING_DATA, FEAT_EVENT_DESC = 78, 80, 66, 12
EVENTS = {
    "cpu-clock-u": ["-e", "cpu-clock:u"],
    "precise-user": ["-e", "cpu-clock:uppp"],
    "two-events": ["-e", "task-clock", "-e", "page-faults:u"],
    "host-only": ["-e", "cpu-clock:H"],
    "tracepoint": ["-e", "sched:sched_switch", "-e", "cpu-clock:k"],
}


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Path:
    return build_c(tmp_path_factory.mktemp("names"), "w", WORKLOAD, "-O2")


def _record(exe: Path, events: list[str], out: Path, pipe: bool) -> None:
    with out.open("wb") as f:
        subprocess.run(["perf", "record", "-N", "-q", *events, "-o", "-" if pipe else str(out),
                        "--", str(exe)], check=True, stdout=f if pipe else subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)


def _without(data: bytes, drop) -> bytes:
    """A pipe-mode recording without the records for which drop(type, body) holds."""
    out = bytearray(data[:16])
    pos = 16
    while pos + 8 <= len(data):
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        end = pos + size
        if rtype == HEADER_TRACING_DATA:  # its payload follows the record
            end += struct.unpack_from("<I", data, pos + 8)[0]
        if not drop(rtype, data[pos + 8:end]):
            out += data[pos:end]
        pos = end
    return bytes(out)


def _no_update(rtype: int, _body: bytes) -> bool:
    return rtype == EVENT_UPDATE


def _no_names(rtype: int, body: bytes) -> bool:
    return _no_update(rtype, body) or (
        rtype == HEADER_FEATURE and struct.unpack_from("<Q", body)[0] == FEAT_EVENT_DESC)


def _names(data: Path) -> tuple[collections.Counter, collections.Counter]:
    """(ours, perf script's) sample counts by event name."""
    res = run_parser(["--input", str(data), "--app", str(data.parent)])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ours = collections.Counter(s.event for s in decode(res.stdout)[0])
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "event"], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return ours, collections.Counter(line.strip().rstrip(":") for line in out.splitlines())


@pytest.mark.parametrize("case", sorted(EVENTS))
def test_pipe_and_file_mode_names_are_perfs(workload: Path, case: str) -> None:
    tmp = workload.parent
    pipe, file = tmp / f"{case}.pipe.data", tmp / f"{case}.file.data"
    _record(workload, EVENTS[case], pipe, pipe=True)
    _record(workload, EVENTS[case], file, pipe=False)
    ours, perf = _names(file)
    assert ours == perf and sum(ours.values()) > 20
    as_given = ours
    raw = pipe.read_bytes()
    for variant, drop in (("as-recorded", None), ("no-update", _no_update),
                          ("no-names", _no_names)):
        data = pipe
        if drop is not None:
            data = tmp / f"{case}.{variant}.data"
            data.write_bytes(_without(raw, drop))
        ours, perf = _names(data)
        assert ours == perf, variant
        if drop is not _no_names:  # the recorded names are the file mode's
            assert set(ours) == set(as_given), variant
