"""perf_event_attr: its reader (any size, both byte orders; the construct declaration is
declare.attr_struct), the PerfEventAttr named tuple with its precomputed sample decoding plan,
and generated event names (SEMANTICS §4.3).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections import namedtuple
from operator import itemgetter

from ..tuples import named_tuple
from . import layout as lay
from .abi import (
    ATTR_SIZE_VER0,
    FLAG_CONTEXT_SWITCH,
    FLAG_EXCLUDE_KERNEL,
    FLAG_EXCLUDE_USER,
    FLAG_FREQ,
    FLAG_INHERIT,
    FLAG_SAMPLE_ID_ALL,
    SAMPLE_BRANCH_HW_INDEX,
    TYPE_BREAKPOINT,
    TYPE_HARDWARE,
    TYPE_HW_CACHE,
    TYPE_RAW,
    TYPE_SOFTWARE,
    TYPE_TRACEPOINT,
)
from .errors import DATA_ERROR, PerfDataError


def reverse_bits64(value: int) -> int:
    """Big-endian files store the flags bitfield MSB first: bit i of the word is flag 63-i."""
    return int(f"{value:064b}"[::-1], 2)


# where each of layout.ATTR's fields ends: an attr has those that end within its size
_ATTR_AT = lay.offsets(lay.ATTR)
_ATTR_ENDS = tuple(_ATTR_AT[name] + struct.calcsize("<" + code) for name, code in lay.ATTR)


# the sample values fast.py's decoders take, by index into the unpacked prefix and trailer
PREFIX_NAMES = ("id", "ip", "pid", "tid", "time", "addr", "stream_id", "cpu", "period")
TRAILER_NAMES = ("pid", "tid", "time", "cpu")
TAIL_NAMES = tuple(row[0] for row in lay.SAMPLE_TAIL)


@named_tuple
class SamplePlan:
    """How to decode a SAMPLE of this attr and a sample_id trailer governed by it, made from
    layout.py's tables once per attr. (A named tuple: a frozen dataclass cost ~4 M
    instructions of every start to make.)"""

    prefix: struct.Struct
    prefix_index: tuple[int, ...]  # per PREFIX_NAMES
    parts: tuple[tuple, ...]  # the variable-size parts present, in order (PartPlan's fields)
    branch_hw_index: bool
    nregs_user: int
    tail: struct.Struct  # the fixed-size fields after the user stack (layout.SAMPLE_TAIL)
    tail_pick: itemgetter  # (weight, data_src, transaction) of tail's values + (0,)
    id_pos: int  # byte offset of the sample id for the peek (SEMANTICS §3.4), -1 if none
    trailer: struct.Struct
    trailer_index: tuple[int, ...]  # per TRAILER_NAMES


def make_plan(sample_type: int, read_format: int, branch_sample_type: int, regs_user: int,
              big_endian: bool) -> SamplePlan:
    endian = ">" if big_endian else "<"
    prefix, prefix_index = lay.unpacker(lay.SAMPLE_PREFIX, sample_type, endian, PREFIX_NAMES)
    trailer, trailer_index = lay.unpacker(lay.SAMPLE_ID, sample_type, endian, TRAILER_NAMES)
    tail, tail_index = lay.unpacker(lay.SAMPLE_TAIL, sample_type, endian, TAIL_NAMES)
    at = lay.offsets(lay.present(lay.SAMPLE_PREFIX, sample_type))
    given = {"read_format": read_format, "branch_sample_type": branch_sample_type,
             lay.NREGS_USER: regs_user.bit_count()}
    return SamplePlan(
        prefix=prefix,
        prefix_index=prefix_index,
        # plain tuples of PartPlan's fields: what fast.part unpacks fastest when compiled
        parts=tuple(tuple(lay.part_plan(name, lay.resolve(part, given), endian))
                    for name, part, _bit in lay.present(lay.SAMPLE_VARIABLE, sample_type)
                    if isinstance(part, lay.Part)),
        branch_hw_index=bool(branch_sample_type & SAMPLE_BRANCH_HW_INDEX),
        nregs_user=regs_user.bit_count(),
        tail=tail,
        tail_pick=itemgetter(*tail_index),
        id_pos=at.get("identifier", at.get("id", -1)),
        trailer=trailer,
        trailer_index=trailer_index,
    )


class _Flag:
    """A bit of perf_event_attr's flags bitfield, read as a bool."""

    __slots__ = ("bit",)

    def __init__(self, bit: int) -> None:
        self.bit = bit

    def __get__(self, attr, owner=None):
        return self if attr is None else bool(attr.flags & self.bit)


_ATTR_FIELDS = tuple(name for name, _code in lay.ATTR)


class PerfEventAttr(namedtuple("PerfEventAttr", (*_ATTR_FIELDS, "big_endian"),
                               defaults=(0,) * len(_ATTR_FIELDS) + (False,), module=__name__)):
    """A decoded perf_event_attr: layout.ATTR's fields, 0 when not given (as when the attr is
    too small to hold them), `flags` always in little-endian bit numbering; then big_endian;
    and, not a field, the sample plan. A named tuple: a frozen dataclass of these fields cost
    ~6 M instructions of every start to make."""

    freq = _Flag(FLAG_FREQ)
    sample_id_all = _Flag(FLAG_SAMPLE_ID_ALL)
    inherit = _Flag(FLAG_INHERIT)
    exclude_kernel = _Flag(FLAG_EXCLUDE_KERNEL)
    exclude_user = _Flag(FLAG_EXCLUDE_USER)
    context_switch = _Flag(FLAG_CONTEXT_SWITCH)

    def __init__(self, *_fields, **_named) -> None:  # the fields are the tuple's (__new__)
        self.plan = make_plan(self.sample_type, self.read_format, self.branch_sample_type,
                              self.sample_regs_user, self.big_endian)

    @classmethod
    def _make(cls, iterable):
        # namedtuple's makes the tuple alone (for _replace too): this one makes the plan
        return cls(*iterable)

    @property
    def sample_freq(self) -> int:
        return self.sample_period

    @property
    def precise_ip(self) -> int:
        return (self.flags >> 15) & 3

    def __reduce__(self):
        # plan holds struct.Struct objects, which do not pickle: rebuilt from the fields
        return PerfEventAttr, tuple(self)


