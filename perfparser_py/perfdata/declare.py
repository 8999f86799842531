"""The construct declarations, generated from layout.py's tables: the rare records'
(records.py), the attr's and the feature sections' (which attr.py and features.py parse with
struct, turning to these only for bytes their readers find out of the ordinary, so that the
error is construct's, as it always was), and the tests', which build their bytes with them.

Importing construct costs ~40 M instructions (it imports platform, re, enum...), ~5 % of a
small run: only this module imports it, on the runs that need it, and without the modules
construct imports for what the parser never uses (standins.py).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from functools import cache

from ..standins import import_construct

import_construct()  # before construct is imported whole below

from construct import (  # noqa: E402
    Bytes,
    Check,
    Computed,
    Construct,
    ConstructError,
    Default,
    ExprAdapter,
    GreedyBytes,
    GreedyRange,
    If,
    IfThenElse,
    ListContainer,
    Optional,
    Padding,
    Prefixed,
    PrefixedArray,
    Struct,
    this,
)
from construct.core import (  # noqa: E402
    stream_read,
    stream_seek,
    stream_size,
    stream_tell,
    stream_write,
)

from . import layout as lay  # noqa: E402
from .abi import ATTR_SIZE_VER0  # noqa: E402
from .attr import reverse_bits64  # noqa: E402
from .ints import ints  # noqa: E402

# what records.py declares with, besides the generated subcons
__all__ = ["Construct", "ConstructError", "Default", "If", "Optional", "Struct"]

# ---------------------------------------------------------------- records, sample, sample_id


def _pad8(name: bytes) -> bytes:
    name += b"\0"
    return name + b"\0" * (-len(name) % 8)


def cstring(con: Construct = GreedyBytes) -> Construct:
    """Bytes up to the first NUL; built NUL-padded to 8 bytes, as perf writes names."""
    return ExprAdapter(con, lambda obj, _: obj.split(b"\0", 1)[0], lambda obj, _: _pad8(obj))


def field(code: str, i) -> Construct:
    """The construct of one struct code (i: ints.ints of the byte order), or of layout.CSTRING."""
    if code == lay.CSTRING:
        return cstring()
    if code.endswith("s"):
        return Bytes(int(code[:-1]))
    return {"Q": i.u64, "q": i.s64, "I": i.u32, "i": i.s32, "H": i.u16, "B": i.u8}[code]


def items(code: lay.Items, i) -> Construct:
    """The construct of an Items code (i: ints.ints of the byte order)."""
    count = code.count if isinstance(code.count, int) else this[code.count]
    return Bytes(count) if code.item == "s" else _item(code.item, i)[count]


def _item(item: str | tuple[lay.Row, ...], i) -> Construct:
    return field(item, i) if isinstance(item, str) else Struct(*declare(item, i))


def declare(rows: Iterable[lay.Row], i, flags: int = 0) -> list[Construct]:
    """The construct subcons of `rows`: a row with a bit is If(flags has it), None when absent
    and 0 by default when built; a row that needs an earlier row not 0 is If(that), None by
    default; a reserved row is padding."""
    subcons = []
    for row in rows:
        name, code = row[0], row[1]
        if name in lay.RESERVED:
            con = Padding(struct.calcsize("<" + code))
        else:
            con = items(code, i) if isinstance(code, lay.Items) else field(code, i)
        if len(row) > 2 and isinstance(row[2], str):
            con = Default(If(this[row[2]] != 0, con), None)
        elif len(row) > 2:
            con = If(flags & row[2], con)
            if name not in lay.RESERVED:
                con = Default(con, 0)
        subcons.append(con if name in lay.RESERVED else name / con)
    return subcons


def declare_part(part: lay.Part, attr_fields: Mapping[str, int], i) -> Construct:
    """The construct of a Part for one attr (resolve's attr_fields): a Part of only a count
    and its items is construct's PrefixedArray (bytes: Prefixed), built from the list (the
    bytes) alone; any other, a Struct."""
    rows = part.rows
    if not part.other[1] and len(rows) == 2 and len(rows[1]) == 2 and \
            isinstance(rows[1][1], lay.Items) and rows[1][1].count == rows[0][0]:
        count, item = field(rows[0][1], i), rows[1][1].item
        if item == "s":
            return Prefixed(count, GreedyBytes)
        if isinstance(item, tuple):
            item = lay._resolve(item, 0, attr_fields)
        return PrefixedArray(count, _item(item, i))
    return Struct(*declare(lay.resolve(part, attr_fields), i))


# ---------------------------------------------------------------- perf_event_attr

_ATTR_AT = lay.offsets(lay.ATTR)


@cache
def attr_struct(big_endian: bool) -> Construct:
    """perf_event_attr of any size >= ATTR_SIZE_VER0 (layout.ATTR); fields beyond what we know
    are skipped, fields past the attr's size read 0. It compiles (construct's compile(),
    tested), but is not compiled here: the ~3 ms that takes at start-up is more than parsing a
    file's few attrs costs."""
    i = ints(big_endian)
    subcons = []
    consumed = ATTR_SIZE_VER0  # bytes the fields read occupy (fields are contiguous)
    for name, code in lay.ATTR:
        con = field(code, i)
        if name == "flags" and big_endian:
            con = ExprAdapter(con, lambda v, _: reverse_bits64(v), lambda v, _: reverse_bits64(v))
        width = con.sizeof()
        end = _ATTR_AT[name] + width
        if end > ATTR_SIZE_VER0:  # a field only an attr this large has (older/newer ABIs)
            con = Default(IfThenElse(this.size >= end, con, Computed(0)), 0)
            consumed = consumed + (this.size >= end) * width
        subcons.append(name / con)
        if name == "size":
            subcons.append(Check(this.size >= ATTR_SIZE_VER0))
    return Struct(*subcons, Padding(this.size - consumed))


