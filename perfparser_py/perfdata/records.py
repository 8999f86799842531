"""Record grammar (SEMANTICS §3): the construct declarations of the record bodies we decode,
of the sample and of the sample_id trailer, generated from layout.py's tables (declare.py),
and the construct-based decoding into events.

The reader uses these declarations for the rare records (importing this module when it meets
the first); fast.py hand-decodes the hot ones and
tests/perfdata checks both agree on every corpus file. The tests build their records with them.
"""

from __future__ import annotations

from functools import cache

from . import events as ev
from . import layout as lay
from .abi import (
    RECORD_CALLCHAIN_DEFERRED,
    PROT_EXEC,
    PROT_READ,
    RECORD_COMM,
    RECORD_EXIT,
    RECORD_FINISHED_INIT,
    RECORD_FINISHED_ROUND,
    RECORD_FORK,
    RECORD_KSYMBOL,
    RECORD_LOST,
    RECORD_LOST_SAMPLES,
    RECORD_MISC_MMAP_BUILD_ID,
    RECORD_MISC_MMAP_DATA,
    RECORD_MISC_SWITCH_OUT,
    RECORD_MMAP,
    RECORD_MMAP2,
    RECORD_SAMPLE,
    RECORD_SWITCH,
    RECORD_TIME_CONV,
    SAMPLE_BRANCH_HW_INDEX,
)
from .attr import PerfEventAttr
from .declare import Construct, Default, If, Optional, Struct, declare, declare_part
from .ints import ints


@cache
def body_struct(rtype: int, big_endian: bool) -> Construct:
    """The body of a record of layout.BODIES (after the 8-byte header, before any sample_id
    trailer)."""
    return Struct(*declare(lay.BODIES[rtype], ints(big_endian)))


@cache
def mmap2_struct(big_endian: bool, with_build_id: bool) -> Construct:
    return Struct(*declare(lay.MMAP2_BUILD_ID if with_build_id else lay.MMAP2,
                               ints(big_endian)))


@cache
def time_conv_struct(big_endian: bool) -> Construct:
    """TIME_CONV (perf's own record: no sample_id trailer), with or without perf 5.10's part."""
    i = ints(big_endian)
    return Struct(*declare(lay.TIME_CONV, i),
                  "extension" / Optional(Struct(*declare(lay.TIME_CONV_EXT, i))))


@cache
def sample_id_struct(sample_type: int, big_endian: bool) -> Construct:
    """The sample_id trailer of non-sample records (global attr has sample_id_all)."""
    return Struct(*declare(lay.SAMPLE_ID, ints(big_endian), sample_type))


@cache
def sample_struct(sample_type: int, read_format: int, nregs_user: int, hw_index: bool,
                  big_endian: bool) -> Construct:
    """PERF_RECORD_SAMPLE body for one attr (fields present per sample_type, SEMANTICS §3.4)."""
    i = ints(big_endian)
    given = {"read_format": read_format, lay.NREGS_USER: nregs_user,
             "branch_sample_type": SAMPLE_BRANCH_HW_INDEX if hw_index else 0}
    variable = []
    for name, code, bit in lay.SAMPLE_VARIABLE:
        if isinstance(code, lay.Part):
            # None by default when built: such a part must be given only when it is there
            part = declare_part(code, given, i)
            variable.append(name / Default(If(sample_type & bit, part), None))
        else:
            variable.extend(declare([(name, code, bit)], i, sample_type))
    return Struct(*declare(lay.SAMPLE_PREFIX, i, sample_type), *variable)


def sample_struct_of(attr: PerfEventAttr) -> Construct:
    plan = attr.plan
    return sample_struct(attr.sample_type, attr.read_format, plan.nregs_user,
                         plan.branch_hw_index, attr.big_endian)


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
    s = sample_struct_of(attr).parse(body)
    read_values: tuple = ()
    if s.read is not None:
        read_values = tuple((e.value, _z(e.get("id"))) for e in s.read.get("cntr", (s.read,)))
    stack = None
    if s.stack_user is not None and s.stack_user.size:
        stack = memoryview(s.stack_user.data)[:min(s.stack_user.dyn_size, s.stack_user.size)]
    bs = s.branch_stack
    return ev.SampleEvent(
        attr=attr, pid=_z(s.pid), tid=_z(s.tid), time=_z(s.time), cpu=_z(s.cpu), ip=_z(s.ip),
        addr=_z(s.addr), id=_z(s.id if s.id is not None else s.identifier),
        stream_id=_z(s.stream_id), period=_z(s.period), read_values=read_values,
        callchain=tuple(s.callchain or ()),
        raw=memoryview(s.raw) if s.raw is not None else None,
        branch_stack=tuple((e["from"], e.to, e.flags) for e in bs.lbr) if bs else (),
        hw_idx=bs.get("hw_idx") if bs else None,
        regs_abi=s.regs_user.abi if s.regs_user else 0,
        regs=ev.packed_regs(s.regs_user.regs or ()) if s.regs_user else b"",
        stack=stack, weight=_z(s.weight), data_src=_z(s.data_src),
        transaction=_z(s.transaction), size=size, misc=misc)


