"""Record grammar (SEMANTICS §3): record type numbers, construct declarations of every record
body and of the sample_id trailer, and the construct-based decoding into events.

The reader uses these declarations for the rare records; fast.py hand-decodes the hot ones and
tests/perfdata checks both agree on every corpus file.
"""

from __future__ import annotations

from functools import cache

from construct import (
    Bytes,
    Computed,
    Construct,
    ExprAdapter,
    GreedyBytes,
    GreedyRange,
    If,
    Optional,
    Padding,
    PrefixedArray,
    Struct,
    this,
)

from . import events as ev
from .attr import (
    READ_GROUP,
    READ_ID,
    READ_LOST,
    READ_TOTAL_TIME_ENABLED,
    READ_TOTAL_TIME_RUNNING,
    SAMPLE_ADDR,
    SAMPLE_BRANCH_STACK,
    SAMPLE_CALLCHAIN,
    SAMPLE_CPU,
    SAMPLE_DATA_SRC,
    SAMPLE_ID,
    SAMPLE_IDENTIFIER,
    SAMPLE_IP,
    SAMPLE_PERIOD,
    SAMPLE_RAW,
    SAMPLE_READ,
    SAMPLE_REGS_USER,
    SAMPLE_STACK_USER,
    SAMPLE_STREAM_ID,
    SAMPLE_TID,
    SAMPLE_TIME,
    SAMPLE_TRANSACTION,
    SAMPLE_WEIGHT,
    PerfEventAttr,
    attr_struct,
)
from .ints import ints

MMAP = 1
LOST = 2
COMM = 3
EXIT = 4
THROTTLE = 5
UNTHROTTLE = 6
FORK = 7
READ = 8
SAMPLE = 9
MMAP2 = 10
AUX = 11
ITRACE_START = 12
LOST_SAMPLES = 13
SWITCH = 14
SWITCH_CPU_WIDE = 15
NAMESPACES = 16
KSYMBOL = 17
BPF_EVENT = 18
CGROUP = 19
TEXT_POKE = 20
AUX_OUTPUT_HW_ID = 21
HEADER_ATTR = 64
HEADER_EVENT_TYPE = 65
HEADER_TRACING_DATA = 66
HEADER_BUILD_ID = 67
FINISHED_ROUND = 68
ID_INDEX = 69
AUXTRACE_INFO = 70
AUXTRACE = 71
AUXTRACE_ERROR = 72
THREAD_MAP = 73
CPU_MAP = 74
STAT_CONFIG = 75
STAT = 76
STAT_ROUND = 77
EVENT_UPDATE = 78
TIME_CONV = 79
HEADER_FEATURE = 80
COMPRESSED = 81
FINISHED_INIT = 82
COMPRESSED2 = 83

MISC_COMM_EXEC = 0x2000  # COMM
MISC_SWITCH_OUT = 0x2000  # SWITCH
MISC_MMAP_DATA = 0x2000  # MMAP/MMAP2: non-executable mapping
MISC_MMAP_BUILD_ID = 0x4000  # MMAP2 carries a build id instead of maj/min/ino
KSYMBOL_UNREGISTER = 1  # KSYMBOL flags

PROT_READ = 1
PROT_EXEC = 4


def _cstring(con: Construct = GreedyBytes) -> Construct:
    """Bytes up to the first NUL (perf pads names to 8 bytes with NULs)."""
    return ExprAdapter(con, lambda obj, _: obj.split(b"\0", 1)[0], None)


