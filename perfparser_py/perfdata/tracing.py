"""The tracing data blob (feature TRACING_DATA / HEADER_TRACING_DATA) and its format text.

`parse_tracing_data(blob)` reads the blob perf copies from tracefs (SEMANTICS §13.1): header
page, ftrace and per-system event formats, printk formats, saved cmdlines. `parse_format`
turns one `format` file into an `EventFormat` with typed fields (§13.2). Bad input never
raises: parsing stops at the first fault, keeps what was read and records a warning, as
perfparser does.

Deliberate fixes of upstream faults (tests/expected_differences.md): `__data_loc T[]` and
`__rel_loc T[]` fields are dynamic arrays (upstream glues `[]` to the type and never sees an
array), the element size of `long` arrays is the real sizeof(long) (upstream stores it as a
boolean), and an element size that cannot be determined is 0, which the sample decoder treats
as "cannot decode" instead of looping forever.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAGIC = b"\x17\x08Dtracing"

# field flags
FIELD_ARRAY = 0x01
FIELD_POINTER = 0x02
FIELD_SIGNED = 0x04
FIELD_STRING = 0x08
FIELD_DYNAMIC = 0x10  # __data_loc: u32 locator (offset | length << 16)
FIELD_LONG = 0x20
FIELD_RELATIVE = 0x40  # __rel_loc: locator offset counts from the end of the field

# format flags (TracePointFormat.flags)
FORMAT_FTRACE = 0x01
FORMAT_BPRINT = 0x04

_MAX_SIZE = 2**31 - 1


@dataclass(slots=True)
class FormatField:
    """One field of a tracepoint format: type text, place and FIELD_* flags."""

    name: bytes
    type: bytes
    offset: int = 0
    size: int = 0
    flags: int = 0
    arraylen: int = 0
    elementsize: int = 0


@dataclass(slots=True)
class EventFormat:
    """A tracepoint's `format` file: id, names, fields and print format."""

    id: int
    system: bytes
    name: bytes
    flags: int
    common_fields: list[FormatField]
    fields: list[FormatField]
    print_fmt: bytes = b""


