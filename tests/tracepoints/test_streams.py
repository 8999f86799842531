"""Tracepoint messages of whole runs: upstream's probe vectors, corpus `offcpu`, and a fresh
`perf record -e sched:sched_switch --switch-events` (needs root, perf and tracefs)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from perfparser_py import cli
from perfparser_py import protocol as P


def run(tmp_path: Path, path: Path, *opts: str, protocol: str = "current") -> P.Stream:
    out = tmp_path / "out.qps"
    code = cli.main(["--input", str(path), "--sysroot", ":/", "--debug", "", "--kallsyms",
                     "/dev/null", "--protocol", protocol, "--output", str(out), *opts])
    assert code == 0
    return P.read_stream(out.read_bytes(), protocol)


def of(stream: P.Stream, cls: type) -> list:
    return [m for m in stream.messages if isinstance(m, cls)]


def strings(stream: P.Stream) -> dict[int, bytes]:
    return {m.id: m.string for m in of(stream, P.String)}


@pytest.mark.parametrize("vector,attr_name", [
    ("probe.data.file", b"probe_untitled1:main"),
    ("probe.data.stream", b"probe_untitled1:main"),  # pipe mode: from the tracing data
])
@pytest.mark.parametrize("protocol", ["1.5", "current"])
def test_probe_vectors(corpus_dir, tmp_path, vector, attr_name, protocol) -> None:
    stream = run(tmp_path, corpus_dir / "upstream" / vector, protocol=protocol)
    s = strings(stream)
    (attr,) = of(stream, P.Attributes)
    assert (attr.attr_type, attr.config, s[attr.name]) == (2, 1329, attr_name)
    (fmt,) = of(stream, P.TracePointFormat)
    assert (fmt.id, s[fmt.system], s[fmt.name], fmt.flags) == (1329, b"probe_untitled1", b"main", 0)
    (sample,) = of(stream, P.TracePointSample)
    assert [(attr.id, 1)] == sample.values
    ((key, value),) = sample.trace_data
    assert s[key] == b"__probe_ip" and value.type_id == 5 and value.value > 0
    if protocol == "current":
        assert sample.event_format_id == 1329
        assert s[fmt.format] == b'"(%lx)", REC->__probe_ip'  # the format's `print fmt:`
    else:
        assert fmt.format == -1


def test_format_strings_come_first_in_upstream_order(corpus_dir, tmp_path) -> None:
    stream = run(tmp_path, corpus_dir / "upstream" / "probe.data.file", protocol="1.5")
    head = []
    for m in stream.messages:
        if isinstance(m, P.TracePointFormat):
            break
        head.append(m.string)
    assert head == [b"probe_untitled1", b"main", b"common_type", b"common_flags",
                    b"common_preempt_count", b"common_pid", b"__probe_ip"]


def test_offcpu_sched_switch_fields(corpus_dir, tmp_path) -> None:
    case = corpus_dir / "recorded" / "offcpu"
    stream = run(tmp_path, case / "perf.data", "--app", str(case))
    s = strings(stream)
    samples = of(stream, P.TracePointSample)
    assert len(samples) == 88
    kinds = Counter()
    for sample in samples:
        fields = {s[k]: v for k, v in sample.trace_data}
        assert list(fields) == [b"prev_comm", b"prev_pid", b"prev_prio", b"prev_state",
                                b"next_comm", b"next_pid", b"next_prio"]
        types = [v.type_id for v in fields.values()]
        assert types == [12, 2, 2, 4, 12, 2, 2]  # byte arrays, int, qlonglong prev_state
        comm = fields[b"prev_comm"].value
        assert len(comm) == 16
        assert fields[b"prev_pid"].value == sample.tid
        state = fields[b"prev_state"].value
        kinds[comm.rstrip(b"\0"), {1: "S", 0: "R"}.get(state, state)] += 1
    assert kinds == {(b"offcpu", "S"): 40, (b"offcpu", "R"): 7, (b"feeder", "S"): 41}
    switches = of(stream, P.ContextSwitch)
    assert Counter(m.tid for m in switches) == {26294: 94, 26296: 83}


def _tracefs() -> None:
    tracefs = Path("/sys/kernel/tracing")
    if not (tracefs / "events").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(tracefs)], check=False)


def record(tmp_path: Path, *args: str) -> Path:
    _tracefs()
    data = tmp_path / "perf.data"
    rec = subprocess.run(["perf", "record", "-q", "--switch-events", "-o", str(data), *args],
                         capture_output=True, timeout=60)
    assert rec.returncode == 0, rec.stderr.decode()
    return data


def perf_switches(data: Path) -> list[tuple[int, bool]]:
    """(tid, switch out) of every switch record, as `perf script` sees them."""
    out = subprocess.run(["perf", "script", "-i", str(data), "--show-switch-events"],
                         capture_output=True, timeout=60).stdout.decode()
    found = []
    for line in out.splitlines():
        if "PERF_RECORD_SWITCH" in line:
            words = line.split()
            at = next(i for i, w in enumerate(words) if w.startswith("PERF_RECORD_SWITCH"))
            found.append((int(words[at - 3].split("/")[-1]), words[at + 1] == "OUT"))
    return found


def assert_switches_like_perf(stream: P.Stream, data: Path) -> None:
    ours = [(m.tid, m.switch_out) for m in of(stream, P.ContextSwitch)]
    assert ours and Counter(ours) == Counter(perf_switches(data))


def test_fresh_recording_decodes_every_field(tmp_path) -> None:
    data = record(tmp_path, "-e", "sched:sched_switch", "-e", "sched:sched_process_exec",
                  "--", "sh", "-c", "sleep 0.01; sleep 0.01")
    stream = run(tmp_path, data)
    s = strings(stream)
    samples = of(stream, P.TracePointSample)
    assert samples
    assert_switches_like_perf(stream, data)
    formats = {m.id: s[m.name] for m in of(stream, P.TracePointFormat)}
    assert set(formats.values()) >= {b"sched_switch", b"sched_process_exec"}
    seen = set()
    for sample in samples:
        assert sample.event_format_id in formats
        assert sample.trace_data
        assert all(v.type_id != 0 for _k, v in sample.trace_data)
        fields = {s[k]: v for k, v in sample.trace_data}
        if formats[sample.event_format_id] == b"sched_process_exec":
            # __data_loc char[]: the file name itself, not upstream's locator integer
            assert fields[b"filename"].type_id == 12
            seen.add(fields[b"filename"].value.rstrip(b"\0").rsplit(b"/", 1)[-1])
    assert b"sleep" in seen


def test_cpu_wide_switch_records(tmp_path) -> None:
    data = record(tmp_path, "-a", "-e", "sched:sched_switch", "--", "sleep", "0.02")
    stream = run(tmp_path, data)
    assert_switches_like_perf(stream, data)
    assert all(v.type_id != 0 for m in of(stream, P.TracePointSample) for _k, v in m.trace_data)