@cache
def record_structs(big_endian: bool) -> dict[int, Construct]:
    """Body (after the 8-byte header, before any sample_id trailer) of every declared record."""
    i = ints(big_endian)
    task = Struct("pid" / i.s32, "ppid" / i.s32, "tid" / i.s32, "ptid" / i.s32, "time" / i.u64)
    throttle = Struct("time" / i.u64, "id" / i.u64, "stream_id" / i.u64)
    return {
        MMAP: Struct("pid" / i.s32, "tid" / i.s32, "addr" / i.u64, "len" / i.u64,
                     "pgoff" / i.u64, "filename" / _cstring()),
        LOST: Struct("id" / i.u64, "lost" / i.u64),
        COMM: Struct("pid" / i.s32, "tid" / i.s32, "comm" / _cstring()),
        EXIT: task,
        THROTTLE: throttle,
        UNTHROTTLE: throttle,
        FORK: task,
        READ: Struct("pid" / i.u32, "tid" / i.u32, "values" / GreedyBytes),
        AUX: Struct("aux_offset" / i.u64, "aux_size" / i.u64, "flags" / i.u64),
        ITRACE_START: Struct("pid" / i.u32, "tid" / i.u32),
        LOST_SAMPLES: Struct("lost" / i.u64),
        SWITCH: Struct(),
        SWITCH_CPU_WIDE: Struct("next_prev_pid" / i.u32, "next_prev_tid" / i.u32),
        NAMESPACES: Struct("pid" / i.u32, "tid" / i.u32, "nr" / i.u64,
                           "namespaces" / Struct("dev" / i.u64, "ino" / i.u64)[this.nr]),
        KSYMBOL: Struct("addr" / i.u64, "len" / i.u32, "ksym_type" / i.u16, "flags" / i.u16,
                        "name" / _cstring()),
        BPF_EVENT: Struct("type" / i.u16, "flags" / i.u16, "id" / i.u32, "tag" / Bytes(8)),
        CGROUP: Struct("id" / i.u64, "path" / _cstring()),
        TEXT_POKE: Struct("addr" / i.u64, "old_len" / i.u16, "new_len" / i.u16,
                          "bytes" / GreedyBytes),
        HEADER_ATTR: Struct("attr" / attr_struct(big_endian), "ids" / GreedyRange(i.u64)),
        HEADER_EVENT_TYPE: Struct("event_id" / i.u64, "name" / _cstring(Bytes(64))),
        HEADER_TRACING_DATA: Struct("size" / i.u32),
        HEADER_BUILD_ID: Struct("pid" / i.s32, "build_id" / Bytes(20), "id_size" / i.u8,
                                Padding(3), "filename" / _cstring()),
        FINISHED_ROUND: Struct(),
        ID_INDEX: Struct("nr" / i.u64, "entries" / Struct(
            "id" / i.u64, "idx" / i.u64, "cpu" / i.u64, "tid" / i.u64)[this.nr]),
        THREAD_MAP: PrefixedArray(i.u64, Struct("pid" / i.u64, "comm" / _cstring(Bytes(16)))),
        EVENT_UPDATE: Struct("type" / i.u64, "id" / i.u64, "data" / GreedyBytes),
        TIME_CONV: Struct("time_shift" / i.u64, "time_mult" / i.u64, "time_zero" / i.u64,
                          # perf >= 5.10 (cap_user_time_short, for TSCs that wrap)
                          "extension" / Optional(Struct(
                              "time_cycles" / i.u64, "time_mask" / i.u64,
                              "cap_user_time_zero" / i.u8, "cap_user_time_short" / i.u8,
                              Padding(6)))),
        HEADER_FEATURE: Struct("feat_id" / i.u64, "data" / GreedyBytes),
        COMPRESSED: Struct("data" / GreedyBytes),
        FINISHED_INIT: Struct(),
        COMPRESSED2: Struct("data_size" / i.u64, "data" / Bytes(this.data_size),
                            "padding" / GreedyBytes),
    }


@cache
def mmap2_struct(big_endian: bool, with_build_id: bool) -> Construct:
    i = ints(big_endian)
    if with_build_id:
        ident = Struct("build_id_size" / i.u8, Padding(3), "build_id" / Bytes(20),
                       "maj" / Computed(0), "min" / Computed(0), "ino" / Computed(0))
    else:
        ident = Struct("maj" / i.u32, "min" / i.u32, "ino" / i.u64, "ino_generation" / i.u64)
    return Struct("pid" / i.s32, "tid" / i.s32, "addr" / i.u64, "len" / i.u64, "pgoff" / i.u64,
                  "ident" / ident, "prot" / i.u32, "flags" / i.u32, "filename" / _cstring())


@cache
def sample_id_struct(sample_type: int, big_endian: bool) -> Construct:
    """The sample_id trailer of non-sample records (global attr has sample_id_all)."""
    i = ints(big_endian)
    return Struct(
        "pid" / If(sample_type & SAMPLE_TID, i.u32),
        "tid" / If(sample_type & SAMPLE_TID, i.u32),
        "time" / If(sample_type & SAMPLE_TIME, i.u64),
        "id" / If(sample_type & SAMPLE_ID, i.u64),
        "stream_id" / If(sample_type & SAMPLE_STREAM_ID, i.u64),
        "cpu" / If(sample_type & SAMPLE_CPU, i.u32),
        "res" / If(sample_type & SAMPLE_CPU, i.u32),
        "identifier" / If(sample_type & SAMPLE_IDENTIFIER, i.u64),
    )


