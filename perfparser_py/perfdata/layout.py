"""The perf.data grammar as data: one field table per layout, in the kernel's order with the
kernel's names (linux/perf_event.h, perf's tools/lib/perf/include/perf/event.h).

Everything that reads or writes these layouts is generated from the tables, once per byte
order or per attr, never per record: the construct declarations (declare.py, used by
records.py, by the fallbacks of attr.py and features.py, and by the tests to build bytes), and
the struct formats and offsets of the hand decoders (`struct_format`, `layout_struct`,
`offsets`, `unpacker`, used by header.py, attr.py, features.py, fast.py and attr.SamplePlan).

A row is (name, code) or (name, code, condition). code is a struct format code ("Q" u64, "I"
u32, "i" s32, "H" u16, "B" u8, "Ns" N bytes), CSTRING, Items (an array), or (in SAMPLE_VARIABLE)
a Part (a table of its own); in the feature sections also STRING, STRINGS, Fill and Repeated.
condition: an int bit, the field is there only when the table's
flags (sample_type, or the Part's attr field) have it; or an earlier row's name, the field is
there only when that row's value is not 0. A row named in RESERVED is skipped on parsing and
written as zeros. Adding a sample field is adding its row (and, for a new Part, its event
fields in fast._EVENT_OF and records._sample).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from functools import cache

from ..tuples import named_tuple
from .abi import (
    FEAT_ARCH,
    FEAT_BUILD_ID,
    FEAT_CMDLINE,
    FEAT_COMPRESSED,
    FEAT_CPU_TOPOLOGY,
    FEAT_CPUDESC,
    FEAT_CPUID,
    FEAT_DIR_FORMAT,
    FEAT_EVENT_DESC,
    FEAT_GROUP_DESC,
    FEAT_HOSTNAME,
    FEAT_NRCPUS,
    FEAT_NUMA_TOPOLOGY,
    FEAT_OSRELEASE,
    FEAT_PMU_MAPPINGS,
    FEAT_TOTAL_MEM,
    FEAT_VERSION,
    FORMAT_GROUP,
    FORMAT_ID,
    FORMAT_LOST,
    FORMAT_TOTAL_TIME_ENABLED,
    FORMAT_TOTAL_TIME_RUNNING,
    RECORD_CALLCHAIN_DEFERRED,
    RECORD_COMM,
    RECORD_EXIT,
    RECORD_FORK,
    RECORD_KSYMBOL,
    RECORD_LOST,
    RECORD_LOST_SAMPLES,
    RECORD_MMAP,
    RECORD_SWITCH,
    RECORD_SWITCH_CPU_WIDE,
    SAMPLE_ADDR,
    SAMPLE_BRANCH_HW_INDEX,
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
    SAMPLE_WEIGHT_STRUCT,
)

CSTRING = "cstring"  # a NUL-terminated name, NUL-padded to 8 bytes, up to the end of the body
RESERVED = frozenset(("res", "__reserved_1", "__reserved_2", "reserved"))

Row = tuple  # (name, code) or (name, code, condition)

NREGS_USER = "nregs_user"  # a count the attr gives: the bits set in its sample_regs_user


@named_tuple
class Items:
    """A row's code for `count` items back to back. item: a struct code, "s" (bytes), or a
    table of rows; count: an earlier row's name, or NREGS_USER."""

    item: str | tuple
    count: str | int  # an int once resolved


@named_tuple
class Part:
    """A variable-size part of a sample: its rows, their bits testing the attr field `flags`;
    `other` (bit, rows): those rows instead when that field has the bit."""

    rows: tuple[Row, ...]
    flags: str = ""
    other: tuple[int, tuple[Row, ...]] = (0, ())


# ---------------------------------------------------------------- PERF_RECORD_SAMPLE

# the fixed-size head of a sample, each field there when sample_type has its bit
SAMPLE_PREFIX: tuple[Row, ...] = (
    ("identifier", "Q", SAMPLE_IDENTIFIER),
    ("ip", "Q", SAMPLE_IP),
    ("pid", "I", SAMPLE_TID),
    ("tid", "I", SAMPLE_TID),
    ("time", "Q", SAMPLE_TIME),
    ("addr", "Q", SAMPLE_ADDR),
    ("id", "Q", SAMPLE_ID),
    ("stream_id", "Q", SAMPLE_STREAM_ID),
    ("cpu", "I", SAMPLE_CPU),
    ("res", "I", SAMPLE_CPU),
    ("period", "Q", SAMPLE_PERIOD),
)

