"""Rewrite little-endian corpus files into big-endian (2ELIFREP) perf.data with a converter
written here, independent of the grammar, and check they decode to the same records."""

from __future__ import annotations

import struct

import pytest

from perfparser_py.perfdata.events import AttrEvent, CommEvent, ExitEvent, ForkEvent, LostEvent, LostSamplesEvent, MmapEvent, SampleEvent, SwitchEvent
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.perfdata.attr import reverse_bits64
from perfparser_py.source import open_source
from tests.perfdata.perfdata_corpus import CORPUS, read_all
from tests.perfdata.test_fast_vs_construct import check_fast_equals_construct

RECORDS = (SampleEvent, MmapEvent, CommEvent, ForkEvent, ExitEvent, LostEvent, LostSamplesEvent,
           SwitchEvent)
# perf_event_attr layout: (offset, struct codes); flags (offset 40) handled separately
ATTR_LAYOUT = [(0, "II"), (8, "QQQQ"), (48, "IIQQQQ"), (88, "ii"), (96, "QIHH"), (112, "IIQ"), (128, "Q")]
ST_BITS = [(1 << 16, "Q"), (1, "Q"), (2, "II"), (4, "Q"), (8, "Q"), (64, "Q"), (512, "Q"),
           (128, "II"), (256, "Q")]
TRAILER_BITS = [(2, "II"), (4, "Q"), (64, "Q"), (512, "Q"), (128, "II"), (1 << 16, "Q")]


class Converter:
    def __init__(self, src: bytes) -> None:
        self.src = src
        self.dst = bytearray(src)

    def swap(self, off: int, codes: str) -> int:
        values = struct.unpack_from("<" + codes, self.src, off)
        struct.pack_into(">" + codes, self.dst, off, *values)
        return off + struct.calcsize("<" + codes)

    def u64(self, off: int) -> int:
        return struct.unpack_from("<Q", self.src, off)[0]

    def attr(self, off: int) -> dict:
        size = struct.unpack_from("<I", self.src, off + 4)[0]
        for at, codes in ATTR_LAYOUT:
            if at + struct.calcsize("<" + codes) <= size:
                self.swap(off + at, codes)
        struct.pack_into(">Q", self.dst, off + 40, reverse_bits64(self.u64(off + 40)))
        return {"size": size, "sample_type": self.u64(off + 24), "read_format": self.u64(off + 32),
                "regs": self.u64(off + 80).bit_count() if size >= 88 else 0,
                "branch_type": self.u64(off + 72) if size >= 80 else 0,
                "flags": self.u64(off + 40)}

    def string(self, off: int) -> int:
        n = struct.unpack_from("<I", self.src, off)[0]
        return self.swap(off, "I") + n

    def trailer(self, end: int, sample_type: int) -> int:
        codes = "".join(c for bit, c in TRAILER_BITS if sample_type & bit)
        start = end - struct.calcsize("<" + codes)
        self.swap(start, codes)
        return start

    def sample(self, pos: int, attr: dict) -> None:
        st, rf = attr["sample_type"], attr["read_format"]
        for bit, codes in ST_BITS:
            if st & bit:
                pos = self.swap(pos, codes)
        if st & 16:
            per = 1 + bool(rf & 4) + bool(rf & 16)
            times = bool(rf & 1) + bool(rf & 2)
            if rf & 8:
                nr = self.u64(pos)
                pos = self.swap(pos, "Q" * (1 + times + nr * per))
            else:
                pos = self.swap(pos, "Q" * (times + per))
        if st & 32:
            pos = self.swap(pos, "Q" * (1 + self.u64(pos)))
        if st & 1024:
            n = struct.unpack_from("<I", self.src, pos)[0]
            pos = self.swap(pos, "I") + n
        if st & 2048:
            extra = 1 if attr["branch_type"] & (1 << 17) else 0
            pos = self.swap(pos, "Q" * (1 + extra + 3 * self.u64(pos)))
        if st & 4096:
            abi = self.u64(pos)
            pos = self.swap(pos, "Q" * (1 + (attr["regs"] if abi else 0)))
        if st & 8192:
            n = self.u64(pos)
            pos = self.swap(pos, "Q") + n
            if n:
                pos = self.swap(pos, "Q")
        for bit in (1 << 14, 1 << 15, 1 << 17):
            if st & bit:
                pos = self.swap(pos, "Q")


