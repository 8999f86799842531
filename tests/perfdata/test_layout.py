"""The layouts declared once (perfdata/layout.py): for any sample_type, the construct
declaration builds a sample that the hand decoders (their plans generated from the same
tables) and the declaration itself read back as the values built; the same for the sample_id
trailer and the attr of every ABI size."""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest
from construct import Struct

from perfparser_py.perfdata import abi, layout, reader
from perfparser_py.perfdata.attr import PerfEventAttr
from perfparser_py.perfdata.attr import parse_attr
from perfparser_py.perfdata.declare import attr_struct, declare
from perfparser_py.perfdata.events import packed_regs
from perfparser_py.perfdata.fast import Fused, Stacked, make_decoders
from perfparser_py.perfdata.ints import ints
from perfparser_py.perfdata.records import decode_record, sample_id_struct, sample_struct_of

# every sample_type bit a part is there for (the weight's slot is there for either of two)
BITS = sorted({1 << k for row in (*layout.SAMPLE_PREFIX, *layout.SAMPLE_VARIABLE)
               for k in range(64) if row[2] >> k & 1})
ALL = sum(BITS)
# read_format: none, one value with everything, a group with ids
READ_FORMATS = (0, abi.FORMAT_TOTAL_TIME_ENABLED | abi.FORMAT_TOTAL_TIME_RUNNING | abi.FORMAT_ID
                | abi.FORMAT_LOST, abi.FORMAT_GROUP | abi.FORMAT_ID)


def _sample_types() -> list[int]:
    rng = random.Random(21)
    return sorted({0, ALL, *BITS, *(rng.getrandbits(ALL.bit_length()) & ALL
                                     for _ in range(150))})


def _values(sample_type: int, read_format: int, variant: int) -> dict:
    """A value for every field, each one different, so a field read from the wrong place
    shows. variant 1: no user registers (abi 0) and an empty user stack, the parts' other
    shapes."""
    v = {name: 0x1000 + k for k, (name, code, _bit) in enumerate(layout.SAMPLE_PREFIX)
         if code == "Q" or name in ("pid", "tid", "cpu")}
    v.update(weight=0x2001, data_src=0x2002, transaction=0x2003)
    cntr = [dict(value=0x3000 + k, id=0x3100 + k, lost=0) for k in range(2)]
    if read_format & abi.FORMAT_GROUP:
        v["read"] = dict(nr=2, time_enabled=5, time_running=4, cntr=cntr)
    else:
        v["read"] = dict(cntr[0], time_enabled=5, time_running=4)
    v["callchain"] = [abi.CONTEXT_USER, 0x401000, 0x402000]
    v["raw"] = b"\x01\x02\x03\x04"
    v["branch_stack"] = dict(nr=2, hw_idx=0x4001, lbr=[{"from": 7, "to": 8, "flags": 9},
                                                       {"from": 17, "to": 18, "flags": 19}])
    v["regs_user"] = dict(abi=2, regs=[11, 12]) if not variant else dict(abi=0)
    v["stack_user"] = (dict(size=8, data=bytes(range(8)), dyn_size=6) if not variant
                       else dict(size=0, data=b""))
    return {k: val for k, val in v.items() if sample_type & _bit(k)}


def _own(decoder: type, attr: PerfEventAttr):
    """A Fused or Stacked decoder of attr whose fall-back to the general decoder fails the
    test."""
    e = ">" if attr.big_endian else "<"

    def fall_back(*_args):
        raise AssertionError(f"{decoder.__name__} fell back to the general decoder")

    return decoder(attr, {}, lambda n: struct.Struct(f"{e}{n}Q").unpack_from, fall_back)


def _read_values(built: dict, read_format: int) -> tuple:
    if "read" not in built:
        return ()
    with_id = read_format & abi.FORMAT_ID
    return tuple((c["value"], c["id"] if with_id else 0)
                 for c in built["read"].get("cntr", (built["read"],)))