@cache
def sample_struct(sample_type: int, read_format: int, nregs_user: int, hw_index: bool,
                  big_endian: bool) -> Construct:
    """PERF_RECORD_SAMPLE body for one attr (fields present per sample_type, SEMANTICS §3.4)."""
    i = ints(big_endian)
    u64 = i.u64
    times = Struct("enabled" / If(read_format & READ_TOTAL_TIME_ENABLED, u64),
                   "running" / If(read_format & READ_TOTAL_TIME_RUNNING, u64))
    entry = Struct("value" / u64, "id" / If(read_format & READ_ID, u64),
                   "lost" / If(read_format & READ_LOST, u64))
    if read_format & READ_GROUP:
        read = Struct("nr" / u64, "times" / times, "entries" / entry[this.nr])
    else:
        read = Struct("value" / u64, "times" / times, "id" / If(read_format & READ_ID, u64),
                      "lost" / If(read_format & READ_LOST, u64))
    return Struct(
        "identifier" / If(sample_type & SAMPLE_IDENTIFIER, u64),
        "ip" / If(sample_type & SAMPLE_IP, u64),
        "pid" / If(sample_type & SAMPLE_TID, i.u32),
        "tid" / If(sample_type & SAMPLE_TID, i.u32),
        "time" / If(sample_type & SAMPLE_TIME, u64),
        "addr" / If(sample_type & SAMPLE_ADDR, u64),
        "id" / If(sample_type & SAMPLE_ID, u64),
        "stream_id" / If(sample_type & SAMPLE_STREAM_ID, u64),
        "cpu" / If(sample_type & SAMPLE_CPU, i.u32),
        "res" / If(sample_type & SAMPLE_CPU, i.u32),
        "period" / If(sample_type & SAMPLE_PERIOD, u64),
        "read" / If(sample_type & SAMPLE_READ, read),
        "callchain" / If(sample_type & SAMPLE_CALLCHAIN, PrefixedArray(u64, u64)),
        "raw" / If(sample_type & SAMPLE_RAW, Struct("size" / i.u32, "data" / Bytes(this.size))),
        "branch_stack" / If(sample_type & SAMPLE_BRANCH_STACK, Struct(
            "nr" / u64,
            "hw_idx" / If(hw_index, u64),
            "entries" / Struct("from_" / u64, "to" / u64, "flags" / u64)[this.nr],
        )),
        "regs_user" / If(sample_type & SAMPLE_REGS_USER, Struct(
            "abi" / u64, "regs" / If(this.abi != 0, u64[nregs_user]))),
        "stack_user" / If(sample_type & SAMPLE_STACK_USER, Struct(
            "size" / u64, "data" / Bytes(this.size), "dyn_size" / If(this.size > 0, u64))),
        "weight" / If(sample_type & SAMPLE_WEIGHT, u64),
        "data_src" / If(sample_type & SAMPLE_DATA_SRC, u64),
        "transaction" / If(sample_type & SAMPLE_TRANSACTION, u64),
    )


def _z(v) -> int:
    return 0 if v is None else v


def _trailer(body: bytes, global_attr: PerfEventAttr | None) -> tuple[bytes, tuple[int, ...]]:
    """Split off the sample_id trailer: (body without it, (pid, tid, time, cpu))."""
    if global_attr is None or not global_attr.sample_id_all:
        return body, (0, 0, 0, 0)
    size = global_attr.plan.trailer.size
    t = sample_id_struct(global_attr.sample_type, global_attr.big_endian).parse(body[-size:]
                                                                                  if size else b"")
    return body[:len(body) - size], (_z(t.pid), _z(t.tid), _z(t.time), _z(t.cpu))