def decode_record(rtype: int, misc: int, size: int, body: bytes, sample_attr: PerfEventAttr | None,
                  global_attr: PerfEventAttr | None) -> object | None:
    """Decode one record body with the construct declarations; None for records that yield
    nothing. `sample_attr` is the attr chosen for a SAMPLE (SEMANTICS §3.4)."""
    big_endian = global_attr.big_endian if global_attr is not None else False
    if rtype == RECORD_SAMPLE:
        return _sample(sample_attr, body, size, misc) if sample_attr is not None else None
    if rtype == RECORD_FINISHED_ROUND:
        return ev.FinishedRoundEvent()
    if rtype == RECORD_FINISHED_INIT:
        return ev.FinishedInitEvent()
    if rtype == RECORD_TIME_CONV:
        r = time_conv_struct(big_endian).parse(body)
        x = r.extension
        return ev.TimeConvEvent(r.time_shift, r.time_mult, r.time_zero,
                                x.time_cycles if x else 0, x.time_mask if x else 0,
                                bool(x and x.cap_user_time_zero),
                                bool(x and x.cap_user_time_short))
    if rtype != RECORD_MMAP2 and rtype not in lay.BODIES:
        return None
    rest, (spid, stid, time, cpu) = _trailer(body, global_attr)
    if rtype == RECORD_MMAP2:
        with_build_id = bool(misc & RECORD_MISC_MMAP_BUILD_ID)
        r = mmap2_struct(big_endian, with_build_id).parse(rest)
        maj, mino, ino, bid = 0, 0, 0, None
        if with_build_id:
            bid = r.build_id[:min(r.build_id_size, len(r.build_id))]
        else:
            maj, mino, ino = r.maj, r.min, r.ino
        return ev.MmapEvent(r.pid, r.tid, r.addr, r.len, r.pgoff, r.filename, r.prot, r.flags,
                            maj, mino, ino, bid, time, cpu, spid, stid, size, misc)
    r = body_struct(rtype, big_endian).parse(rest)
    if rtype == RECORD_MMAP:
        prot = PROT_READ if misc & RECORD_MISC_MMAP_DATA else PROT_EXEC
        return ev.MmapEvent(r.pid, r.tid, r.addr, r.len, r.pgoff, r.filename, prot, 0, 0, 0, 0,
                            None, time, cpu, spid, stid, size, misc)
    if rtype == RECORD_COMM:
        return ev.CommEvent(r.pid, r.tid, r.comm, time, cpu, size, misc)
    if rtype in (RECORD_FORK, RECORD_EXIT):
        cls = ev.ForkEvent if rtype == RECORD_FORK else ev.ExitEvent
        return cls(r.pid, r.ppid, r.tid, r.ptid, r.time, time, cpu, size, misc)
    if rtype == RECORD_LOST:
        return ev.LostEvent(r.id, r.lost, spid, stid, time, cpu, size)
    if rtype == RECORD_KSYMBOL:
        return ev.KsymbolEvent(r.addr, r.len, r.ksym_type, r.flags, r.name, time, cpu, size)
    if rtype == RECORD_LOST_SAMPLES:
        return ev.LostSamplesEvent(r.lost, spid, stid, time, cpu, size)
    if rtype == RECORD_CALLCHAIN_DEFERRED:
        return ev.CallchainDeferredEvent(r.cookie, tuple(r.ips), spid, stid, time, cpu, size)
    cpu_wide = rtype != RECORD_SWITCH
    return ev.SwitchEvent(bool(misc & RECORD_MISC_SWITCH_OUT),
                          r.next_prev_pid if cpu_wide else -1,
                          r.next_prev_tid if cpu_wide else -1, spid, stid, time, cpu, cpu_wide,
                          size)