def _bit(name: str) -> int:
    return next(row[2] for row in (*layout.SAMPLE_PREFIX, *layout.SAMPLE_VARIABLE)
                if row[0] == name)


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("read_format", READ_FORMATS)
def test_every_sample_type_decodes_to_the_values_built(big_endian, read_format):
    """The general decoder, the construct declaration and the hand-written fast paths (Fused,
    Stacked) read every part where the tables put it."""
    dec = make_decoders(big_endian)
    for n, st in enumerate(_sample_types()):
        variant = n % 2
        attr = PerfEventAttr(type=1, size=112, config=0, sample_period=1, sample_type=st,
                             read_format=read_format, flags=0, sample_regs_user=0b11,
                             branch_sample_type=abi.SAMPLE_BRANCH_HW_INDEX * variant,
                             big_endian=big_endian)
        built = _values(st, read_format, variant)
        body = sample_struct_of(attr).build(built)
        size = 8 + len(body)
        fast = dec.sample(memoryview(body), 0, len(body), 2, size, attr)
        assert fast == decode_record(abi.RECORD_SAMPLE, 2, size, body, attr, attr), hex(st)
        for name in ("ip", "pid", "tid", "time", "addr", "stream_id", "cpu", "period",
                     "weight", "data_src", "transaction"):
            assert getattr(fast, name) == built.get(name, 0), (hex(st), name)
        assert fast.id == built.get("id", built.get("identifier", 0)), hex(st)
        assert fast.callchain == tuple(built.get("callchain", ())), hex(st)
        assert fast.read_values == _read_values(built, read_format), hex(st)
        assert fast.raw == built.get("raw"), hex(st)
        lbr = built.get("branch_stack", dict(lbr=()))["lbr"]
        assert fast.branch_stack == tuple((e["from"], e["to"], e["flags"]) for e in lbr)
        assert fast.hw_idx == (0x4001 if variant and st & abi.SAMPLE_BRANCH_STACK else None)
        regs = built.get("regs_user", dict(abi=0))
        assert (fast.regs_abi, fast.regs) == (regs["abi"], packed_regs(regs.get("regs", ()))), hex(st)
        stack = built.get("stack_user", dict(size=0))
        assert fast.stack == (stack["data"][:stack["dyn_size"]] if stack["size"] else None)
        fused = dec.fused(attr)
        if fused is not None:  # the frame-pointer and DWARF decoders read the same values
            got = fused(memoryview(body), 0, len(body), 2, size)
            if type(got) is type(fast):
                assert got == fast, hex(st)
                # read by Stacked itself, not by the general decoder it falls back to
                assert _own(Stacked, attr).decode(memoryview(body), 0, len(body), 2, size) == fast
            else:
                assert tuple(got) == (fast.pid, fast.tid, fast.time, fast.cpu, fast.ip, fast.id,
                                      fast.period, fast.callchain, 2, size), hex(st)
                assert _own(Fused, attr).decode(memoryview(body), 0, len(body), 2, size) == got


@pytest.mark.parametrize("big_endian", [False, True])
def test_samples_not_in_whole_words_are_left_to_the_general_decoder(big_endian):
    """Fused and Stacked read whole words of the host's byte order: a stack of a size that
    is not a multiple of 8 (the kernel never writes one), a record at an odd offset or a
    file of the other byte order goes to the general decoder, and decodes as the tables
    say."""
    dec = make_decoders(big_endian)
    fp = abi.SAMPLE_TID | abi.SAMPLE_TIME | abi.SAMPLE_IP | abi.SAMPLE_CALLCHAIN
    attr = PerfEventAttr(type=1, size=112, config=0, sample_period=1, sample_type=fp,
                         read_format=0, flags=0, big_endian=big_endian)
    assert (dec.fused(attr) is None) == big_endian
    if not big_endian:
        body = b"\0" * 4 + sample_struct_of(attr).build(_values(fp, 0, 0))
        size = 8 + len(body) - 4
        want = dec.sample(memoryview(body), 4, len(body), 2, size, attr)
        assert tuple(dec.fused(attr)(memoryview(body), 4, len(body), 2, size)) == (
            want.pid, want.tid, want.time, want.cpu, want.ip, want.id, want.period,
            want.callchain, 2, size)
        with pytest.raises(AssertionError, match="fell back"):
            _own(Fused, attr).decode(memoryview(body), 4, len(body), 2, size)
    st = abi.SAMPLE_TID | abi.SAMPLE_TIME | abi.SAMPLE_REGS_USER | abi.SAMPLE_STACK_USER
    attr = PerfEventAttr(type=1, size=112, config=0, sample_period=1, sample_type=st,
                         read_format=0, flags=0, sample_regs_user=0b11, big_endian=big_endian)
    built = _values(st, 0, 0)
    fused = dec.fused(attr)
    assert (fused is None) == big_endian
    if big_endian:
        return
    built["stack_user"] = dict(size=5, data=b"\x01\x02\x03\x04\x05", dyn_size=3)
    for body, pos in ((sample_struct_of(attr).build(built), 0),
                      (b"\0" * 4 + sample_struct_of(attr).build(_values(st, 0, 0)), 4)):
        size = 8 + len(body) - pos
        want = dec.sample(memoryview(body), pos, len(body), 2, size, attr)
        assert want == decode_record(abi.RECORD_SAMPLE, 2, size, body[pos:], attr, attr)
        assert fused(memoryview(body), pos, len(body), 2, size) == want
        with pytest.raises(AssertionError, match="fell back"):
            _own(Stacked, attr).decode(memoryview(body), pos, len(body), 2, size)