# read_format's layouts (struct read_format): one counter, or a group of them
READ_ONE: tuple[Row, ...] = (
    ("value", "Q"),
    ("time_enabled", "Q", FORMAT_TOTAL_TIME_ENABLED),
    ("time_running", "Q", FORMAT_TOTAL_TIME_RUNNING),
    ("id", "Q", FORMAT_ID),
    ("lost", "Q", FORMAT_LOST),
)
READ_CNTR: tuple[Row, ...] = (READ_ONE[0], *READ_ONE[3:])
READ_GROUP: tuple[Row, ...] = (("nr", "Q"), *READ_ONE[1:3], ("cntr", Items(READ_CNTR, "nr")))

BRANCH_ENTRY: tuple[Row, ...] = (("from", "Q"), ("to", "Q"), ("flags", "Q"))  # perf_branch_entry

# the variable-size parts of a sample (perf_event.h's PERF_RECORD_SAMPLE comment)
READ = Part(READ_ONE, "read_format", (FORMAT_GROUP, READ_GROUP))
CALLCHAIN = Part((("nr", "Q"), ("ips", Items("Q", "nr"))))
RAW = Part((("size", "I"), ("data", Items("s", "size"))))
BRANCH_STACK = Part((
    ("nr", "Q"),
    ("hw_idx", "Q", SAMPLE_BRANCH_HW_INDEX),
    ("lbr", Items(BRANCH_ENTRY, "nr")),
), "branch_sample_type")
REGS_USER = Part((("abi", "Q"), ("regs", Items("Q", NREGS_USER), "abi")))
STACK_USER = Part((("size", "Q"), ("data", Items("s", "size")), ("dyn_size", "Q", "size")))

# what follows the prefix
SAMPLE_VARIABLE: tuple[Row, ...] = (
    ("read", READ, SAMPLE_READ),
    ("callchain", CALLCHAIN, SAMPLE_CALLCHAIN),
    ("raw", RAW, SAMPLE_RAW),
    ("branch_stack", BRANCH_STACK, SAMPLE_BRANCH_STACK),
    ("regs_user", REGS_USER, SAMPLE_REGS_USER),
    ("stack_user", STACK_USER, SAMPLE_STACK_USER),
    ("weight", "Q", SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT),
    ("data_src", "Q", SAMPLE_DATA_SRC),
    ("transaction", "Q", SAMPLE_TRANSACTION),
)


def _is_fixed(code) -> bool:
    return isinstance(code, str) and (code in _SIZED or code[:-1].isdigit() and code[-1] == "s")


_SIZED = frozenset("QqIiHhB")

# the fixed-size fields at the end of a sample (weight, data source, transaction)
SAMPLE_TAIL = tuple(row for row in SAMPLE_VARIABLE if _is_fixed(row[1]))
assert SAMPLE_VARIABLE[-len(SAMPLE_TAIL):] == SAMPLE_TAIL, "a sample's fixed fields come last"

# struct sample_id: the trailer of the other records when the attr has sample_id_all
_BY_NAME = {row[0]: row for row in SAMPLE_PREFIX}
SAMPLE_ID: tuple[Row, ...] = tuple(_BY_NAME[name] for name in (
    "pid", "tid", "time", "id", "stream_id", "cpu", "res", "identifier"))

# ---------------------------------------------------------------- the other records' bodies
# (after the 8-byte header, before the sample_id trailer). pid and tid are read signed: the
# kernel's are -1 in records of no task.

