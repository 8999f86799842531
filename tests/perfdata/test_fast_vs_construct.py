"""The hand-written decoders (fast.py) agree field for field with the construct declarations
(records.py) on every hot record of every corpus file, compressed payloads included."""

from __future__ import annotations

import struct

import pytest
import zstandard

from perfparser_py.perfdata import abi, records
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.perfdata.fast import make_decoders
from perfparser_py.source import open_source
from tests.perfdata.perfdata_corpus import corpus_id, good_files

HOT = {abi.RECORD_SAMPLE: "sample", abi.RECORD_MMAP: "mmap", abi.RECORD_MMAP2: "mmap2",
       abi.RECORD_COMM: "comm", abi.RECORD_FORK: "fork", abi.RECORD_EXIT: "exit",
       abi.RECORD_SWITCH: "switch", abi.RECORD_SWITCH_CPU_WIDE: "switch",
       abi.RECORD_LOST: "lost"}


def _inflate_across_frames():
    """decompress(data) for one zstd stream of frames fed in pieces: decompressobj stops at a
    frame's end (read_across_frames=True needs zstandard 0.22), so a new one takes the rest."""
    dobj = zstandard.ZstdDecompressor().decompressobj()

    def decompress(data: bytes) -> bytes:
        nonlocal dobj
        out = b""
        while data:
            if dobj.eof:
                dobj = zstandard.ZstdDecompressor().decompressobj()
            out += dobj.decompress(data)
            data = dobj.unused_data if dobj.eof else b""
        return out

    return decompress


def raw_records(buf, big_endian: bool):
    """(buffer, record offset, type, misc, size) of every record, decompressing on the way."""
    e = ">" if big_endian else "<"
    if struct.unpack_from(e + "Q", buf, 8)[0] == 16:
        regions = [(buf, 16, len(buf))]
    else:
        off, size = struct.unpack_from(e + "QQ", buf, 40)
        regions = [(buf, off, off + size)]
    decompress = _inflate_across_frames()
    pending = b""
    while regions:
        region, pos, end = regions.pop(0)
        while pos + 8 <= end:
            rtype, misc, size = struct.unpack_from(e + "IHH", region, pos)
            if pos + size > end:
                break
            if rtype == abi.RECORD_COMPRESSED:
                pending += decompress(bytes(region[pos + 8:pos + size]))
                regions.insert(0, (memoryview(pending), 0, len(pending)))
                regions.insert(1, (region, pos + size, end))
                pending = b""
                break
            yield region, pos, rtype, misc, size
            if rtype == abi.RECORD_HEADER_TRACING_DATA:
                pos += struct.unpack_from(e + "I", region, pos + 8)[0]
            pos += size
        if region is not buf and pos < end:  # a record straddles into the next payload
            pending = bytes(region[pos:end])


@pytest.mark.parametrize("path", good_files(), ids=corpus_id)
def test_fast_equals_construct(path):
    check_fast_equals_construct(path)


def check_fast_equals_construct(path) -> dict[str, int]:
    reader = PerfReader(open_source(str(path), None, 0))
    n_samples = sum(1 for e in reader.events() if type(e).__name__ == "SampleEvent")
    buf = reader.source.buffer()
    dec = make_decoders(reader.big_endian)
    checked = {name: 0 for name in HOT.values()}
    for region, pos, rtype, misc, size in raw_records(buf, reader.big_endian):
        name = HOT.get(rtype)
        if name is None:
            continue
        body, end = pos + 8, pos + size
        if rtype == abi.RECORD_SAMPLE:
            attr = reader._sample_attr(region, body, end)
            fast = dec.sample(region, body, end, misc, size, attr)
        elif name == "switch":
            attr = None
            fast = dec.switch(region, body, end, misc, size, reader._trailer,
                              rtype == abi.RECORD_SWITCH_CPU_WIDE)
        else:
            attr = None
            fast = getattr(dec, name)(region, body, end, misc, size, reader._trailer)
        slow = records.decode_record(rtype, misc, size, bytes(region[body:end]), attr,
                                     reader._global)
        assert type(fast) is type(slow)
        for field in fast._fields:
            assert getattr(fast, field) == getattr(slow, field), (field, pos)
        checked[name] += 1
    assert checked["sample"] == n_samples
    assert checked["mmap"] + checked["mmap2"] > 0 and checked["comm"] > 0
    return {name: checked[name] for name in ("switch", "lost") if checked[name]}


def test_switch_and_lost_records(tmp_path):
    """SWITCH (in and out), SWITCH_CPU_WIDE (pids past 2^31 too) and LOST, which the corpus
    lacks or has few of, with their sample_id trailers."""
    from tests.synth import PipeWriter, body

    w = PipeWriter()
    w.comm(7, 7, b"x", 1)
    w.mmap2(7, 0x400000, 0x1000, 0, b"/bin/x", 2)
    w.sample(7, 7, 3, 0x400010)
    for k, (npid, ntid) in enumerate([(8, 9), (0xFFFFFFFF, 0x80000000)]):
        w.record(abi.RECORD_SWITCH, b"", 7, 7, 10 + k, misc=0x2000 * k)
        wide = body(abi.RECORD_SWITCH_CPU_WIDE, next_prev_pid=npid, next_prev_tid=ntid)
        w.record(abi.RECORD_SWITCH_CPU_WIDE, wide, 7, 7, 20 + k, misc=0x2000 * k)
        w.record(abi.RECORD_LOST, body(abi.RECORD_LOST, id=5 + k, lost=1 << 40), 7, 7, 30 + k)
    path = tmp_path / "pipe.data"
    path.write_bytes(w.data())
    assert check_fast_equals_construct(path) == {"switch": 4, "lost": 2}