BODY = {1: "iiQQQ", 10: "iiQQQIIQQII", 3: "ii", 7: "iiiiQ", 4: "iiiiQ", 2: "QQ", 13: "Q",
        14: "", 15: "II"}


def to_big_endian(path) -> bytes:
    c = Converter(path.read_bytes())
    src = c.src
    c.dst[0:8] = b"2ELIFREP"
    c.swap(8, "QQ" + "QQ" * 3)
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQQ", src, 16)
    assert struct.unpack_from("<Q", src, 8)[0] == 104
    attrs = []
    for k in range(attrs_size // attr_size):
        off = attrs_off + k * attr_size
        a = c.attr(off)
        ids_off, ids_size = struct.unpack_from("<QQ", src, off + a["size"])
        c.swap(off + a["size"], "QQ")
        ids = struct.unpack_from(f"<{ids_size // 8}Q", src, ids_off)
        c.swap(ids_off, "Q" * (ids_size // 8))
        attrs.append((a, ids))
    by_id = {i: a for a, ids in attrs for i in ids}
    glob = attrs[0][0]
    # keep only HOSTNAME (3) and EVENT_DESC (12) of the feature sections, converted
    words = struct.unpack_from("<4Q", src, 72)
    bits = [n for n in range(256) if words[n // 64] >> (n % 64) & 1]
    table = data_off + data_size
    sections = {b: struct.unpack_from("<QQ", src, table + 16 * i) for i, b in enumerate(bits)}
    struct.pack_into(">4Q", c.dst, 72, (1 << 3) | (1 << 12), 0, 0, 0)
    struct.pack_into(">QQQQ", c.dst, table, *sections[3], *sections[12])
    c.string(sections[3][0])
    pos = sections[12][0]
    nr, desc_attr_size = struct.unpack_from("<II", src, pos)
    pos = c.swap(pos, "II")
    for _ in range(nr):
        c.attr(pos)
        pos += desc_attr_size
        nr_ids = struct.unpack_from("<I", src, pos)[0]
        pos = c.string(c.swap(pos, "I"))
        pos = c.swap(pos, "Q" * nr_ids)
    # records
    pos = data_off
    while pos < data_off + data_size:
        rtype, _misc, size = struct.unpack_from("<IHH", src, pos)
        c.swap(pos, "IHH")
        end = pos + size
        if rtype == 9:
            id_pos = 0 if glob["sample_type"] & (1 << 16) else None
            attr = by_id.get(c.u64(pos + 8), glob) if id_pos == 0 else glob
            c.sample(pos + 8, attr)
        elif rtype in BODY:
            if glob["flags"] & (1 << 18):
                c.trailer(end, glob["sample_type"])
            if BODY[rtype]:
                c.swap(pos + 8, BODY[rtype])
        pos = end
    return bytes(c.dst)


def _normalized(events):
    out = []
    for e in events:
        if isinstance(e, RECORDS + (AttrEvent,)) and hasattr(e, "attr"):
            e = e._replace(attr=e.attr._replace(big_endian=False))
        if isinstance(e, RECORDS + (AttrEvent,)):
            out.append(e)
    return out


@pytest.mark.parametrize("case", ["fp/perf.data", "dwarf/perf.data", "multievent/perf.data",
                                  "offcpu/perf.data", "lost/perf.data"])
def test_big_endian_file_decodes_the_same(case, tmp_path):
    path = CORPUS / "recorded" / case
    big = tmp_path / "be.data"
    big.write_bytes(to_big_endian(path))
    reader = PerfReader(open_source(str(big), None, 0))
    be_events = list(reader.events())
    assert reader.big_endian
    le_events = read_all(open_source(str(path), None, 0))
    le, be = _normalized(le_events), _normalized(be_events)
    assert sum(isinstance(e, SampleEvent) for e in be) > 100
    assert len(le) == len(be)
    for a, b in zip(le, be, strict=True):
        assert a == b
    assert be_events[-1] == le_events[-1]  # same final progress value
    check_fast_equals_construct(big)