def _sample(attr: PerfEventAttr, body: bytes, size: int, misc: int) -> ev.SampleEvent:
    plan = attr.plan
    s = sample_struct(attr.sample_type, attr.read_format, plan.nregs_user, plan.branch_hw_index,
                      attr.big_endian).parse(body)
    read_values: tuple = ()
    if s.read is not None:
        if plan.read_group:
            read_values = tuple((e.value, _z(e.id)) for e in s.read.entries)
        else:
            read_values = ((s.read.value, _z(s.read.id)),)
    stack = None
    if s.stack_user is not None and s.stack_user.size:
        stack = memoryview(s.stack_user.data)[:min(s.stack_user.dyn_size, s.stack_user.size)]
    bs = s.branch_stack
    return ev.SampleEvent(
        attr=attr, pid=_z(s.pid), tid=_z(s.tid), time=_z(s.time), cpu=_z(s.cpu), ip=_z(s.ip),
        addr=_z(s.addr), id=_z(s.id if s.id is not None else s.identifier),
        stream_id=_z(s.stream_id), period=_z(s.period), read_values=read_values,
        callchain=tuple(s.callchain or ()),
        raw=memoryview(s.raw.data) if s.raw is not None else None,
        branch_stack=tuple((e.from_, e.to, e.flags) for e in bs.entries) if bs else (),
        hw_idx=bs.hw_idx if bs else None,
        regs_abi=s.regs_user.abi if s.regs_user else 0,
        regs=tuple(s.regs_user.regs or ()) if s.regs_user else (),
        stack=stack, weight=_z(s.weight), data_src=_z(s.data_src),
        transaction=_z(s.transaction), size=size, misc=misc)


def decode_record(rtype: int, misc: int, size: int, body: bytes, sample_attr: PerfEventAttr | None,
                  global_attr: PerfEventAttr | None) -> object | None:
    """Decode one record body with the construct declarations; None for records that yield
    nothing. `sample_attr` is the attr chosen for a SAMPLE (SEMANTICS §3.4)."""
    big_endian = global_attr.big_endian if global_attr is not None else False
    if rtype == SAMPLE:
        return _sample(sample_attr, body, size, misc) if sample_attr is not None else None
    if rtype == FINISHED_ROUND:
        return ev.FinishedRoundEvent()
    if rtype == FINISHED_INIT:
        return ev.FinishedInitEvent()
    if rtype == TIME_CONV:  # perf's own record: no sample_id trailer
        r = record_structs(big_endian)[TIME_CONV].parse(body)
        x = r.extension
        return ev.TimeConvEvent(r.time_shift, r.time_mult, r.time_zero,
                                x.time_cycles if x else 0, x.time_mask if x else 0,
                                bool(x and x.cap_user_time_zero),
                                bool(x and x.cap_user_time_short))
    if rtype not in (MMAP, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES, SWITCH, SWITCH_CPU_WIDE,
                     KSYMBOL):
        return None
    rest, (spid, stid, time, cpu) = _trailer(body, global_attr)
    if rtype == MMAP2:
        r = mmap2_struct(big_endian, bool(misc & MISC_MMAP_BUILD_ID)).parse(rest)
        bid = r.ident.get("build_id")
        return ev.MmapEvent(r.pid, r.tid, r.addr, r.len, r.pgoff, r.filename, r.prot, r.flags,
                            r.ident.maj, r.ident.min, r.ident.ino,
                            bid[:min(r.ident.build_id_size, 20)] if bid is not None else None,
                            time, cpu, spid, stid, size, misc)
    r = record_structs(big_endian)[rtype].parse(rest)
    if rtype == MMAP:
        prot = PROT_READ if misc & MISC_MMAP_DATA else PROT_EXEC
        return ev.MmapEvent(r.pid, r.tid, r.addr, r.len, r.pgoff, r.filename, prot, 0, 0, 0, 0,
                            None, time, cpu, spid, stid, size, misc)
    if rtype == COMM:
        return ev.CommEvent(r.pid, r.tid, r.comm, time, cpu, size, misc)
    if rtype in (FORK, EXIT):
        cls = ev.ForkEvent if rtype == FORK else ev.ExitEvent
        return cls(r.pid, r.ppid, r.tid, r.ptid, r.time, time, cpu, size, misc)
    if rtype == LOST:
        return ev.LostEvent(r.id, r.lost, spid, stid, time, cpu, size)
    if rtype == KSYMBOL:
        return ev.KsymbolEvent(r.addr, r.len, r.ksym_type, r.flags, r.name, time, cpu, size)
    if rtype == LOST_SAMPLES:
        return ev.LostSamplesEvent(r.lost, spid, stid, time, cpu, size)
    if rtype == SWITCH:
        return ev.SwitchEvent(bool(misc & MISC_SWITCH_OUT), -1, -1, spid, stid, time, cpu, False,
                              size)
    return ev.SwitchEvent(bool(misc & MISC_SWITCH_OUT), r.next_prev_pid, r.next_prev_tid, spid,
                          stid, time, cpu, True, size)