@dataclass(slots=True)
class TracingData:
    """What the tracing data blob holds, with the warnings parsing it gave."""

    version: bytes = b""
    big_endian: bool = False
    long_size: int = 8
    page_size: int = 0
    header_page: list[FormatField] = field(default_factory=list)
    formats: dict[int, EventFormat] = field(default_factory=dict)  # file order
    printk: dict[int, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class _Truncated(Exception):
    pass


class _FormatWithoutId(Exception):
    pass


class _Cursor:
    __slots__ = ("data", "pos", "e")

    def __init__(self, data: bytes, pos: int, big_endian: bool) -> None:
        self.data = data
        self.pos = pos
        self.e = ">" if big_endian else "<"

    def take(self, n: int) -> bytes:
        if n < 0 or n > _MAX_SIZE or self.pos + n > len(self.data):
            raise _Truncated(f"size {n} at offset {self.pos} exceeds the tracing data")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def num(self, code: str) -> int:
        (v,) = struct.unpack(self.e + code, self.take(struct.calcsize(code)))
        return v

    def cstring(self) -> bytes:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise _Truncated(f"unterminated string at offset {self.pos}")
        s = self.data[self.pos:end]
        self.pos = end + 1
        return s

    def sized(self, code: str) -> bytes:
        n = self.num(code)
        if n > _MAX_SIZE:
            raise _Truncated(f"size {n} at offset {self.pos} is too large")
        return self.take(n)


def parse_tracing_data(blob: bytes) -> TracingData:
    """Everything readable from one tracing data blob; faults end up in `.warnings`."""
    td = TracingData()
    if not blob.startswith(MAGIC):
        td.warnings.append("Invalid magic in tracing data")
        return td
    cur = _Cursor(blob, len(MAGIC), False)
    try:
        td.version = cur.cstring()
        head = cur.take(2)
        td.big_endian = head[0] != 0
        td.long_size = head[1] or 8
        cur.e = ">" if td.big_endian else "<"
        td.page_size = cur.num("i")
        if cur.take(12) != b"header_page\0":
            raise _Truncated("header_page missing in tracing data")
        td.header_page = _field_lines(cur.sized("Q"), td.long_size)
        if cur.take(13) != b"header_event\0":
            raise _Truncated("header_event missing in tracing data")
        cur.sized("Q")
        for _ in range(max(0, cur.num("i"))):
            _add(td, parse_format(cur.sized("Q"), b"ftrace", td.long_size))
        for _ in range(max(0, cur.num("i"))):
            system = cur.cstring()
            for _ in range(max(0, cur.num("i"))):
                _add(td, parse_format(cur.sized("Q"), system, td.long_size))
        cur.sized("I")  # kallsyms: perfparser has its own
        td.printk = _printk(cur.sized("I"))
        if _version_number(td.version) >= 0.6:
            cur.sized("Q")  # saved cmdlines: COMM records say the same
    except (_Truncated, _FormatWithoutId) as exc:
        td.warnings.append(f"Failed to read tracing data: {exc}")
    return td


def _add(td: TracingData, fmt: EventFormat | None) -> None:
    if fmt is None:
        # upstream stops reading formats at the first one without an id
        raise _FormatWithoutId("event format without ID")
    td.formats[fmt.id] = fmt


def _version_number(version: bytes) -> float:
    try:
        return float(version.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return 0.0


def _printk(text: bytes) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for line in text.splitlines():
        addr, sep, fmt = line.partition(b" : ")
        if not sep:
            continue
        try:
            out[int(addr, 16)] = fmt.strip().strip(b'"')
        except ValueError:
            continue
    return out


def _chunks(line: bytes):
    """(key, value) of the `key:value` chunks of one line, as upstream splits them."""
    for chunk in line.split(b"\t"):
        parts = chunk.split(b":")
        if len(parts) != 2:
            continue
        value = parts[1].strip()
        if value.endswith(b";"):
            value = value[:-1]
        yield parts[0].strip().lower(), value


def parse_format(text: bytes, system: bytes, long_size: int = 8) -> EventFormat | None:
    """One event format file; None when it has no `ID:` line (upstream aborts then)."""
    name = b""
    fid = None
    flags = FORMAT_FTRACE if system == b"ftrace" else 0
    common: list[FormatField] = []
    fields: list[FormatField] = []
    print_fmt = b""
    section = 0  # 0 header, 1 common fields, 2 event fields, 3 done
    for line in text.split(b"\n"):
        if line.startswith(b"print fmt:"):
            print_fmt = line[len(b"print fmt:"):].strip()
            continue
        if section in (1, 2) and not line.strip():
            section += 1
            continue
        for key, value in _chunks(line):
            if section == 0:
                if key == b"name":
                    name = value
                    if system == b"ftrace" and value == b"bprint":
                        flags |= FORMAT_BPRINT
                elif key == b"id":
                    try:
                        fid = int(value)
                    except ValueError:
                        fid = None
                elif key == b"format":
                    section = 1
            elif section in (1, 2):
                _field_chunk(common if section == 1 else fields, key, value, long_size)
    if fid is None:
        return None
    return EventFormat(fid, system, name, flags, common, fields, print_fmt)


def _field_lines(text: bytes, long_size: int) -> list[FormatField]:
    out: list[FormatField] = []
    for line in text.split(b"\n"):
        for key, value in _chunks(line):
            _field_chunk(out, key, value, long_size)
    return out


def _field_chunk(out: list[FormatField], key: bytes, value: bytes, long_size: int) -> None:
    if key == b"field":
        out.append(_declaration(value, long_size))
        return
    if not out:
        return
    f = out[-1]
    try:
        number = int(value)
    except ValueError:
        return
    if key == b"offset":
        f.offset = number
    elif key == b"size":
        f.size = number
        _element_size(f, long_size)
    elif key == b"signed":
        if number:
            f.flags |= FIELD_SIGNED


def _declaration(value: bytes, long_size: int) -> FormatField:
    """`unsigned char prev_comm[16]`, `__data_loc char[] name`, `void *ptr` -> a field."""
    tokens = value.split()
    if not tokens:
        return FormatField(b"", b"")
    name = tokens.pop()
    flags = 0
    arraylen = 0
    if name.startswith(b"*"):
        flags |= FIELD_POINTER
        name = name.lstrip(b"*")
    bracket = name.find(b"[")
    if bracket > 0 and name.endswith(b"]"):
        flags |= FIELD_ARRAY
        try:
            arraylen = int(name[bracket + 1:-1], 0)
        except ValueError:
            arraylen = 0
        name = name[:bracket]
    if tokens and tokens[-1].endswith(b"[]"):
        # `__data_loc char[] x`: the brackets belong to the type (upstream misses this)
        flags |= FIELD_ARRAY
        tokens[-1] = tokens[-1][:-2]
        if not tokens[-1]:
            tokens.pop()
    ftype = b" ".join(tokens)
    if ftype.startswith(b"__data_loc"):
        flags |= FIELD_DYNAMIC
    elif ftype.startswith(b"__rel_loc"):
        flags |= FIELD_DYNAMIC | FIELD_RELATIVE
    if b"long" in ftype:
        flags |= FIELD_LONG
    f = FormatField(name, ftype, flags=flags, arraylen=arraylen)
    _element_size(f, long_size)
    return f


_SIZED_TYPES = ((b"u16", 2), (b"s16", 2), (b"u32", 4), (b"s32", 4), (b"u64", 8), (b"s64", 8))
_C_TYPES = ((b"long long", 8), (b"long", 0), (b"short", 2), (b"int", 4))


def _element_size(f: FormatField, long_size: int) -> None:
    if not f.flags & FIELD_ARRAY:
        return
    t = f.type
    if b"char" in t or b"u8" in t or b"s8" in t:
        f.flags |= FIELD_STRING
        f.elementsize = 1
        return
    if f.arraylen > 0:
        f.elementsize = f.size // f.arraylen
        return
    for name, size in _SIZED_TYPES:
        if name in t:
            f.elementsize = size
            return
    for name, size in _C_TYPES:
        if name in t:
            f.elementsize = size or long_size
            return
    f.elementsize = 0
