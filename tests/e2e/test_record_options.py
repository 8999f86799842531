"""`perf record` options and event kinds beyond the defaults, against perf's own view.

One small threaded C workload (writes, sleeps, page faults) is recorded with each option set
below and parsed; for each: exit 0 and no warning that the recording names no kernel
build-id (each is a file-mode recording of this boot, with a build-id table or, for
`--buildid-mmap`, the kernel MMAP2's own id); per event name as many samples as `perf script`
prints; as many context switches, and as many lost samples as perf's LOST records hold (its
LOST_SAMPLES count the same losses again: not added); a read group's values perf's periods
(each counter's growth since its previous sample); every stack as `perf script`'s
(tools/perfdiff).
Tracepoints need tracefs mounted (CI mounts it; tests/e2e/test_event_names.py records
sched:sched_switch as well).
"""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from tests.corpus.expect import run_parser
from tests.e2e.test_perf_diff import perfdiff
from tests.e2e.programs import build_c

WORKLOAD = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static volatile long sink;
__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void io(void)
{
    int fd = open("/dev/null", O_WRONLY);
    for (int i = 0; i < 100; i++) write(fd, "x", 1);
    close(fd);
}
static void *worker(void *arg) { for (int r = 0; r < 20; r++) { spin(3000000); io(); usleep(200); } return arg; }
int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, 0);
    for (int r = 0; r < 20; r++) {
        char *p = malloc(1 << 20);
        for (int i = 0; i < (1 << 20); i += 4096) p[i] = 1;
        free(p);
        spin(1000000);
        usleep(100);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""

OPTIONS = {
    "switch-events": ["--switch-events", "-g"],
    "tracepoints": ["-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "-e", "cpu-clock",
                    "-g"],
    # sample fields after the call chain and user stack: addr, data_src, phys_addr, weight,
    # the interrupt registers, the page sizes
    "sample-fields": ["-d", "--phys-data", "--data-page-size", "--code-page-size", "-W", "-I",
                      "-T", "-g"],
    # one attr unwound from DWARF, one with frame pointers, one without a call chain
    "per-event-call-graphs": ["-e", "cpu-clock/call-graph=dwarf/", "-e",
                              "page-faults/call-graph=fp/", "-e",
                              "context-switches/call-graph=no/"],
    "leader-sampling": ["-e", "{cpu-clock,task-clock}:S", "-g"],
    "buildid-mmap": ["--buildid-mmap", "-g"],
    # 32 KiB stack copies into a 64 KiB buffer: perf loses samples
    "small-buffer": ["-m", "16", "--call-graph", "dwarf,32768"],
}


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> Path:
    return build_c(tmp_path_factory.mktemp("options"), "w", WORKLOAD, "-O2", "-g",
                   "-fno-omit-frame-pointer", "-pthread")


def _perf_script(data: Path, *args: str) -> str:
    return subprocess.run(["perf", "script", "-i", str(data), "-G", *args], check=True,
                          capture_output=True, text=True, timeout=120).stdout


def _ours(stream: P.Stream) -> dict:
    strings: dict[int, str] = {}
    names: dict[int, str] = {}
    events: collections.Counter = collections.Counter()
    values: dict[tuple[int, int, str], int] = {}  # (tid, time, event) -> a read value
    switches = lost = 0
    for m in stream.messages:
        if isinstance(m, P.String):
            strings[m.id] = m.string.decode()
        elif isinstance(m, P.Attributes):
            names[m.id] = strings[m.name]
        elif isinstance(m, P.Sample | P.TracePointSample):
            events[names[m.values[0][0]]] += 1
            if len(m.values) > 1:  # a read group's
                values.update(((m.tid, m.time, names[aid]), value) for aid, value in m.values)
        elif isinstance(m, P.ContextSwitch):
            switches += 1
        elif isinstance(m, P.Lost):
            lost += m.lost
    return {"events": events, "values": values, "switches": switches, "lost": lost}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_recording_options_match_perf(workload: Path, case: str) -> None:
    data = workload.parent / f"{case}.data"
    subprocess.run(["perf", "record", "-q", *OPTIONS[case], "-o", str(data), "--",
                    str(workload)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=120)
    res = run_parser(["--input", str(data), *perfdiff.HOTSPOT_ARGS])
    stderr = res.stderr.decode(errors="replace")
    assert res.returncode == 0, stderr[-2000:]
    assert "no kernel build-id" not in stderr
    ours = _ours(P.read_stream(res.stdout))

    perf_events = collections.Counter(
        line.strip().rstrip(":") for line in _perf_script(data, "-F", "event").splitlines())
    switches = _perf_script(data, "--show-switch-events", "-F", "tid").count("PERF_RECORD_SWITCH")
    lost = sum(map(int, re.findall(r"PERF_RECORD_LOST lost (\d+)",
                                   _perf_script(data, "--show-lost-events", "-F", "tid"))))
    if case == "leader-sampling":
        # perf prints the leader's sample once per member whose counter grew, with how much:
        # our sample's value for it (the counters' running totals would count every earlier
        # period again in hotspot, which adds the values up)
        perf_values = {}
        for line in _perf_script(data, "-F", "tid,time,event,period", "--ns").splitlines():
            tid, time, period, event = line.split()
            secs, ns = time.rstrip(":").split(".")
            perf_values[(int(tid), int(secs) * 10**9 + int(ns), event.rstrip(":"))] = int(period)
        assert {k: v for k, v in ours["values"].items() if v} == perf_values
        assert len(perf_values) > 50
        assert ours["events"] == {"cpu-clock": perf_events["cpu-clock"]}
    else:
        assert ours["events"] == perf_events
    assert sum(perf_events.values()) > 50
    assert (ours["switches"], ours["lost"]) == (switches, lost)
    if case == "switch-events":
        assert switches > 20
    rep = perfdiff.diff_file(str(data), res.stdout, name=case)
    report = perfdiff.format_table([rep]) + "\n" + perfdiff.format_details(rep)
    assert rep.share(rep.identical) >= 0.995, report
