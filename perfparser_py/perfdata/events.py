"""What PerfReader.events() yields: header-level events and decoded records (plain named tuples,
cheap to build on the hot path and comparable field by field in tests)."""

from __future__ import annotations

import struct
from collections import namedtuple

from ..tuples import named_tuple
from .attr import PerfEventAttr
from .features import HeaderFeatures


@named_tuple
class AttrEvent:
    attr: PerfEventAttr
    name: str | None
    ids: tuple[int, ...]


@named_tuple
class FeaturesEvent:
    features: HeaderFeatures


@named_tuple
class TracingDataEvent:
    data: bytes


@named_tuple
class DataStartEvent:
    data_offset: int
    data_size: int


@named_tuple
class ProgressEvent:
    fraction: float


@named_tuple
class SampleEvent:
    attr: PerfEventAttr
    pid: int
    tid: int
    time: int
    cpu: int
    ip: int
    addr: int
    id: int  # 0 when the sample carries no id
    stream_id: int
    period: int
    read_values: tuple[tuple[int, int], ...]  # (value, id); id 0 without PERF_FORMAT_ID
    callchain: tuple[int, ...]
    raw: memoryview | None
    branch_stack: tuple[tuple[int, int, int], ...]  # (from, to, flags)
    hw_idx: int | None
    regs_abi: int
    regs: bytes  # user registers in sample_regs_user's bit order: u64s, little-endian (packed_regs)
    stack: memoryview | None  # user stack copy, cut to dyn_size
    weight: int
    data_src: int
    transaction: int
    size: int
    misc: int


def packed_regs(values) -> bytes:
    """A SampleEvent's `regs` of register values. Packed, not a tuple of ints: a DWARF
    recording's fast decoder (fast.Stacked) takes them from the record as one bytes object
    and the compiled walk reads them as C words, ~0.3 us a sample less than making 17 int
    objects and reading them back (sqlite3-dwarf-30k)."""
    return struct.pack(f"<{len(values)}Q", *values)


@named_tuple
class MmapEvent:
    pid: int
    tid: int
    addr: int
    len: int
    pgoff: int
    filename: bytes
    prot: int
    flags: int
    maj: int
    min: int
    ino: int
    build_id: bytes | None
    time: int
    cpu: int
    sample_pid: int
    sample_tid: int
    size: int
    misc: int


@named_tuple
class CommEvent:
    pid: int
    tid: int
    comm: bytes
    time: int
    cpu: int
    size: int
    misc: int


@named_tuple
class ForkEvent:
    pid: int
    ppid: int
    tid: int
    ptid: int
    record_time: int
    time: int  # from the sample_id trailer
    cpu: int
    size: int
    misc: int


@named_tuple
class ExitEvent:
    pid: int
    ppid: int
    tid: int
    ptid: int
    record_time: int
    time: int
    cpu: int
    size: int
    misc: int


@named_tuple
class LostEvent:
    id: int
    lost: int
    pid: int
    tid: int
    time: int
    cpu: int
    size: int


# PERF_RECORD_LOST_SAMPLES: PERF_RECORD_LOST without its first field, the event id
LostSamplesEvent = namedtuple("LostSamplesEvent", LostEvent._fields[1:], module=__name__)


@named_tuple
class CallchainDeferredEvent:
    """PERF_RECORD_CALLCHAIN_DEFERRED: the user part of thread `tid`'s call chains that
    ended in CONTEXT_USER_DEFERRED and `cookie` (perf record --call-graph fp,defer)."""
    cookie: int
    ips: tuple[int, ...]  # CONTEXT_USER, then the user frames, leaf first
    pid: int
    tid: int
    time: int
    cpu: int
    size: int


@named_tuple
class SwitchEvent:
    switch_out: bool
    next_prev_pid: int  # -1 for the non-CPU-wide SWITCH record
    next_prev_tid: int
    pid: int
    tid: int
    time: int
    cpu: int
    cpu_wide: bool
    size: int


@named_tuple
class KsymbolEvent:
    """PERF_RECORD_KSYMBOL: kernel code announced by name (a BPF program's JIT image, an
    out-of-line trampoline) registered at [addr, addr + len), or unregistered."""

    addr: int
    len: int
    ksym_type: int  # 1 BPF, 2 OOL
    flags: int  # 1 unregister
    name: bytes
    time: int
    cpu: int
    size: int


@named_tuple
class TimeConvEvent:
    """PERF_RECORD_TIME_CONV: the recording's TSC -> perf time conversion."""

    time_shift: int
    time_mult: int
    time_zero: int
    time_cycles: int
    time_mask: int
    cap_user_time_zero: bool
    cap_user_time_short: bool


@named_tuple
class JitCodeEvent:
    """A function a JIT's jit-PID.dump maps (JIT_CODE_LOAD, or JIT_CODE_MOVE at its new
    address): [addr, addr + len) of process pid named `name`, with its source lines as
    (offset from addr, line, file) in address order."""

    pid: int
    addr: int
    len: int
    name: bytes
    dump: bytes  # the dump's path
    lines: tuple[tuple[int, int, bytes], ...]
    code_index: int
    time: int
    size: int


@named_tuple
class FinishedRoundEvent:
    pass


@named_tuple
class FinishedInitEvent:
    pass
