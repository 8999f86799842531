"""What PerfReader.events() yields: header-level events and decoded records (plain NamedTuples,
cheap to build on the hot path and comparable field by field in tests)."""

from __future__ import annotations

from typing import NamedTuple

from .attr import PerfEventAttr
from .features import Features


class AttrEvent(NamedTuple):
    attr: PerfEventAttr
    name: str | None
    ids: tuple[int, ...]


class FeaturesEvent(NamedTuple):
    features: Features


class TracingDataEvent(NamedTuple):
    data: bytes


class DataStartEvent(NamedTuple):
    data_offset: int
    data_size: int


class ProgressEvent(NamedTuple):
    fraction: float


class SampleEvent(NamedTuple):
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
    regs: tuple[int, ...]
    stack: memoryview | None  # user stack copy, cut to dyn_size
    weight: int
    data_src: int
    transaction: int
    size: int
    misc: int


class MmapEvent(NamedTuple):
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


class CommEvent(NamedTuple):
    pid: int
    tid: int
    comm: bytes
    time: int
    cpu: int
    size: int
    misc: int


class ForkEvent(NamedTuple):
    pid: int
    ppid: int
    tid: int
    ptid: int
    record_time: int
    time: int  # from the sample_id trailer
    cpu: int
    size: int
    misc: int


class ExitEvent(NamedTuple):
    pid: int
    ppid: int
    tid: int
    ptid: int
    record_time: int
    time: int
    cpu: int
    size: int
    misc: int


class LostEvent(NamedTuple):
    id: int
    lost: int
    pid: int
    tid: int
    time: int
    cpu: int
    size: int


class LostSamplesEvent(NamedTuple):
    lost: int
    pid: int
    tid: int
    time: int
    cpu: int
    size: int


class SwitchEvent(NamedTuple):
    switch_out: bool
    next_prev_pid: int  # -1 for the non-CPU-wide SWITCH record
    next_prev_tid: int
    pid: int
    tid: int
    time: int
    cpu: int
    cpu_wide: bool
    size: int


class FinishedRoundEvent(NamedTuple):
    pass


class FinishedInitEvent(NamedTuple):
    pass