@pytest.mark.parametrize("weight_bit", [abi.SAMPLE_WEIGHT, abi.SAMPLE_WEIGHT_STRUCT])
def test_either_weight_kind_takes_the_weight_slot(weight_bit):
    """perf_event.h: `{ u64 weight; } && PERF_SAMPLE_WEIGHT_TYPE`, the plain weight or the
    struct one (`perf record -W` on x86 and powerpc since perf 5.12), in one u64 after the user stack; the data
    source and the transaction follow it. Packed here by hand, not from the tables."""
    st = (abi.SAMPLE_IP | abi.SAMPLE_TID | abi.SAMPLE_REGS_USER | abi.SAMPLE_STACK_USER
          | weight_bit | abi.SAMPLE_DATA_SRC | abi.SAMPLE_TRANSACTION)
    attr = PerfEventAttr(type=1, size=112, config=0, sample_period=1, sample_type=st,
                         read_format=0, flags=0, sample_regs_user=0b1)
    body = struct.pack("<QIIQQQ8sQQQQ", 0x401000, 7, 8, 2, 0x7FFC, 8, bytes(range(8)), 8,
                       0x0003_0002_0000_0001, 0x42, 0x5)
    dec = make_decoders(False)
    size = 8 + len(body)
    for got in (dec.sample(memoryview(body), 0, len(body), 2, size, attr),
                decode_record(abi.RECORD_SAMPLE, 2, size, body, attr, attr),
                _own(Stacked, attr).decode(memoryview(body), 0, len(body), 2, size)):
        assert (got.ip, got.pid, got.tid, got.regs, got.stack) == (
            0x401000, 7, 8, packed_regs((0x7FFC,)), bytes(range(8)))
        assert (got.weight, got.data_src, got.transaction) == (0x0003_0002_0000_0001, 0x42, 5)


@pytest.mark.parametrize("big_endian", [False, True])
def test_sample_id_trailer_is_read_where_the_declaration_writes_it(big_endian):
    dec = make_decoders(big_endian)
    for st in _sample_types():
        attr = PerfEventAttr(type=1, size=112, config=0, sample_period=1, sample_type=st,
                             read_format=0, flags=abi.FLAG_SAMPLE_ID_ALL, big_endian=big_endian)
        trailer = sample_id_struct(st, big_endian).build(dict(
            pid=0x51, tid=0x52, time=0x53, id=0x54, stream_id=0x55, cpu=0x56, identifier=0x54))
        assert len(trailer) == attr.plan.trailer.size
        comm = Struct(*declare(layout.COMM, ints(big_endian)))
        body = comm.build(dict(pid=3, tid=4, comm=b"name")) + trailer
        size = 8 + len(body)
        fast = dec.comm(memoryview(body), 0, len(body), 0, size, (attr.plan.trailer,
                                                                  attr.plan.trailer_index))
        assert fast == decode_record(abi.RECORD_COMM, 0, size, body, None, attr)
        assert (fast.time, fast.cpu) == (0x53 if st & abi.SAMPLE_TIME else 0,
                                          0x56 if st & abi.SAMPLE_CPU else 0)
        assert fast.comm == b"name"


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("size", [64, 72, 80, 96, 104, 112, 120, 136])
def test_attr_of_every_abi_size_round_trips(big_endian, size):
    """Each field after the first 64 bytes is read when the attr's size reaches past it, and
    0 when it does not; bytes past what we know are skipped. Its construct compile()s to the
    same parse and build."""
    values = {name: 1 + k for k, (name, _code) in enumerate(layout.ATTR)}
    values.update(size=size, flags=abi.FLAG_FREQ | abi.FLAG_SAMPLE_ID_ALL)
    data = attr_struct(big_endian).build(values)
    assert len(data) == size
    compiled = attr_struct(big_endian).compile()  # all but big-endian flags' ExprAdapter
    assert compiled.build(values) == data and compiled.parse(data) == attr_struct(
        big_endian).parse(data)
    attr = parse_attr(data + b"\xff" * 8, 0, big_endian)
    at = layout.offsets(layout.ATTR)
    for name, code in layout.ATTR:
        fits = at[name] + {"Q": 8, "I": 4, "i": 4, "H": 2}[code] <= size
        assert getattr(attr, name) == (values[name] if fits else 0), name
    assert attr.freq and attr.sample_id_all


def test_reader_literals_are_abis_record_numbers():
    """The reader's loop writes its hottest record types as numbers, each commented with its
    abi name: the number must be that name's."""
    source = (Path(reader.__file__).parent / "reader.py").read_text()  # .py beside the .so
    pairs = re.findall(r"rtype == (\d+):  # (RECORD_\w+)", source)
    assert len(pairs) == 6
    for number, name in pairs:
        assert int(number) == getattr(abi, name), name


def test_a_part_the_general_decoder_cannot_read_is_refused_when_planned():
    """part_plan reads a head, one array, then fixed fields; another shape (two arrays) is a
    ValueError when the attr's plan is made, not a wrong read later."""
    two = layout.Part((("nr", "Q"), ("a", layout.Items("Q", "nr")), ("b", layout.Items("Q", "nr"))))
    with pytest.raises(ValueError, match="cannot read"):
        layout.part_plan("two", layout.resolve(two, {}), "<")
