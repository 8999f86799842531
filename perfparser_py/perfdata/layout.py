"""The perf.data grammar as data: one field table per layout, in the kernel's order with the
kernel's names (linux/perf_event.h, perf's tools/lib/perf/include/perf/event.h).

Everything that reads or writes these layouts is generated from the tables, once per byte
order or per attr, never per record: the construct declarations (`declare`, used by records.py
and attr.py, and by the tests to build bytes), and the struct formats and offsets of the hand
decoders (`struct_format`, `offsets`, `unpacker`, used by fast.py and attr.SamplePlan).

A row is (name, code) or (name, code, condition). code is a struct format code ("Q" u64, "I"
u32, "i" s32, "H" u16, "B" u8, "Ns" N bytes), CSTRING, Items (an array), or (in SAMPLE_VARIABLE)
a Part (a table of its own). condition: an int bit, the field is there only when the table's
flags (sample_type, or the Part's attr field) have it; or an earlier row's name, the field is
there only when that row's value is not 0. A row named in RESERVED is skipped on parsing and
written as zeros. Adding a sample field is adding its row (and, for a new Part, its event
fields in fast._EVENT_OF and records._sample).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from construct import (
    Bytes,
    Construct,
    Default,
    ExprAdapter,
    GreedyBytes,
    If,
    Padding,
    Prefixed,
    PrefixedArray,
    Struct,
    this,
)

from ..tuples import named_tuple
from .abi import (
    FORMAT_GROUP,
    FORMAT_ID,
    FORMAT_LOST,
    FORMAT_TOTAL_TIME_ENABLED,
    FORMAT_TOTAL_TIME_RUNNING,
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
    ("weight", "Q", SAMPLE_WEIGHT),
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


# ---------------------------------------------------------------- generated: construct


def _pad8(name: bytes) -> bytes:
    name += b"\0"
    return name + b"\0" * (-len(name) % 8)


def cstring(con: Construct = GreedyBytes) -> Construct:
    """Bytes up to the first NUL; built NUL-padded to 8 bytes, as perf writes names."""
    return ExprAdapter(con, lambda obj, _: obj.split(b"\0", 1)[0], lambda obj, _: _pad8(obj))


def field(code: str, i) -> Construct:
    """The construct of one struct code (i: ints.ints of the byte order), or of CSTRING."""
    if code == CSTRING:
        return cstring()
    if code.endswith("s"):
        return Bytes(int(code[:-1]))
    return {"Q": i.u64, "q": i.s64, "I": i.u32, "i": i.s32, "H": i.u16, "B": i.u8}[code]


def items(code: Items, i) -> Construct:
    """The construct of an Items code (i: ints.ints of the byte order)."""
    count = code.count if isinstance(code.count, int) else this[code.count]
    return Bytes(count) if code.item == "s" else _item(code.item, i)[count]


def _item(item: str | tuple[Row, ...], i) -> Construct:
    return field(item, i) if isinstance(item, str) else Struct(*declare(item, i))


def declare(rows: Iterable[Row], i, flags: int = 0) -> list[Construct]:
    """The construct subcons of `rows`: a row with a bit is If(flags has it), None when absent
    and 0 by default when built; a row that needs an earlier row not 0 is If(that), None by
    default; a reserved row is padding."""
    subcons = []
    for row in rows:
        name, code = row[0], row[1]
        if name in RESERVED:
            con = Padding(struct.calcsize("<" + code))
        else:
            con = items(code, i) if isinstance(code, Items) else field(code, i)
        if len(row) > 2 and isinstance(row[2], str):
            con = Default(If(this[row[2]] != 0, con), None)
        elif len(row) > 2:
            con = If(flags & row[2], con)
            if name not in RESERVED:
                con = Default(con, 0)
        subcons.append(con if name in RESERVED else name / con)
    return subcons


def declare_part(part: Part, attr_fields: Mapping[str, int], i) -> Construct:
    """The construct of a Part for one attr (resolve's attr_fields): a Part of only a count
    and its items is construct's PrefixedArray (bytes: Prefixed), built from the list (the
    bytes) alone; any other, a Struct."""
    rows = part.rows
    if not part.other[1] and len(rows) == 2 and len(rows[1]) == 2 and \
            isinstance(rows[1][1], Items) and rows[1][1].count == rows[0][0]:
        count, item = field(rows[0][1], i), rows[1][1].item
        if item == "s":
            return Prefixed(count, GreedyBytes)
        if isinstance(item, tuple):
            item = _resolve(item, 0, attr_fields)
        return PrefixedArray(count, _item(item, i))
    return Struct(*declare(resolve(part, attr_fields), i))