def parse_attr(buf, offset: int, big_endian: bool) -> PerfEventAttr:
    """Decode the attr at buf[offset:]; its length is the returned attr's `size`."""
    if offset + 8 > len(buf):
        raise PerfDataError("Failed to read attributes: truncated", DATA_ERROR)
    size = struct.unpack_from(">I" if big_endian else "<I", buf, offset + 4)[0]
    if size < ATTR_SIZE_VER0 or offset + size > len(buf):
        raise PerfDataError(f"Failed to read attributes: bad attr size {size}", DATA_ERROR)
    nfields = bisect_right(_ATTR_ENDS, size)  # the fields missing read 0, those beyond skipped
    values = list(lay.layout_struct(lay.ATTR[:nfields], big_endian).unpack_from(buf, offset))
    if big_endian:
        flags = _ATTR_FIELDS.index("flags")
        values[flags] = reverse_bits64(values[flags])
    return PerfEventAttr(*values, *(0,) * (len(_ATTR_FIELDS) - nfields), big_endian)


# perf's own names of an attr without one (tools/perf/util/evsel.c, evsel__name)
_HW_NAMES = ("cycles", "instructions", "cache-references", "cache-misses", "branches",
             "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
             "ref-cycles")
_SW_NAMES = ("cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
             "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy")
_CACHE_NAMES = ("L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node")
_CACHE_OPS = (("load", "loads"), ("store", "stores"), ("prefetch", "prefetches"))
_CACHE_RESULTS = ("refs", "misses")
# the ops each cache supports (read, write, prefetch as bits 0-2); others are "invalid-cache"
_CACHE_VALID_OPS = (0b111, 0b101, 0b111, 0b111, 0b001, 0b001, 0b111)
_BP_ACCESS = ((1, "r"), (2, "w"), (4, "x"))  # HW_BREAKPOINT_R / _W / _X


def _hw_cache_name(config: int) -> str:
    cache_id, op, result = config & 0xFF, (config >> 8) & 0xFF, (config >> 16) & 0xFF
    if cache_id >= len(_CACHE_NAMES):
        return "unknown-ext-hardware-cache-type"
    if op >= len(_CACHE_OPS):
        return "unknown-ext-hardware-cache-op"
    if result >= len(_CACHE_RESULTS):
        return "unknown-ext-hardware-cache-result"
    if not _CACHE_VALID_OPS[cache_id] >> op & 1:
        return "invalid-cache"
    name = _CACHE_NAMES[cache_id]
    if result:
        return f"{name}-{_CACHE_OPS[op][0]}-{_CACHE_RESULTS[result]}"
    return f"{name}-{_CACHE_OPS[op][1]}"


def _modifiers(flags: int) -> str:
    """perf's modifier suffix (`:u`, `:ppp`, `:kH`...) for the exclude_* and precise_ip bits,
    by perf 6.1's rule: H/G are shown when exclude_host is set or exclude_guest differs from
    what perf sets by default (set when a k/u/h or p modifier was given)."""
    excl_user, excl_kernel, excl_hv = flags >> 4 & 1, flags >> 5 & 1, flags >> 6 & 1
    precise = flags >> 15 & 3
    excl_host, excl_guest = flags >> 19 & 1, flags >> 20 & 1
    mods = ""
    guest_default = 0
    if excl_kernel or excl_user or excl_hv:
        mods += "k" * (not excl_kernel) + "u" * (not excl_user) + "h" * (not excl_hv)
        guest_default = 1
    if precise:
        mods += "ppp"[:precise]
        guest_default = 1
    if excl_host or excl_guest == guest_default:
        mods += "H" * (not excl_host) + "G" * (not excl_guest)
    return ":" + mods if mods else ""


def generated_name(attr: PerfEventAttr, tracepoint: str | None = None) -> str:
    """The event name perf gives an attr that came without one (pipe mode without an
    EVENT_UPDATE name, attribute-section-only ids): perf's evsel__name. `tracepoint` is
    `system:name` from the tracing data's format of a tracepoint attr, when it is known."""
    t, config = attr.type, attr.config
    if t == TYPE_TRACEPOINT:
        return tracepoint or "unknown tracepoint"
    if t == TYPE_HARDWARE:
        name = _HW_NAMES[config] if config < len(_HW_NAMES) else "unknown-hardware"
    elif t == TYPE_SOFTWARE:
        name = _SW_NAMES[config] if config < len(_SW_NAMES) else "unknown-software"
    elif t == TYPE_HW_CACHE:
        name = _hw_cache_name(config)
    elif t == TYPE_RAW:
        name = f"raw 0x{config:x}"
    elif t == TYPE_BREAKPOINT:
        # bp_addr is config1 in the ABI's union
        name = f"mem:0x{attr.config1:x}:" + "".join(c for bit, c in _BP_ACCESS
                                                    if attr.bp_type & bit)
    else:
        return f"unknown attr type: {t}"
    return name + _modifiers(attr.flags)