MMAP: tuple[Row, ...] = (
    ("pid", "i"), ("tid", "i"), ("addr", "Q"), ("len", "Q"), ("pgoff", "Q"),
    ("filename", CSTRING),
)
# MMAP2's union: the device and inode, or (RECORD_MISC_MMAP_BUILD_ID) the build id
_MMAP2_TAIL: tuple[Row, ...] = (("prot", "I"), ("flags", "I"), ("filename", CSTRING))
MMAP2: tuple[Row, ...] = (
    *MMAP[:5],
    ("maj", "I"), ("min", "I"), ("ino", "Q"), ("ino_generation", "Q"),
    *_MMAP2_TAIL,
)
MMAP2_BUILD_ID: tuple[Row, ...] = (
    *MMAP[:5],
    ("build_id_size", "B"), ("__reserved_1", "B"), ("__reserved_2", "H"), ("build_id", "20s"),
    *_MMAP2_TAIL,
)
COMM: tuple[Row, ...] = (("pid", "i"), ("tid", "i"), ("comm", CSTRING))
TASK: tuple[Row, ...] = (  # FORK and EXIT
    ("pid", "i"), ("ppid", "i"), ("tid", "i"), ("ptid", "i"), ("time", "Q"),
)
LOST: tuple[Row, ...] = (("id", "Q"), ("lost", "Q"))
LOST_SAMPLES: tuple[Row, ...] = (("lost", "Q"),)
SWITCH: tuple[Row, ...] = ()
SWITCH_CPU_WIDE: tuple[Row, ...] = (("next_prev_pid", "I"), ("next_prev_tid", "I"))
KSYMBOL: tuple[Row, ...] = (
    ("addr", "Q"), ("len", "I"), ("ksym_type", "H"), ("flags", "H"), ("name", CSTRING),
)
# the user call chain of the samples whose chain ends in CONTEXT_USER_DEFERRED and this cookie
CALLCHAIN_DEFERRED: tuple[Row, ...] = (("cookie", "Q"), ("nr", "Q"), ("ips", Items("Q", "nr")))
TIME_CONV: tuple[Row, ...] = (("time_shift", "Q"), ("time_mult", "Q"), ("time_zero", "Q"))
# perf >= 5.10 appends these (cap_user_time_short, for TSCs that wrap)
TIME_CONV_EXT: tuple[Row, ...] = (
    ("time_cycles", "Q"), ("time_mask", "Q"), ("cap_user_time_zero", "B"),
    ("cap_user_time_short", "B"), ("reserved", "6s"),
)

BODIES: dict[int, tuple[Row, ...]] = {
    RECORD_MMAP: MMAP, RECORD_COMM: COMM, RECORD_FORK: TASK, RECORD_EXIT: TASK,
    RECORD_LOST: LOST, RECORD_LOST_SAMPLES: LOST_SAMPLES, RECORD_SWITCH: SWITCH,
    RECORD_SWITCH_CPU_WIDE: SWITCH_CPU_WIDE, RECORD_KSYMBOL: KSYMBOL,
    RECORD_CALLCHAIN_DEFERRED: CALLCHAIN_DEFERRED,
}

# ---------------------------------------------------------------- perf_event_attr

# The first ATTR_SIZE_VER0 bytes are in every attr; each later field is there when the attr's
# size reaches past it. Fields after sample_max_stack are skipped.
ATTR: tuple[Row, ...] = (
    ("type", "I"), ("size", "I"), ("config", "Q"),
    ("sample_period", "Q"),  # = sample_freq when freq
    ("sample_type", "Q"), ("read_format", "Q"),
    ("flags", "Q"),  # the bitfield (disabled, inherit, ...)
    ("wakeup_events", "I"), ("bp_type", "I"),
    ("config1", "Q"),  # = bp_addr
    ("config2", "Q"), ("branch_sample_type", "Q"), ("sample_regs_user", "Q"),
    ("sample_stack_user", "I"), ("clockid", "i"), ("sample_regs_intr", "Q"),
    ("aux_watermark", "I"), ("sample_max_stack", "H"),
)

# ---------------------------------------------------------------- file header

SECTION: tuple[Row, ...] = (("offset", "Q"), ("size", "Q"))  # perf_file_section
PIPE_HEADER: tuple[Row, ...] = (("magic", "8s"), ("size", "Q"))
# perf_file_header: its three sections' fields as <section>_offset, <section>_size, and the
# 256 feature bits as four words
FILE_HEADER: tuple[Row, ...] = (
    *PIPE_HEADER, ("attr_size", "Q"),
    *((f"{section}_{name}", code) for section in ("attrs", "data", "event_types")
      for name, code in SECTION),
    *((f"features{n}", "Q") for n in range(4)),
)

# ---------------------------------------------------------------- feature sections
# (perf's header.c write_* functions). Each is read from the start of its section; what
# follows the rows is not looked at. Each value fills the HeaderFeatures field of its name
# (features.py renames a few). A feature of one row is that row's construct alone, not a
# Struct of it: construct's error messages name the path of the field they fail in.

STRING = "string"  # u32 length, then that many bytes (do_write_string): NUL padding removed
STRINGS = "strings"  # a u32 count, then that many STRINGs
PREFIXED = "<a u32 before the items>"  # an Items' count that comes just before them


