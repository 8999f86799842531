"""The tracing data blob and the format text parser (SEMANTICS §13.1, §13.2)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from perfparser_py.perfdata.events import TracingDataEvent
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.perfdata.tracing import (
    FIELD_ARRAY,
    FIELD_DYNAMIC,
    FIELD_LONG,
    FIELD_POINTER,
    FIELD_RELATIVE,
    FIELD_SIGNED,
    FIELD_STRING,
    FORMAT_BPRINT,
    FORMAT_FTRACE,
    MAGIC,
    parse_format,
    parse_tracing_data,
)
from perfparser_py.source import open_source

SCHED_SWITCH = b"""name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;

print fmt: "prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid
"""


def blob(formats: dict[bytes, list[bytes]], version: bytes = b"0.6", big_endian: bool = False,
         ftrace: list[bytes] = (), printk: bytes = b"", cut: int | None = None) -> bytes:
    """A tracing data blob as perf writes it."""
    e = ">" if big_endian else "<"
    out = bytearray(MAGIC + version + b"\0" + bytes([1 if big_endian else 0, 8]))
    out += struct.pack(e + "i", 4096)
    page = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    out += b"header_page\0" + struct.pack(e + "Q", len(page)) + page
    out += b"header_event\0" + struct.pack(e + "Q", 3) + b"abc"
    out += struct.pack(e + "i", len(ftrace))
    for text in ftrace:
        out += struct.pack(e + "Q", len(text)) + text
    out += struct.pack(e + "i", len(formats))
    for system, texts in formats.items():
        out += system + b"\0" + struct.pack(e + "i", len(texts))
        for text in texts:
            out += struct.pack(e + "Q", len(text)) + text
    out += struct.pack(e + "I", 0)  # kallsyms
    out += struct.pack(e + "I", len(printk)) + printk
    if version >= b"0.6":
        out += struct.pack(e + "Q", 4) + b"1 a\n"
    return bytes(out[:cut])


def test_sched_switch_format_fields() -> None:
    fmt = parse_format(SCHED_SWITCH, b"sched")
    assert (fmt.id, fmt.system, fmt.name, fmt.flags) == (372, b"sched", b"sched_switch", 0)
    assert [f.name for f in fmt.common_fields] == [
        b"common_type", b"common_flags", b"common_preempt_count", b"common_pid"]
    comm, pid, state = fmt.fields
    assert (comm.type, comm.offset, comm.size, comm.arraylen, comm.elementsize) == (
        b"char", 8, 16, 16, 1)
    assert comm.flags == FIELD_ARRAY | FIELD_STRING
    assert (pid.type, pid.offset, pid.size, pid.flags) == (b"pid_t", 24, 4, FIELD_SIGNED)
    assert state.flags == FIELD_LONG | FIELD_SIGNED
    assert fmt.print_fmt == b'"prev_comm=%s prev_pid=%d", REC->prev_comm, REC->prev_pid'


def field_of(decl: bytes, size: int = 4, long_size: int = 8):
    text = (b"name: x\nID: 1\nformat:\n\n\tfield:" + decl + b";\toffset:8;\tsize:%d;\tsigned:0;\n\n"
            % size)
    (f,) = parse_format(text, b"s", long_size).fields
    return f


def test_data_loc_brackets_make_a_dynamic_array() -> None:
    # upstream glues `[]` to `char` and decodes the raw locator: fixed on purpose
    f = field_of(b"__data_loc char[] filename")
    assert (f.name, f.type) == (b"filename", b"__data_loc char")
    assert f.flags == FIELD_ARRAY | FIELD_STRING | FIELD_DYNAMIC
    assert f.elementsize == 1
    r = field_of(b"__rel_loc char[] name")
    assert r.flags & FIELD_RELATIVE and r.flags & FIELD_DYNAMIC and r.flags & FIELD_ARRAY
    n = field_of(b"__data_loc unsigned int[] lengths")
    assert (n.flags & FIELD_STRING, n.elementsize) == (0, 4)


def test_element_sizes() -> None:
    # long arrays: the real sizeof(long), not upstream's boolean 1
    assert field_of(b"__data_loc unsigned long[] ips", long_size=8).elementsize == 8
    assert field_of(b"__data_loc unsigned long[] ips", long_size=4).elementsize == 4
    assert field_of(b"unsigned long caller[4]", size=32).elementsize == 8
    assert field_of(b"u16 v[]").elementsize == 2
    assert field_of(b"__data_loc s64[] v").elementsize == 8
    assert field_of(b"u8 mac[6]", size=6).flags & FIELD_STRING
    # unknown element type: 0, which the decoder turns into an invalid value
    assert field_of(b"struct foo items[]").elementsize == 0


def test_pointer_and_array_names() -> None:
    p = field_of(b"void *ptr", size=8)
    assert (p.name, p.type, p.flags) == (b"ptr", b"void", FIELD_POINTER)
    a = field_of(b"unsigned char buf[0x10]", size=16)
    assert (a.name, a.type, a.arraylen) == (b"buf", b"unsigned char", 16)


def test_format_without_id_is_rejected() -> None:
    assert parse_format(b"name: x\nformat:\n", b"s") is None


def test_blob_round_trip_both_byte_orders() -> None:
    for big in (False, True):
        td = parse_tracing_data(blob({b"sched": [SCHED_SWITCH]}, big_endian=big,
                                     printk=b'0xffffffff82819092 : "thaw_processes"\n'))
        assert td.warnings == []
        assert (td.version, td.big_endian, td.long_size, td.page_size) == (b"0.6", big, 8, 4096)
        assert [f.name for f in td.header_page] == [b"timestamp"]
        assert list(td.formats) == [372]
        assert td.printk == {0xFFFFFFFF82819092: b"thaw_processes"}


def test_version_05_has_no_saved_cmdlines() -> None:
    td = parse_tracing_data(blob({b"sched": [SCHED_SWITCH]}, version=b"0.5"))
    assert td.warnings == [] and list(td.formats) == [372]


def test_ftrace_formats_and_bprint_flag() -> None:
    bprint = b"name: bprint\nID: 6\nformat:\n\n\n"
    td = parse_tracing_data(blob({}, ftrace=[bprint]))
    assert td.formats[6].flags == FORMAT_FTRACE | FORMAT_BPRINT
    assert td.formats[6].system == b"ftrace"


def test_faults_keep_what_was_read() -> None:
    good = blob({b"sched": [SCHED_SWITCH]})
    assert parse_tracing_data(b"\x17\x08Dtracinx" + good[10:]).formats == {}
    # cut inside the printk section: the formats before it are kept, with a warning
    td = parse_tracing_data(good[:-20])
    assert list(td.formats) == [372] and td.warnings
    # a format without ID ends format parsing; earlier formats stay
    td = parse_tracing_data(blob({b"sched": [SCHED_SWITCH, b"name: y\n", SCHED_SWITCH]}))
    assert list(td.formats) == [372] and "ID" in td.warnings[0]
    # a size beyond 2^31 - 1 aborts
    huge = bytearray(good)
    at = good.index(b"header_event\0") + 13
    huge[at:at + 8] = struct.pack("<Q", 2**40)
    td = parse_tracing_data(bytes(huge))
    assert td.formats == {} and td.warnings


def test_corpus_blobs(corpus_dir) -> None:
    cases = {
        "recorded/offcpu/perf.data": (b"0.6", {372: (b"sched", b"sched_switch", 7)}),
        "upstream/probe.data.file": (None, {1329: (b"probe_untitled1", b"main", 1)}),
        "upstream/probe.data.stream": (None, {1329: (b"probe_untitled1", b"main", 1)}),
        "upstream/parallel_static_gcc/perf.data.zstd": (None, {317: (b"sched", b"sched_switch", 7)}),
    }
    for rel, (version, want) in cases.items():
        reader = PerfReader(open_source(str(corpus_dir / rel), None, 0))
        data = next(e.data for e in reader.events() if isinstance(e, TracingDataEvent))
        td = parse_tracing_data(data)
        assert td.warnings == [], rel
        if version is not None:
            assert td.version == version
        got = {i: (f.system, f.name, len(f.fields)) for i, f in td.formats.items()}
        assert got == want, rel
        assert all(len(f.common_fields) >= 4 for f in td.formats.values())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 2000))
def test_garbage_never_raises(noise: bytes, cut: int) -> None:
    good = blob({b"sched": [SCHED_SWITCH]})
    parse_tracing_data(noise)
    parse_tracing_data(MAGIC + noise)
    parse_tracing_data(good[:cut] + noise)
    parse_format(noise, b"s")
