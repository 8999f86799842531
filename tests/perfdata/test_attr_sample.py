"""perf_event_attr sizes and names, and SAMPLE layouts the corpus lacks: read_format without
ID, group reads, LBR with hw_idx — fast decoder and construct declaration on the same bytes."""

from __future__ import annotations

import struct

import pytest

from perfparser_py.perfdata.attr import PerfEventAttr, generated_name
from perfparser_py.perfdata.attr import parse_attr
from perfparser_py.perfdata.events import ProgressEvent, packed_regs
from perfparser_py.perfdata.fast import make_decoders
from perfparser_py.perfdata.abi import RECORD_SAMPLE
from perfparser_py.perfdata.declare import attr_struct
from perfparser_py.perfdata.records import decode_record, sample_struct_of
from tests.perfdata.perfdata_corpus import CORPUS, read_file


def _attr(**kw) -> PerfEventAttr:
    base = dict(type=0, size=128, config=0, sample_period=1, sample_type=0, read_format=0,
                flags=0)
    base.update(kw)
    return PerfEventAttr(**base)


USER, KERNEL, HV, HOST, GUEST = 1 << 4, 1 << 5, 1 << 6, 1 << 19, 1 << 20


@pytest.mark.parametrize(("type_", "config", "name"), [
    (0, 0, "cycles"), (0, 4, "branches"), (0, 9, "ref-cycles"), (0, 10, "unknown-hardware"),
    (1, 0, "cpu-clock"), (1, 9, "dummy"), (1, 0x1f, "unknown-software"),
    (2, 0x1c3, "unknown tracepoint"), (3, 0x10000, "L1-dcache-load-misses"),
    (3, 0, "L1-dcache-loads"), (3, 0x0201, "L1-icache-prefetches"),
    (3, 0x0103, "dTLB-stores"), (3, 0x0101, "invalid-cache"),
    (3, 0x7, "unknown-ext-hardware-cache-type"), (3, 0x0300, "unknown-ext-hardware-cache-op"),
    (3, 0x020004, "unknown-ext-hardware-cache-result"),
    (4, 0xABC, "raw 0xabc"), (9, 3, "unknown attr type: 9"),
])
def test_generated_name_is_perfs(type_, config, name):
    """perf's evsel__name of an attr without a name (tools/perf/util/evsel.c), for an attr as
    perf record makes it for an event without modifiers (exclude_guest set)."""
    assert generated_name(_attr(type=type_, config=config, flags=GUEST)) == name


@pytest.mark.parametrize(("flags", "suffix"), [
    (0, ":HG"), (3 << 15, ":ppp"), (1 << 15, ":p"), (KERNEL | HV, ":u"),
    (KERNEL | HV | GUEST, ":uH"), (KERNEL | HV | GUEST | (3 << 15), ":upppH"),
    (USER | HV | GUEST, ":kH"), (USER, ":kh"), (GUEST, ""), (HOST, ":G"),
    (HOST | GUEST, ""), (KERNEL | HOST, ":uhG"),
])
def test_modifiers_follow_perf(flags, suffix):
    """`perf record -e cpu-clock:u` has exclude_kernel, exclude_hv and exclude_guest: perf
    names it `cpu-clock:uH` when no name came with it (checked with perf 6.1 in
    tests/e2e/test_event_names.py)."""
    assert generated_name(_attr(type=1, config=0, flags=flags)) == "cpu-clock" + suffix


def test_breakpoint_and_tracepoint_names():
    bp = _attr(type=5, config=0, config1=0x4010a0, bp_type=3, flags=1 << 5 | 1 << 6)
    assert generated_name(bp) == "mem:0x4010a0:rw:u"
    assert generated_name(_attr(type=2, config=7), "sched:sched_switch") == "sched:sched_switch"


def _attr_bytes(big_endian: bool, **fields) -> bytes:
    """A VER0 attr (64 bytes) built by its declaration."""
    base = dict(type=1, size=64, config=0, sample_period=0, sample_type=0, read_format=0,
                flags=0, wakeup_events=0, bp_type=0, config1=0)
    return attr_struct(big_endian).build({**base, **fields})


def test_attr_larger_than_known_is_skipped():
    attr = parse_attr(_attr_bytes(False), 0, False)
    assert attr.size == 64 and attr.branch_sample_type == 0
    raw = (CORPUS / "upstream/cpp-inlining/cpp-inlining.perf.data").read_bytes()
    off = struct.unpack_from("<Q", raw, 24)[0]
    assert parse_attr(raw, off, False).size == 136


def test_big_endian_flags_are_bit_reversed():
    le = _attr_bytes(False, sample_period=99, sample_type=7, flags=(1 << 10) | (1 << 18))
    be = _attr_bytes(True, sample_period=99, sample_type=7, flags=(1 << 10) | (1 << 18))
    # the word on disk: MSB-first bit numbering, so freq (10) is bit 53, sample_id_all bit 45
    assert struct.unpack_from(">Q", be, 40)[0] == (1 << 53) | (1 << 45)
    a, b = parse_attr(le, 0, False), parse_attr(be, 0, True)
    assert a.freq and a.sample_id_all and b.freq and b.sample_id_all and a.flags == b.flags


@pytest.mark.parametrize("big_endian", [False, True])
def test_sample_read_without_id_group_and_lbr_hw_idx(big_endian):
    # IP | TID | READ | CALLCHAIN | BRANCH_STACK | REGS_USER | STACK_USER | WEIGHT
    st = 1 | 2 | 16 | 32 | (1 << 11) | (1 << 12) | (1 << 13) | (1 << 14)
    attr = _attr(sample_type=st, read_format=8 | 1, branch_sample_type=1 << 17,
                 sample_regs_user=0b1011, big_endian=big_endian)
    body = sample_struct_of(attr).build(dict(
        ip=0x401000, pid=10, tid=11,
        read=dict(nr=2, time_enabled=555, cntr=[dict(value=7), dict(value=8)]),  # no ids
        callchain=[0xA, 0xB],
        branch_stack=dict(nr=1, hw_idx=42, lbr=[{"from": 1, "to": 2, "flags": 3}]),
        regs_user=dict(abi=2, regs=[1, 2, 3]),
        stack_user=dict(size=16, data=bytes(range(16)), dyn_size=5),
        weight=77))
    assert len(body) == 8 + 8 + 32 + 24 + 40 + 32 + 32 + 8  # every part there
    size = 8 + len(body)
    fast = make_decoders(big_endian).sample(memoryview(body), 0, len(body), 2, size, attr)
    slow = decode_record(RECORD_SAMPLE, 2, size, body, attr, attr)
    assert fast == slow
    assert fast.read_values == ((7, 0), (8, 0))
    assert fast.callchain == (0xA, 0xB)
    assert fast.hw_idx == 42 and fast.branch_stack == ((1, 2, 3),)
    assert fast.regs == packed_regs((1, 2, 3)) and bytes(fast.stack) == bytes(range(5))
    assert fast.weight == 77 and fast.pid == 10 and fast.tid == 11


def test_progress_is_float32_and_at_most_one_per_record():
    events = read_file(CORPUS / "recorded/fp/perf.data")
    fractions = [e.fraction for e in events if isinstance(e, ProgressEvent)]
    assert fractions[0] == 0.0 and len(fractions) == 101
    assert fractions == sorted(fractions) and 0.99 < fractions[-1] <= 1.0
    for f in fractions:
        assert struct.unpack("f", struct.pack("f", f))[0] == f
    kinds = [type(e) for e in events]
    assert all(not (a is b is ProgressEvent) for a, b in zip(kinds, kinds[1:], strict=False))
