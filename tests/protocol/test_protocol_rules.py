"""Writer conventions and reader strictness: wrapping, variants, strings, framing errors."""

import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfparser_py import protocol as P


def written(flavour: str, call) -> bytes:
    out = io.BytesIO()
    w = P.StreamWriter(out, flavour)
    w.header()
    call(w)
    w.flush()
    return out.getvalue()


def test_header_bytes():
    assert written("current", lambda w: None) == bytes.fromhex(
        "51 50 45 52 46 53 54 52 45 41 4d 00 13 00 00 00")


def test_signed_and_unsigned_forms_give_the_same_bytes():
    a = written("1.5", lambda w: w.location(1, -1, -1, -1, -1, -1, -1, -1))
    b = written("1.5", lambda w: w.location(1, 2**64 - 1, 2**32 - 1, 2**32 - 1, 2**32 - 1,
                                            2**32 - 1, 2**32 - 1, 2**64 - 1))
    assert a == b
    assert a[16 + 5 + 4:16 + 5 + 12] == b"\xff" * 8
    assert P.read_stream(a).messages[0].pid == 0xFFFFFFFF


def test_sample_frames_and_values_wrap_too():
    data = written("current", lambda w: w.sample(-1, -1, 5, 0, [0xFFFFFFFF, 3], 0,
                                                 [(-1, -1)]))
    (s,) = P.read_stream(data).messages
    assert s.frames == [-1, 3] and s.values == [(-1, 2**64 - 1)] and s.pid == -1


def test_progress_is_float32_widened_to_double():
    data = written("1.5", lambda w: w.progress(0.1))
    assert data[-8:] == struct.pack(">d", struct.unpack("<f", struct.pack("<f", 0.1))[0])
    assert data[-8:] != struct.pack(">d", 0.1)


def test_error_is_utf16be_qstring():
    data = written("1.5", lambda w: w.error(2, "Ä€"))
    assert data[16:] == bytes.fromhex("0d000000 08 00000002 00000004 00c4 20ac")
    assert P.read_stream(data).messages == [P.Error(2, "Ä€")]


def test_features_null_versus_empty_strings():
    f = P.Features(host_name=b"", arch=b"x86_64", cmdline=[b"perf", b"record"],
                   build_ids=[P.BuildId(-1, b"\x01" * 20, b"/bin/x")],
                   numa_topology=[P.NumaNode(0, 10, 5, b"0-3")], pmu_mappings=[P.Pmu(4, b"cpu")],
                   group_descs=[P.GroupDesc(None, 1, 2)])
    data = written("1.5", lambda w: w.features(f))
    assert data[16 + 5:16 + 13] == b"\x00\x00\x00\x00\xff\xff\xff\xff"  # host "", os null
    (back,) = P.read_stream(data).messages
    assert back.host_name == b"" and back.os_release is None and back.version is None
    assert back.build_ids == f.build_ids and back.numa_topology == f.numa_topology
    assert back.pmu_mappings == f.pmu_mappings and back.group_descs == f.group_descs
    assert back.sibling_cores == [] and back.cmdline == [b"perf", b"record"]


def test_debuginfo_progress_is_never_sent_to_hotspot_1_3():
    assert written("1.3", lambda w: w.debuginfo_progress(1, 2, 3, 4)) == P.HEADER
    assert len(written("current", lambda w: w.debuginfo_progress(1, 2, 3, 4))) == 16 + 29


VARIANTS = [
    P.Variant(2, -5), P.Variant(3, 7), P.Variant(4, -(2**40)), P.Variant(5, 2**63),
    P.Variant(33, -2), P.Variant(36, 65535), P.Variant(37, 200), P.Variant(40, -3),
    P.Variant(12, b"swapper/17\0\0"), P.INVALID_VARIANT,
    P.Variant(9, [P.Variant(3, 1), P.Variant(3, 2)]),
]


@pytest.mark.parametrize("flavour", P.FLAVOURS)
def test_tracepoint_sample_round_trip(flavour):
    trace = list(enumerate(VARIANTS))
    data = written(flavour, lambda w: w.tracepoint_sample(1, 2, 3, 4, [5], 0, [(0, 1)], 317,
                                                          trace))
    (m,) = P.read_stream(data, flavour).messages
    assert m.trace_data == trace
    assert m.event_format_id == (317 if flavour == "current" else 0)
    assert P.detect_flavour(data) in ((flavour,) if flavour == "current" else ("1.5", "1.3"))


def test_invalid_variant_bytes():
    data = written("1.5", lambda w: w.tracepoint_sample(0, 0, 0, 0, [], 0, [],
                                                        0, [(1, P.INVALID_VARIANT)]))
    assert data.endswith(bytes.fromhex("00000001 00000001 00000000 01"))