@named_tuple
class Fill:
    """A row's code for the bytes up to the end of an item whose size (in bytes, from the
    item's start) is the earlier row `size`; NUL padding removed."""

    size: str


@named_tuple
class Repeated:
    """A row's code for items (a table) back to back up to the first that does not fit."""

    item: tuple


# In the feature sections an Items' count (PREFIXED, or a row before it, in its table or the
# one around it) must fit the bytes left at the item's `least` size: a count of 2^32-1 in a small
# section fails at once instead of parsing to the end of it.
BUILD_ID_ENTRY: tuple[Row, ...] = (  # perf_record_header_build_id
    ("type", "I"), ("misc", "H"), ("size", "H"), ("pid", "i"), ("build_id", "20s"),
    ("pad", "4s"), ("filename", Fill("size")),
)
EVENT_DESC_ENTRY: tuple[Row, ...] = (
    ("attr", Items("s", "attr_size")), ("nr_ids", "I"), ("name", STRING),
    ("ids", Items("Q", "nr_ids")),
)
NUMA_NODE: tuple[Row, ...] = (("node", "I"), ("mem_total", "Q"), ("mem_free", "Q"),
                              ("cpus", STRING))
PMU_MAPPING: tuple[Row, ...] = (("type", "I"), ("name", STRING))
GROUP_DESC: tuple[Row, ...] = (("name", STRING), ("leader_idx", "I"), ("nr_members", "I"))

FEATURES: dict[int, tuple[Row, ...]] = {
    FEAT_BUILD_ID: (("build_ids", Repeated(BUILD_ID_ENTRY)),),
    FEAT_HOSTNAME: (("hostname", STRING),),
    FEAT_OSRELEASE: (("osrelease", STRING),),
    FEAT_VERSION: (("version", STRING),),
    FEAT_ARCH: (("arch", STRING),),
    FEAT_NRCPUS: (("online", "I"), ("avail", "I")),
    FEAT_CPUDESC: (("cpudesc", STRING),),
    FEAT_CPUID: (("cpuid", STRING),),
    FEAT_TOTAL_MEM: (("total_mem", "Q"),),
    FEAT_CMDLINE: (("cmdline", STRINGS),),
    FEAT_EVENT_DESC: (("nr", "I"), ("attr_size", "I"), ("events", Items(EVENT_DESC_ENTRY, "nr"))),
    FEAT_CPU_TOPOLOGY: (("cores", STRINGS), ("threads", STRINGS)),
    FEAT_NUMA_TOPOLOGY: (("numa_nodes", Items(NUMA_NODE, PREFIXED)),),
    FEAT_PMU_MAPPINGS: (("pmu_mappings", Items(PMU_MAPPING, PREFIXED)),),
    FEAT_GROUP_DESC: (("group_descs", Items(GROUP_DESC, PREFIXED)),),
    FEAT_DIR_FORMAT: (("dir_format", "Q"),),
    FEAT_COMPRESSED: (("version", "I"), ("type", "I"), ("level", "I"), ("ratio", "I"),
                      ("mmap_len", "I")),
}


# ---------------------------------------------------------------- generated: struct


def present(rows: Iterable[Row], flags: int) -> tuple[Row, ...]:
    """The rows there for these sample_type (or read_format) bits."""
    return tuple(row for row in rows if len(row) < 3 or flags & row[2])


def struct_format(rows: Iterable[Row]) -> str:
    """The struct codes of the fixed-size rows before the first variable-size one."""
    codes = ""
    for row in rows:
        if not _is_fixed(row[1]):
            break
        codes += row[1]
    return codes


@cache
def layout_struct(rows: tuple[Row, ...], big_endian: bool) -> struct.Struct:
    """The struct.Struct of a table's fixed-size rows (struct_format) in this byte order."""
    return struct.Struct((">" if big_endian else "<") + struct_format(rows))


def offsets(rows: Iterable[Row]) -> dict[str, int]:
    """Each row's byte offset, up to and including the first variable-size one."""
    where, at = {}, 0
    for row in rows:
        where.setdefault(row[0], at)
        if not _is_fixed(row[1]):
            break
        at += struct.calcsize("<" + row[1])
    return where