# ---------------------------------------------------------------- feature sections


def _string(i) -> Construct:
    """layout.STRING: u32 length + bytes, trailing NULs removed."""
    raw = Struct("len" / i.u32, "data" / Bytes(this.len))
    return ExprAdapter(raw, lambda obj, _: obj.data.rstrip(b"\0"), None)


def _remaining(stream, path) -> int:
    return stream_size(stream) - stream_tell(stream, path)


class _Counted(Construct):
    """An array whose count (a prefix, or a context field: this.nr) must fit the bytes left,
    `least` bytes per element at least (layout.least)."""

    def __init__(self, count, element: Construct, least: int) -> None:
        super().__init__()
        self.count, self.element, self.least = count, element, least

    def _parse(self, stream, context, path):
        if isinstance(self.count, Construct):
            n = self.count._parsereport(stream, context, path)
        else:
            n = self.count(context)
        if n * self.least > _remaining(stream, path):
            raise ConstructError(f"count {n} does not fit the section", path=path)
        return ListContainer(self.element._parsereport(stream, context, path)
                             for _ in range(n))

    def _build(self, obj, stream, context, path):
        if isinstance(self.count, Construct):
            self.count._build(len(obj), stream, context, path)
        for item in obj:
            self.element._build(item, stream, context, path)
        return obj


class _Strings(Construct):
    """layout.STRINGS (u32 count, then u32 length + NUL-padded bytes each), decoded
    directly: construct took 6 s per MB of empty strings (issue 24)."""

    def __init__(self, big_endian: bool) -> None:
        super().__init__()
        self.u32 = struct.Struct(">I" if big_endian else "<I")

    def _parse(self, stream, context, path):
        data = stream_read(stream, _remaining(stream, path), path)
        (n,), pos = self.u32.unpack_from(data, 0) if len(data) >= 4 else (0,), 4
        if len(data) < 4 or n * 4 > len(data) - 4:
            raise ConstructError(f"string count {n} does not fit the section", path=path)
        unpack, out = self.u32.unpack_from, []
        for _ in range(n):
            if pos + 4 > len(data):
                raise ConstructError("string list cut short", path=path)
            (size,) = unpack(data, pos)
            pos += 4 + size
            if pos > len(data):
                raise ConstructError("string runs past the section", path=path)
            out.append(data[pos - size:pos].rstrip(b"\0"))
        stream_seek(stream, pos - len(data), 1, path)  # what follows the list is not ours
        return ListContainer(out)

    def _build(self, obj, stream, context, path):
        parts = [self.u32.pack(len(obj))]
        for v in obj:
            v += b"\0" * (-(len(v) + 1) % 8 + 1)
            parts += (self.u32.pack(len(v)), v)
        out = b"".join(parts)
        stream_write(stream, out, len(out), path)
        return obj


def _feature(rows: tuple, big_endian: bool) -> list[Construct]:
    """The named subcons of a feature section's rows, or of an item's (a count not among its
    rows is the enclosing table's)."""
    i = ints(big_endian)
    subcons, before = [], 0  # before: the bytes of the fixed rows so far (None after others)
    names: list[str] = []
    for name, code in rows:
        if code == lay.STRING:
            con = _string(i)
        elif code == lay.STRINGS:
            con = _Strings(big_endian)
        elif isinstance(code, lay.Items):
            if code.count == lay.PREFIXED:
                count = i.u32
            else:
                count = this[code.count] if code.count in names else this._[code.count]
            if code.item == "s":
                con = Bytes(count)
            else:
                item = field(code.item, i) if isinstance(code.item, str) else \
                    Struct(*_feature(code.item, big_endian))
                con = _Counted(count, item, lay.least(code.item))
        elif isinstance(code, lay.Fill):
            con = ExprAdapter(Bytes(this[code.size] - before),
                              lambda obj, _: obj.rstrip(b"\0"), None)
        elif isinstance(code, lay.Repeated):
            con = GreedyRange(Struct(*_feature(code.item, big_endian)))
        else:
            con = field(code, i)
        if before is not None:
            before = before + con.sizeof() if lay._is_fixed(code) else None
        subcons.append(name / con)
        names.append(name)
    return subcons


@cache
def feature_structs(big_endian: bool) -> dict[int, Construct]:
    """The construct of each feature section of layout.FEATURES, by feature bit: a Struct of
    its rows, or its one row's construct."""
    out = {}
    for bit, rows in lay.FEATURES.items():
        subcons = _feature(rows, big_endian)
        out[bit] = Struct(*subcons) if len(rows) > 1 else subcons[0].subcon  # not Renamed
    return out