def frame(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload


def test_leftover_payload_bytes_are_rejected_like_hotspot():
    good = P.encode(P.Progress(0.5), "1.5")
    with pytest.raises(P.ProtocolError, match="did not consume all bytes for event of type 9"):
        P.read_stream(P.HEADER + frame(good[4:] + b"\0"), "1.5")
    # a 1.5 Location read as 1.3 has 8 bytes too many
    loc = P.encode(P.Location(0, 1, -1, 1, 0, 0, -1, 5), "1.5")
    with pytest.raises(P.ProtocolError, match="did not consume all bytes for event of type 3"):
        P.read_stream(P.HEADER + loc, "1.3")


def test_short_payloads_and_bad_lengths_are_rejected():
    with pytest.raises(P.ProtocolError, match="truncated payload"):
        P.read_stream(P.HEADER + frame(b"\x09\0\0"), "1.5")
    bad_string = b"\x05\0\0\0\0\0\0\0\x10abc"  # claims 16 bytes, has 3
    with pytest.raises(P.ProtocolError, match="truncated payload"):
        P.read_stream(P.HEADER + frame(bad_string), "1.5")
    with pytest.raises(P.ProtocolError, match="unknown message type 16"):
        P.read_stream(P.HEADER + frame(b"\x10"), "1.5")
    with pytest.raises(P.ProtocolError, match="does not exist in flavour 1.3"):
        P.read_stream(P.HEADER + P.encode(P.DebugInfoDownloadProgress(0, 0, 0, 0), "1.5"),
                      "1.3")
    with pytest.raises(P.ProtocolError, match="QVariant type id 99"):
        P.read_stream(P.HEADER + frame(P.encode(P.TracePointSample(
            0, 0, 0, 0, [], 0, [], 0, [(1, P.Variant(2, 1))]), "1.5")[4:-9]
            + b"\0\0\0\x63\0"), "1.5")


def test_bad_header_and_trailing_incomplete_message():
    for data in (b"", b"QPERF", b"XPERFSTREAM\0\x13\0\0\0"):
        with pytest.raises(P.ProtocolError):
            P.read_stream(data)
    whole = P.HEADER + P.encode(P.String(0, b"abc"), "1.5")
    for cut in range(len(P.HEADER) + 1, len(whole)):
        s = P.read_stream(whole[:cut], "1.5")
        assert s.messages == [] and s.trailing_bytes == whole[len(P.HEADER):cut]


def test_inconsistent_sizes_are_not_a_flavour():
    loc13 = P.encode(P.Location(0, 0, -1, 0, 0, 0, -1, 0), "1.3")
    sym15 = P.encode(P.Symbol(0, -1, -1, -1, False, 0, 0, -1, False), "1.5")
    with pytest.raises(P.ProtocolError, match="fit no single protocol flavour"):
        P.detect_flavour(P.HEADER + sym15 + loc13)
    # detection stops at the first decisive message; the strict reader catches the rest
    assert P.detect_flavour(P.HEADER + loc13 + sym15) == "1.3"
    with pytest.raises(P.ProtocolError, match="did not consume all bytes for event of type 4"):
        P.read_stream(P.HEADER + loc13 + sym15)
    with pytest.raises(P.ProtocolError, match="fits no known protocol flavour"):
        P.detect_flavour(P.HEADER + frame(b"\x03" + bytes(36)))


def test_broken_pipe_propagates():
    class Closed(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            raise BrokenPipeError

    w = P.StreamWriter(Closed())
    w.header()
    with pytest.raises(BrokenPipeError):
        w.flush()


def test_large_output_is_written_in_chunks_before_flush():
    out = io.BytesIO()
    w = P.StreamWriter(out)
    for i in range(20000):
        w.string(i, b"x" * 10)
    assert 0 < len(out.getvalue()) < 20000 * 23
    w.flush()
    assert len(out.getvalue()) == 20000 * 23


i32 = st.integers(-(2**31), 2**31 - 1)
u64 = st.integers(0, 2**64 - 1)


@settings(max_examples=60, deadline=None)
@given(flavour=st.sampled_from(P.FLAVOURS), pid=i32, tid=i32, time=u64,
       frames=st.lists(i32, max_size=40), guessed=st.integers(0, 255),
       values=st.lists(st.tuples(i32, u64), max_size=3))
def test_sample_round_trip(flavour, pid, tid, time, frames, guessed, values):
    data = written(flavour, lambda w: w.sample(pid, tid, time, 7, frames, guessed, values))
    assert P.read_stream(data, flavour).messages == [
        P.Sample(pid, tid, time, 7, frames, guessed, values)]