def unpacker(rows: Iterable[Row], flags: int, endian: str,
             wanted: tuple[str, ...]) -> tuple[struct.Struct, tuple[int, ...]]:
    """struct.Struct of the rows present for `flags`, and for each wanted name the index of its
    value in the unpacked tuple, -1 when absent. "id" falls back to "identifier" (a sample's
    id is in either)."""
    rows = present(rows, flags)
    index = {row[0]: n for n, row in enumerate(rows)}
    if "id" not in index and "identifier" in index:
        index["id"] = index["identifier"]
    return (struct.Struct(endian + struct_format(rows)),
            tuple(index.get(name, -1) for name in wanted))


def resolve(part: Part, attr_fields: Mapping[str, int]) -> tuple[Row, ...]:
    """A Part's rows for one attr: those its flags select, without their bits (nested tables
    too), a given count as its number. attr_fields: the attr's fields by name, and NREGS_USER."""
    flags = attr_fields[part.flags] if part.flags else 0
    bit, other = part.other
    return _resolve(other if flags & bit else part.rows, flags, attr_fields)


def _resolve(rows: tuple[Row, ...], flags: int, given: Mapping[str, int]) -> tuple[Row, ...]:
    out: list[Row] = []
    for name, code, *condition in rows:
        if condition and isinstance(condition[0], int):
            if not flags & condition[0]:
                continue
            condition = []
        if isinstance(code, Items):
            item = code.item if isinstance(code.item, str) else _resolve(code.item, flags, given)
            earlier = any(row[0] == code.count for row in out)
            code = Items(item, code.count if earlier else given[code.count])
        out.append((name, code, *condition))
    return tuple(out)


@named_tuple
class PartPlan:
    """How fast.py reads a resolved Part: a fixed head (`unpack`, `size` bytes), then items
    (each `words` u64s; 0: bytes; -1: none) of a count read in the head (index `count`) or
    `given`, there when head value `when` is not 0 (-1: always), then fixed fields (`after`,
    `after_size` bytes) there when head value `after_when` is not 0 (-1: always). head_at /
    item_at: where each named value is in the head / in an item."""

    name: str
    unpack: object  # struct.Struct.unpack_from
    size: int
    count: int
    given: int
    words: int
    when: int
    after: object  # struct.Struct.unpack_from
    after_size: int
    after_when: int
    head_at: dict[str, int]
    item_at: dict[str, int]


def least(code) -> int:
    """The fewest bytes an item of this code (or table) takes in a feature section."""
    if isinstance(code, tuple) and not isinstance(code, (Items, Fill, Repeated)):
        return sum(least(row[1]) for row in code)
    if code in (STRING, STRINGS):
        return 4  # the length or count
    return struct.calcsize("<" + code) if _is_fixed(code) else 0


def part_plan(name: str, rows: tuple[Row, ...], endian: str) -> PartPlan:
    """The PartPlan of resolved rows: fixed rows, at most one Items row, fixed rows that
    depend on one head value (ValueError for another shape)."""
    n = next((k for k, row in enumerate(rows) if not _is_fixed(row[1])), len(rows))
    head, rest = rows[:n], rows[n:]
    head_at = {row[0]: k for k, row in enumerate(head)}
    count, given, words, when, item_at = -1, 0, -1, -1, {}
    if rest:
        code = rest[0][1]
        if not isinstance(code, Items):
            raise ValueError(f"{name}: a part fast.py cannot read")
        if isinstance(code.count, int):
            given = code.count
        else:
            count = head_at[code.count]
        when = head_at[rest[0][2]] if len(rest[0]) > 2 else -1
        table = ((name, code.item),) if isinstance(code.item, str) else code.item
        if code.item == "s":
            words = 0
        elif struct_format(table) == "Q" * len(table):
            words, item_at = len(table), {row[0]: k for k, row in enumerate(table)}
        else:
            raise ValueError(f"{name}: items of other than u64 words")
        rest = rest[1:]
    whens = {row[2] if len(row) > 2 else None for row in rest}
    if any(len(row) > 2 for row in head) or len(whens) > 1 or \
            not all(_is_fixed(row[1]) for row in rest):
        raise ValueError(f"{name}: a part fast.py cannot read")
    after_when = whens.pop() if whens else None
    head_st, after_st = (struct.Struct(endian + struct_format(r)) for r in (head, rest))
    return PartPlan(name, head_st.unpack_from, head_st.size, count, given, words, when,
                    after_st.unpack_from, after_st.size,
                    -1 if after_when is None else head_at[after_when], head_at, item_at)
