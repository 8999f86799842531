"""Golden streams of upstream perfparser: strict decode, byte-exact re-encode and rewrite."""

import io
from pathlib import Path

import pytest

from perfparser_py import protocol as P

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / ".." / "shared" / "spec" / "golden"
GOLDEN_STREAMS = sorted(p.name for p in GOLDEN.glob("*.qperfstream"))


def test_all_golden_streams_present():
    assert len(GOLDEN_STREAMS) == 9


@pytest.fixture(scope="module", params=GOLDEN_STREAMS)
def golden(request):
    data = (GOLDEN / request.param).read_bytes()
    return request.param, data, P.read_stream(data, "1.5")


def test_decodes_and_reencodes_identically(golden):
    _, data, stream = golden
    assert stream.version == 19 and stream.trailing_bytes == b""
    assert P.HEADER + b"".join(P.encode(m, "1.5") for m in stream.messages) == data


def drive(writer: P.StreamWriter, m) -> None:
    """Call the StreamWriter method that corresponds to a decoded message."""
    match m:
        case P.ThreadStart():
            writer.thread_start(m.pid, m.tid, m.time, m.cpu, m.ppid)
        case P.ThreadEnd():
            writer.thread_end(m.pid, m.tid, m.time, m.cpu)
        case P.Command():
            writer.command(m.pid, m.tid, m.time, m.cpu, m.comm)
        case P.Location():
            # kernel pid as the emit stage passes it: -1
            pid = -1 if m.pid == 0xFFFFFFFF else m.pid
            writer.location(m.id, m.address, m.file, pid, m.line, m.column,
                            m.parent_location_id, m.rel_addr)
        case P.Symbol():
            writer.symbol(m.id, m.name, m.binary, m.path, m.is_kernel, m.rel_addr, m.size,
                          m.actual_path, m.is_inline)
        case P.String():
            writer.string(m.id, m.string)
        case P.Lost():
            writer.lost(m.pid, m.tid, m.time, m.cpu, m.lost)
        case P.Features():
            writer.features(m)
        case P.Error():
            writer.error(m.code, m.message)
        case P.Progress():
            writer.progress(m.percent)
        case P.TracePointFormat():
            writer.tracepoint_format(m.id, m.system, m.name, m.flags, m.format)
        case P.Attributes():
            writer.attributes(m.id, m.attr_type, m.config, m.name, m.uses_frequency,
                              m.frequency_or_period)
        case P.ContextSwitch():
            writer.context_switch(m.pid, m.tid, m.time, m.cpu, m.switch_out)
        case P.Sample():
            writer.sample(m.pid, m.tid, m.time, m.cpu, m.frames, m.guessed_frames, m.values)
        case P.TracePointSample():
            writer.tracepoint_sample(m.pid, m.tid, m.time, m.cpu, m.frames, m.guessed_frames,
                                     m.values, m.event_format_id, m.trace_data)
        case P.DebugInfoDownloadProgress():
            writer.debuginfo_progress(m.module, m.url, m.numerator, m.denominator)
        case _:
            raise AssertionError(m)


def test_writer_reproduces_golden_bytes(golden):
    _, data, stream = golden
    out = io.BytesIO()
    w = P.StreamWriter(out, "1.5")
    w.header()
    for m in stream.messages:
        drive(w, m)
    w.flush()
    assert out.getvalue() == data


@pytest.mark.parametrize("flavour", ["1.3", "current"])
def test_other_flavours_round_trip_and_are_detected(golden, flavour):
    name, data, stream = golden
    out = io.BytesIO()
    w = P.StreamWriter(out, flavour)
    w.header()
    for m in stream.messages:
        drive(w, m)
    w.flush()
    written = out.getvalue()
    again = P.read_stream(written, flavour)
    assert P.HEADER + b"".join(P.encode(m, flavour) for m in again.messages) == written
    sizes = {}
    for m in again.messages:
        sizes.setdefault(m.TYPE, set()).add(len(P.encode(m, flavour)) - 4)
    if flavour == "1.3":
        assert sizes[P.Location.TYPE] == {33} and sizes[P.Symbol.TYPE] == {18}
        assert all(m.rel_addr == 0 and not m.is_inline
                   for m in again.messages if isinstance(m, P.Symbol))
        assert P.detect_flavour(written) == "1.3"
    else:
        assert sizes[P.Location.TYPE] == {41} and sizes[P.Symbol.TYPE] == {39}
        tpf = sizes.get(P.TracePointFormat.TYPE)
        if tpf:  # only tracepoints tell current from 1.5
            assert tpf == {21}
            assert P.detect_flavour(written) == "current"
    # the samples carry the same information in every flavour
    samples = [m for m in stream.messages if isinstance(m, P.Sample | P.TracePointSample)]
    again_samples = [m for m in again.messages if isinstance(m, P.Sample | P.TracePointSample)]
    assert [(s.pid, s.time, s.frames, s.values) for s in samples] == \
        [(s.pid, s.time, s.frames, s.values) for s in again_samples]


def test_detect_flavour_of_golden(golden):
    name, data, stream = golden
    detected = P.detect_flavour(data)
    if any(isinstance(m, P.TracePointFormat) for m in stream.messages):
        assert detected == "1.5"
    else:  # 1.5 and current are the same bytes here
        assert detected in ("1.5", "current")
        assert P.read_stream(data, detected).messages == stream.messages


def test_tracepoint_sample_fields_decoded():
    stream = P.read_stream((GOLDEN / "probe.data.file.qperfstream").read_bytes())
    tps = [m for m in stream.messages if isinstance(m, P.TracePointSample)]
    assert len(tps) == 1
    ((key, var),) = tps[0].trace_data
    assert var.type_id == 5 and not var.is_null and var.value > 0
    errors = [m for m in stream.messages if isinstance(m, P.Error)]
    assert sum(e.code == 2 for e in errors) == 6
    assert all(e.message.startswith("Could not find ELF file for ") for e in errors
               if e.code == 2)


def test_features_of_file_mode_stream():
    stream = P.read_stream((GOLDEN / "vector_static_gcc_perf.data.qperfstream").read_bytes())
    (f,) = [m for m in stream.messages if isinstance(m, P.Features)]
    assert f.arch == b"x86_64" and f.nr_cpus_online > 0 and f.cmdline[0].endswith(b"perf")
    assert all(len(b.id) == 20 for b in f.build_ids)
