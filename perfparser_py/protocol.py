"""QPERFSTREAM, the binary stream hotspot reads (spec/PROTOCOL.md): writer and reader.

Holds the value dataclasses, `StreamWriter` (called by the emit stage once per message),
the strict reader (`read_stream`, `detect_flavour`, `encode`) and `Variant`, the QVariant
subset of tracepoint data. The byte layout of every message in every protocol flavour is
data (protocol/schema.toml, embedded as `protocol_schema`); this module compiles it into
`struct.Struct` objects once at import.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from functools import cache

from .protocol_schema import SCHEMA

TYPE_CHECKING = False  # typing's constant without importing typing: start-up time (tuples.py)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from .protocol_messages import Stream

FLAVOURS = ("current", "1.5", "1.4", "1.3")
MAGIC = b"QPERFSTREAM\0"
VERSION = 19  # QDataStream::Qt_5_12..5_15; identical encoding for every type used here
HEADER = MAGIC + struct.pack("<i", VERSION)
NUM_TYPES = 16  # hotspot treats a type byte >= this as a fatal parse error

_AGE = {name: i for i, name in enumerate(SCHEMA["flavours"])}
_U32LE = struct.Struct("<I")
_U32 = struct.Struct(">I")
_F32 = struct.Struct("<f")
_FLUSH_AT = 1 << 16


class OutputError(Exception):
    """The stream could not be written (ENOSPC, EIO, ...); the message is the system's."""


class ProtocolError(Exception):
    """The bytes are not a valid QPERFSTREAM (in the requested flavour)."""


# --------------------------------------------------------------------------- value types


@dataclass(slots=True, frozen=True)
class Variant:
    """A QVariant as used in tracepoint data: type id (PROTOCOL §2.1) and the value.

    value is an int for the numeric ids, bytes for 12 (QByteArray), a list of Variant for
    9 (QVariantList) and None for 0 (invalid, which Qt5 writes with is_null set).
    """

    type_id: int
    value: Any = None
    is_null: bool = False


INVALID_VARIANT = Variant(0, None, True)


@dataclass(slots=True)
class BuildId:
    """A file perf lists with samples: its build id (FEATURES build-id table)."""

    pid: int
    id: bytes | None
    file_name: bytes | None


@dataclass(slots=True)
class NumaNode:
    """One NUMA node of the recording machine (feature NUMA_TOPOLOGY)."""

    node_id: int
    mem_total: int
    mem_free: int
    cpus: bytes | None


@dataclass(slots=True)
class Pmu:
    """A PMU type number and its name (feature PMU_MAPPINGS)."""

    type: int
    name: bytes | None


@dataclass(slots=True)
class GroupDesc:
    """An event group: its leader and size (feature GROUP_DESC)."""

    name: bytes | None
    leader_index: int
    num_members: int


# ------------------------------------------------------------------------------ messages
# Features is written by the pipeline; the other message classes are only needed to read
# streams and live in protocol_messages, imported on first use (their dataclasses cost ~10 ms
# of every start-up). Field order = wire order of the newest flavour.


@dataclass(slots=True)
class Features:
    """FeaturesDefinition; an absent string feature is None (written as a null QByteArray)."""

    TYPE = 7  # not annotated, so not a field: ClassVar would need typing at start-up
    host_name: bytes | None = None
    os_release: bytes | None = None
    version: bytes | None = None
    arch: bytes | None = None
    nr_cpus_online: int = 0
    nr_cpus_available: int = 0
    cpu_desc: bytes | None = None
    cpu_id: bytes | None = None
    total_mem: int = 0
    cmdline: list[bytes] | None = None
    build_ids: list[BuildId] | None = None
    sibling_cores: list[bytes] | None = None
    sibling_threads: list[bytes] | None = None
    numa_topology: list[NumaNode] | None = None
    pmu_mappings: list[Pmu] | None = None
    group_descs: list[GroupDesc] | None = None


_STRUCT_CLASSES = {c.__name__: c for c in (BuildId, NumaNode, Pmu, GroupDesc)}
_READER_NAMES = frozenset((
    "ThreadStart", "ThreadEnd", "Command", "Location", "Symbol", "String", "Lost", "Error",
    "Progress", "TracePointFormat", "Attributes", "ContextSwitch", "Sample", "TracePointSample",
    "DebugInfoDownloadProgress", "Message", "MESSAGE_CLASSES", "Stream",
))
_TRACEPOINT_SAMPLE = 14


def __getattr__(name: str) -> Any:
    if name in _READER_NAMES:
        from . import protocol_messages

        return getattr(protocol_messages, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _message_classes() -> dict[int, type]:
    """type id -> message class, checked once against the schema's field lists."""
    from . import protocol_messages

    classes = protocol_messages.MESSAGE_CLASSES
    if not protocol_messages.checked:
        for msg in SCHEMA["messages"]:
            cls = classes[msg["id"]]
            if [f["name"] for f in msg["fields"]] != [f.name for f in fields(cls)]:
                raise RuntimeError(f"{cls.__name__}: dataclass fields do not match schema")
        protocol_messages.checked = True
    return classes


# -------------------------------------------------------------------------------- codecs
# A codec encodes one value onto a bytearray and decodes one from (buffer, pos) -> (v, pos).
# Scalars are not codecs: consecutive scalar fields are packed by one struct.Struct.

_SCALAR = {
    "qint8": "b", "quint8": "B", "bool": "?", "qint16": "h", "quint16": "H",
    "qint32": "i", "quint32": "I", "qint64": "q", "quint64": "Q",
    "double": "d", "float": "d",
}
_UNSIGNED = {"b": "B", "h": "H", "i": "I", "q": "Q"}
_MASK = {"b": 0xFF, "B": 0xFF, "h": 0xFFFF, "H": 0xFFFF, "i": 0xFFFFFFFF, "I": 0xFFFFFFFF,
         "q": (1 << 64) - 1, "Q": (1 << 64) - 1}


class _Short(Exception):
    """Internal: a value runs past the end of its payload."""


class _ScalarRun:
    """Consecutive scalar fields as one big-endian Struct; negative values given for
    unsigned fields (and vice versa) are wrapped to the field width."""

    __slots__ = ("st", "st_wrapped", "masks")

    def __init__(self, codes: str, head: str = "") -> None:
        """head: a leading non-scalar Struct item such as "5s", passed through unchanged."""
        self.st = struct.Struct(">" + head + codes)
        self.st_wrapped = struct.Struct(
            ">" + head + "".join(_UNSIGNED.get(c, c) for c in codes))
        self.masks = (None,) * bool(head) + tuple(_MASK.get(c) for c in codes)

    def pack(self, values: Sequence) -> bytes:
        try:
            return self.st.pack(*values)
        except struct.error:
            return self.st_wrapped.pack(*_wrap(values, self.masks))


def _wrap(values: Sequence, masks: Sequence[int | None]) -> list:
    return [v if m is None else int(v) & m for v, m in zip(values, masks, strict=True)]


class _Codec:
    __slots__ = ("enc", "dec")

    def __init__(self, enc: Callable[[bytearray, Any], None],
                 dec: Callable[[memoryview, int], tuple[Any, int]]) -> None:
        self.enc = enc
        self.dec = dec


def _unpack(st: struct.Struct, buf: memoryview, pos: int) -> tuple:
    if pos + st.size > len(buf):
        raise _Short
    return st.unpack_from(buf, pos)


def _bytes_enc(out: bytearray, v: bytes | None) -> None:
    if v is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _U32.pack(len(v))
        out += v


def _bytes_dec(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    (n,) = _unpack(_U32, buf, pos)
    pos += 4
    if n == 0xFFFFFFFF:
        return None, pos
    if pos + n > len(buf):
        raise _Short
    return bytes(buf[pos:pos + n]), pos + n


def _qstring_enc(out: bytearray, v: str | None) -> None:
    _bytes_enc(out, None if v is None else v.encode("utf-16-be", "surrogatepass"))


def _qstring_dec(buf: memoryview, pos: int) -> tuple[str | None, int]:
    raw, pos = _bytes_dec(buf, pos)
    if raw is None:
        return None, pos
    if len(raw) % 2:
        raise ProtocolError("QString with an odd number of bytes")
    return raw.decode("utf-16-be", "surrogatepass"), pos


_VARIANT_SCALARS = {2: "i", 3: "I", 4: "q", 5: "Q", 33: "h", 36: "H", 37: "B", 40: "b"}
_VARIANT_STRUCTS = {t: _ScalarRun(c) for t, c in _VARIANT_SCALARS.items()}
_VARIANT_HEAD = struct.Struct(">IB")


def _variant_enc(out: bytearray, v: Variant) -> None:
    t = v.type_id
    out += _VARIANT_HEAD.pack(t, 1 if v.is_null else 0)
    run = _VARIANT_STRUCTS.get(t)
    if run is not None:
        out += run.pack((v.value,))
    elif t == 12:
        _bytes_enc(out, v.value)
    elif t == 9:
        _VARIANT_LIST.enc(out, v.value)
    elif t != 0:
        raise ValueError(f"unsupported QVariant type id {t}")


def _variant_dec(buf: memoryview, pos: int) -> tuple[Variant, int]:
    t, is_null = _unpack(_VARIANT_HEAD, buf, pos)
    pos += 5
    run = _VARIANT_STRUCTS.get(t)
    if run is not None:
        (value,) = _unpack(run.st, buf, pos)
        pos += run.st.size
    elif t == 12:
        value, pos = _bytes_dec(buf, pos)
    elif t == 9:
        value, pos = _VARIANT_LIST.dec(buf, pos)
    elif t == 0:
        value = None
    else:
        raise ProtocolError(f"unsupported QVariant type id {t}")
    return Variant(t, value, bool(is_null)), pos


_VARIANT = _Codec(_variant_enc, _variant_dec)


def _list_of(elem: _Codec | str) -> tuple[Callable, Callable]:
    """Encoder/decoder of a QVector/QList/QHash (uint32 count, then the elements).

    elem is a codec or a Struct format (one scalar code, or several for a QPair of scalars).
    """
    if isinstance(elem, _Codec):
        eenc, edec = elem.enc, elem.dec

        def enc(out: bytearray, items: Sequence | None) -> None:
            items = items or ()
            out += _U32.pack(len(items))
            for item in items:
                eenc(out, item)

        def dec(buf: memoryview, pos: int) -> tuple[list, int]:
            (n,) = _unpack(_U32, buf, pos)
            pos += 4
            items = []
            for _ in range(n):
                item, pos = edec(buf, pos)
                items.append(item)
            return items, pos

        return enc, dec

    if len(elem) == 1:  # flat numbers: array does the byte swapping in C
        code = elem
        size = struct.calcsize(code)
        if array(code).itemsize != size:
            raise RuntimeError(f"array({code!r}) is not {size} bytes on this platform")
        acode, wrapped = code, _UNSIGNED.get(code, code)
        mask = _MASK[code]

        def enc(out: bytearray, items: Sequence[int] | None) -> None:
            items = items or ()
            out += _U32.pack(len(items))
            try:
                a = array(acode, items)
            except OverflowError:
                a = array(wrapped, [v & mask for v in items])
            a.byteswap()
            out += a.tobytes()

        def dec(buf: memoryview, pos: int) -> tuple[list[int], int]:
            (n,) = _unpack(_U32, buf, pos)
            pos += 4
            end = pos + n * size
            if end > len(buf):
                raise _Short
            a = array(acode)
            a.frombytes(buf[pos:end])
            a.byteswap()
            return a.tolist(), end

        return enc, dec

    run = _ScalarRun(elem)
    st = run.st

    def enc(out: bytearray, items: Sequence[Sequence] | None) -> None:
        items = items or ()
        out += _U32.pack(len(items))
        for item in items:
            out += run.pack(item)

    def dec(buf: memoryview, pos: int) -> tuple[list[tuple], int]:
        (n,) = _unpack(_U32, buf, pos)
        pos += 4
        end = pos + n * st.size
        if end > len(buf):
            raise _Short
        return list(st.iter_unpack(buf[pos:end])), end

    return enc, dec


_VARIANT_LIST = _Codec(*_list_of(_VARIANT))


def _split_args(inner: str) -> list[str]:
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(inner):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    parts.append(inner[start:].strip())
    return parts


def _codec(type_name: str) -> _Codec | str:
    """Compile a schema type name: a Struct code string for scalars (and QPairs of
    scalars), else a codec."""
    if type_name in _SCALAR:
        return _SCALAR[type_name]
    if type_name == "QByteArray":
        return _Codec(_bytes_enc, _bytes_dec)
    if type_name == "QString":
        return _Codec(_qstring_enc, _qstring_dec)
    if type_name == "QVariant":
        return _VARIANT
    if type_name in SCHEMA["structs"]:
        return _struct_codec(type_name)
    outer, _, rest = type_name.partition("<")
    args = [_codec(a) for a in _split_args(rest[:-1])]
    if outer in ("QVector", "QList"):
        return _Codec(*_list_of(args[0]))
    if outer == "QPair":
        return _pair_codec(*args)
    if outer == "QHash":  # same bytes as a list of pairs; kept in wire order
        return _Codec(*_list_of(_pair_codec(*args)))
    raise ValueError(f"unknown type in protocol schema: {type_name}")


def _as_codec(c: _Codec | str) -> _Codec:
    if isinstance(c, _Codec):
        return c
    run = _ScalarRun(c)

    def enc(out: bytearray, v: Any) -> None:
        out += run.pack((v,))

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        return _unpack(run.st, buf, pos)[0], pos + run.st.size

    return _Codec(enc, dec)


def _pair_codec(a: _Codec | str, b: _Codec | str) -> _Codec | str:
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    ca, cb = _as_codec(a), _as_codec(b)

    def enc(out: bytearray, v: Sequence) -> None:
        ca.enc(out, v[0])
        cb.enc(out, v[1])

    def dec(buf: memoryview, pos: int) -> tuple[tuple, int]:
        x, pos = ca.dec(buf, pos)
        y, pos = cb.dec(buf, pos)
        return (x, y), pos

    return _Codec(enc, dec)


def _struct_codec(name: str) -> _Codec:
    cls = _STRUCT_CLASSES[name]
    names = [f["name"] for f in SCHEMA["structs"][name]["fields"]]
    if names != [f.name for f in fields(cls)]:
        raise RuntimeError(f"{name}: dataclass fields do not match protocol schema")
    parts = [_as_codec(_codec(f["type"])) for f in SCHEMA["structs"][name]["fields"]]

    def enc(out: bytearray, v: Any) -> None:
        for n, c in zip(names, parts, strict=True):
            c.enc(out, getattr(v, n))

    def dec(buf: memoryview, pos: int) -> tuple[Any, int]:
        vals = []
        for c in parts:
            x, pos = c.dec(buf, pos)
            vals.append(x)
        return cls(*vals), pos

    return _Codec(enc, dec)


# ------------------------------------------------------------------------------- layouts


class _Layout:
    """One message type in one flavour: which fields are on the wire and how."""

    __slots__ = ("type_id", "cls", "names", "keep", "fill", "segments", "fixed", "prefix",
                 "size")

    def __init__(self, msg: dict, flavour: str) -> None:
        self.type_id: int = msg["id"]
        self.cls = None  # the message class, looked up by the first decode()
        all_fields = msg["fields"]
        self.names = [f["name"] for f in all_fields]
        age = _AGE[flavour]
        present = [i for i, f in enumerate(all_fields) if _AGE[f.get("since", "1.3")] <= age]
        # keep: positions of the wire fields among all fields (None: all of them);
        # fill: defaults for the others, in field order (None marks a wire field).
        self.keep = None if len(present) == len(all_fields) else present
        self.fill = [None if i in present else f.get("default", 0)
                     for i, f in enumerate(all_fields)]
        # segments: (run, None, first, stop) for scalar runs, (None, codec, i, i + 1) else
        self.segments: list[tuple[_ScalarRun | None, _Codec | None, int, int]] = []
        codes = ""
        for i, f in enumerate(all_fields[j] for j in present):
            c = _codec(f["type"])
            if isinstance(c, str) and len(c) == 1:
                codes += c
                continue
            if codes:
                self.segments.append((_ScalarRun(codes), None, i - len(codes), i))
                codes = ""
            self.segments.append((None, _as_codec(c), i, i + 1))
        if codes:
            self.segments.append((_ScalarRun(codes), None, len(present) - len(codes),
                                  len(present)))
        # all-scalar messages are framed by one precompiled Struct
        self.fixed: _ScalarRun | None = None
        self.size = 0
        if len(self.segments) == 1 and self.segments[0][0] is not None:
            self.size = 1 + self.segments[0][0].st.size
            self.prefix = _U32LE.pack(self.size) + bytes((self.type_id,))
            self.fixed = _ScalarRun(codes, head="5s")

    def frame(self, values: Sequence) -> bytes:
        """The framed message for values given in dataclass field order."""
        if self.keep is not None:
            values = [values[i] for i in self.keep]
        if self.fixed is not None:
            return self.fixed.pack((self.prefix, *values))
        body = bytearray((self.type_id,))
        for run, codec, i, stop in self.segments:
            if run is not None:
                body += run.pack(values[i:stop])
            else:
                codec.enc(body, values[i])
        return _U32LE.pack(len(body)) + body

    def decode(self, payload: memoryview) -> Any:
        pos = 1
        wire: list = []
        try:
            for run, codec, _i, _stop in self.segments:
                if run is not None:
                    wire += _unpack(run.st, payload, pos)
                    pos += run.st.size
                else:
                    v, pos = codec.dec(payload, pos)
                    wire.append(v)
        except _Short:
            raise ProtocolError(f"truncated payload for event of type {self.type_id}") from None
        if pos != len(payload):
            raise ProtocolError(f"did not consume all bytes for event of type {self.type_id}")
        if self.cls is None:
            self.cls = _message_classes()[self.type_id]
        if self.keep is None:
            return self.cls(*wire)
        it = iter(wire)
        return self.cls(*[next(it) if d is None else d for d in self.fill])


def _compile(flavour: str) -> list[_Layout | None]:
    age = _AGE[flavour]
    table: list[_Layout | None] = [None] * NUM_TYPES
    for msg in SCHEMA["messages"]:
        if _AGE[msg.get("since", "1.3")] <= age:
            table[msg["id"]] = _Layout(msg, flavour)
    return table


class _LayoutTables(dict):
    """flavour -> its message layouts (index: type id), compiled on first use: a run writes
    one flavour, and compiling all four was ~2 ms of every start."""

    def __missing__(self, flavour: str) -> list[_Layout | None]:
        if flavour not in FLAVOURS:
            raise KeyError(flavour)
        table = self[flavour] = _compile(flavour)
        return table


_LAYOUTS: dict[str, list[_Layout | None]] = _LayoutTables()


def message_size(type_id: int, flavour: str) -> int | None:
    """Payload size (type byte included) of a fixed-size message, None if variable/absent."""
    lay = _LAYOUTS[flavour][type_id]
    return lay.size if lay is not None and lay.fixed is not None else None


# ------------------------------------------------------------- Sample fast path (hot)

# (number of frames, number of values) -> (Struct.pack of the payload, its length prefix)
_SAMPLE_PACKERS: dict[tuple[int, int], tuple[Callable[..., bytes], bytes]] = {}


def _sample_frame(type_id: int, pid: int, tid: int, time: int, cpu: int,
                  frames: Sequence[int], guessed: int,
                  values: Sequence[tuple[int, int]]) -> bytes:
    """Sample message (length prefix included) without the schema walk: one struct pack per
    shape; struct.error when a value needs wrapping."""
    n = len(frames)
    nv = len(values)
    packer = _SAMPLE_PACKERS.get((n, nv))
    if packer is None:
        if len(_SAMPLE_PACKERS) >= 4096:  # frame counts come from the input: stay bounded
            _SAMPLE_PACKERS.clear()
        st = struct.Struct(f">BiiQII{n}iBI" + "iQ" * nv)
        packer = _SAMPLE_PACKERS[n, nv] = (st.pack, _U32LE.pack(st.size))
    pack, prefix = packer
    if nv == 1:
        (a, v), = values
        return prefix + pack(type_id, pid, tid, time, cpu, n, *frames, guessed, 1, a, v)
    return prefix + pack(type_id, pid, tid, time, cpu, n, *frames, guessed, nv,
                         *[x for pair in values for x in pair])


# sample_one's pieces of the message _sample_frame packs: u32le size | type, pid, tid, time,
# cpu | frame count and frames | guessed, value count, (attribute id, value)
_SAMPLE_HEAD = struct.Struct(">BiiQI").pack
_SAMPLE_ONE_TAIL = struct.Struct(">BIiQ").pack
_SAMPLE_FIXED_SIZE = struct.calcsize(">BiiQI") + 4 + struct.calcsize(">BIiQ")
# frames in sample_one's cache (each entry counting one more), which keeps the lists alive:
# the distinct stacks of a real program grow with its samples
_MAX_PACKED_FRAMES = 1 << 16


def _fast_sample_type(lay: _Layout | None) -> int | None:
    """The Sample type id if this flavour's layout encodes exactly like _sample_frame."""
    if lay is None:
        return None
    for probe in ((-1, 7, 1 << 40, 3, [0, -5, 9], 2, [(1, 1 << 63), (-1, 5)]),
                  (5, 6, 7, 0, [], 0, [(0, 3)])):
        if _sample_frame(lay.type_id, *probe) != lay.frame(probe):
            return None
    return lay.type_id


# ------------------------------------------------------------ Location fast path (hot)
# Every first resolution of an address writes a Location (Symbols and Strings are ~50x
# rarer and keep the schema path): one Struct call instead of the schema walk. The format
# is checked against the schema layout at start-up, so a flavour that encodes differently
# keeps the schema path. pid is packed as "i" although the field is a quint32: the same
# bytes for every value that fits, and a larger one raises struct.error, sending it to the
# schema path that wraps values.

# prefix (size, type), id, address, file, pid, line, column, parent, rel_addr
_LOCATION = struct.Struct(">5siQiiiiiQ")


def _fast_location_prefix(lay: _Layout | None) -> bytes | None:
    """The 5-byte prefix (size, type) for _LOCATION if it frames like this flavour's
    layout, else None."""
    if lay is None:
        return None
    prefix = _U32LE.pack(_LOCATION.size - 4) + bytes((lay.type_id,))
    for probe in ((0, 1 << 63, -1, -1, 0, 7, -1, 0), (5, 0, 3, 1 << 30, -2, 1 << 20, 4, 9)):
        if _LOCATION.pack(prefix, *probe) != lay.frame(probe):
            return None
    return prefix


# ----------------------------------------------------------- what the samples referenced

# What the stream has said of a location (the emitter keeps these bits per location id): it
# has a Symbol of its own; it has a name, its own or, for a location without a Symbol, its
# parent's (PROTOCOL §6.2)
HAS_SYMBOL, NAMED = 1, 2


class FrameCounts:
    """What the samples written so far referenced: their number, their pids and frames, and
    per location id without a name the frames in them (for diagnostics.py). Compiled with
    the C types of protocol.pxd: add() looks at every frame of a DWARF-unwound sample."""

    def __init__(self) -> None:
        self.location_state = bytearray()  # per location id, HAS_SYMBOL | NAMED bits
        self.samples = 0
        self.frames = 0
        self.pids: set = set()
        self.unnamed: dict = {}  # location id -> frames

    def add(self, frames, uses: int, pid) -> None:
        """`uses` samples of process `pid` with these frames (location ids)."""
        self.samples += uses
        self.frames += len(frames) * uses
        self.pids.add(pid)
        state = self.location_state
        n = len(state)
        named = NAMED  # a C int when compiled, as are f and bits: the loop stays in C
        for f in frames:
            if 0 <= f < n:
                bits = state[f]
                if bits & named:
                    continue
            self.unnamed[f] = self.unnamed.get(f, 0) + uses


# -------------------------------------------------------------------------------- writer


class StreamWriter:
    """Writes messages of one flavour into a buffer and the buffer to `out` in big chunks.

    Signed and unsigned values are accepted for every integer field (-1 as a quint32 pid
    becomes 0xFFFFFFFF). A message the flavour does not know is dropped. BrokenPipeError
    from `out` propagates.
    """

    def __init__(self, out: BinaryIO, flavour: str = "current") -> None:
        if flavour not in FLAVOURS:
            raise ValueError(f"unknown protocol flavour {flavour!r} (one of {FLAVOURS})")
        self.out = out
        self.flavour = flavour
        self._buf = bytearray()
        (self._thread_start, self._thread_end, self._command, self._location, self._symbol,
         self._string, self._lost, self._features, self._error, self._progress,
         self._tracepoint_format, self._attributes, self._context_switch, self._sample,
         self._tracepoint_sample, self._debuginfo_progress) = _LAYOUTS[flavour]
        self._sample_type = _fast_sample_type(self._sample)
        self._location_prefix = _fast_location_prefix(self._location)
        # id(frames) -> [frames, message size prefix, packed frame array or None, samples
        # written with it since the last fold, their pid] (sample_one)
        self._packed_frames: dict[int, list] = {}
        self._packed_count = 0  # frames in _packed_frames (_MAX_PACKED_FRAMES)
        self._counts = FrameCounts()

    def _put(self, lay: _Layout | None, values: Sequence) -> None:
        if lay is None:
            return
        buf = self._buf
        buf += lay.frame(values)
        if len(buf) >= _FLUSH_AT:
            self.flush()

    def header(self) -> None:
        self._buf += HEADER

    def thread_start(self, pid: int, tid: int, time: int, cpu: int, ppid: int) -> None:
        self._put(self._thread_start, (pid, tid, time, cpu, ppid))

    def thread_end(self, pid: int, tid: int, time: int, cpu: int) -> None:
        self._put(self._thread_end, (pid, tid, time, cpu))

    def command(self, pid: int, tid: int, time: int, cpu: int, comm: int) -> None:
        self._put(self._command, (pid, tid, time, cpu, comm))

    def location(self, id: int, address: int, file: int, pid: int, line: int, column: int,
                 parent: int, rel_addr: int) -> None:
        if self._location_prefix is not None:
            try:
                self._buf += _LOCATION.pack(self._location_prefix, id, address, file, pid,
                                            line, column, parent, rel_addr)
            except struct.error:  # values to wrap: the schema path knows how
                pass
            else:
                if len(self._buf) >= _FLUSH_AT:
                    self.flush()
                return
        self._put(self._location, (id, address, file, pid, line, column, parent, rel_addr))

    def symbol(self, id: int, name: int, binary: int, path: int, is_kernel: bool,
               rel_addr: int, size: int, actual_path: int, is_inline: bool) -> None:
        self._put(self._symbol, (id, name, binary, path, is_kernel, rel_addr, size,
                                 actual_path, is_inline))

    def string(self, id: int, data: bytes) -> None:
        self._put(self._string, (id, data))

    def lost(self, pid: int, tid: int, time: int, cpu: int, lost: int) -> None:
        self._put(self._lost, (pid, tid, time, cpu, lost))

    def features(self, f: Features) -> None:
        lay = self._features
        self._put(lay, [getattr(f, n) for n in lay.names])

    def error(self, code: int, message: str) -> None:
        self._put(self._error, (code, message))

    def progress(self, fraction: float) -> None:
        # upstream sends a C++ float, which QDataStream widens to double
        self._put(self._progress, _F32.unpack(_F32.pack(fraction)))

    def tracepoint_format(self, id: int, system: int, name: int, flags: int,
                          format: int = -1) -> None:
        self._put(self._tracepoint_format, (id, system, name, flags, format))

    def attributes(self, id: int, attr_type: int, config: int, name: int,
                   uses_frequency: bool, frequency_or_period: int) -> None:
        self._put(self._attributes, (id, attr_type, config, name, uses_frequency,
                                     frequency_or_period))

    def context_switch(self, pid: int, tid: int, time: int, cpu: int, switch_out: bool) -> None:
        self._put(self._context_switch, (pid, tid, time, cpu, switch_out))

    def count_unresolved(self, location_state: bytearray) -> None:
        """Count, per location id without the NAMED bit in `location_state` (emit.py keeps
        it), the frames of the samples written (frame_counts())."""
        self._counts.location_state = location_state

    def frame_counts(self) -> FrameCounts:
        """The FrameCounts of every sample written so far."""
        for entry in self._packed_frames.values():
            self._fold(entry)
        return self._counts

    def _fold(self, entry: list) -> None:
        uses = entry[3]
        if uses:
            entry[3] = 0
            self._counts.add(entry[0], uses, entry[4])

    def sample(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
               guessed: int, values: Sequence[tuple[int, int]]) -> None:
        self._counts.add(frames, 1, pid)
        self._sample_uncounted(pid, tid, time, cpu, frames, guessed, values)

    def _sample_uncounted(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
                          guessed: int, values: Sequence[tuple[int, int]]) -> None:
        if self._sample_type is not None:
            try:
                frame = _sample_frame(self._sample_type, pid, tid, time, cpu, frames, guessed,
                                      values)
            except struct.error:  # values to wrap: the schema-driven path knows how
                pass
            else:
                buf = self._buf
                buf += frame
                if len(buf) >= _FLUSH_AT:
                    self.flush()
                return
        self._put(self._sample, (pid, tid, time, cpu, frames, guessed, values))

    def sample_one(self, pid: int, tid: int, time: int, cpu: int, frames: list[int],
                   attribute_id: int, value: int) -> None:
        """sample() with guessed 0 and the one value (attribute_id, value).

        The packed frame array is cached per frames list: the symbolizer hands out one list
        per distinct stack, so most samples re-use it instead of packing every frame again.
        The cache holds the list itself, so its id() cannot be reused while cached."""
        if self._sample_type is not None:
            cached = self._packed_frames.get(id(frames))
            if cached is None or cached[0] is not frames:
                cached = self._pack_frames(frames, pid)
            cached[3] += 1  # counted per list: the frames are looked at when it is folded
            if cached[2] is not None:
                try:
                    head = _SAMPLE_HEAD(self._sample_type, pid, tid, time, cpu)
                    tail = _SAMPLE_ONE_TAIL(0, 1, attribute_id, value)
                except struct.error:  # values to wrap: sample() knows how
                    pass
                else:
                    buf = self._buf
                    buf += cached[1]
                    buf += head
                    buf += cached[2]
                    buf += tail
                    if len(buf) >= _FLUSH_AT:
                        self.flush()
                    return
            self._sample_uncounted(pid, tid, time, cpu, frames, 0, ((attribute_id, value),))
            return
        self.sample(pid, tid, time, cpu, frames, 0, ((attribute_id, value),))

    def _pack_frames(self, frames: list[int], pid: int) -> list:
        """A new entry of sample_one's cache (see _packed_frames). A frames list comes from
        one process's memo (symbolize.py), so its entry keeps the pid it was first seen in."""
        cache = self._packed_frames
        n = len(frames)
        self._packed_count += n + 1
        if self._packed_count > _MAX_PACKED_FRAMES:
            for entry in cache.values():
                self._fold(entry)
            cache.clear()
            self._packed_count = n + 1
        try:
            packed = struct.pack(f">I{n}i", n, *frames)
        except struct.error:  # an id out of range: the schema path reports it
            packed = None
        entry = cache[id(frames)] = [frames, _U32LE.pack(_SAMPLE_FIXED_SIZE + 4 * n), packed,
                                     0, pid]
        return entry

    def tracepoint_sample(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
                          guessed: int, values: Sequence[tuple[int, int]], format_id: int,
                          trace_data: Sequence[tuple[int, Variant]]) -> None:
        self._counts.add(frames, 1, pid)
        self._put(self._tracepoint_sample, (pid, tid, time, cpu, frames, guessed, values,
                                            format_id, trace_data))

    def debuginfo_progress(self, module: int, url: int, numerator: int,
                           denominator: int) -> None:
        self._put(self._debuginfo_progress, (module, url, numerator, denominator))

    def flush(self) -> None:
        """Write out what is buffered; OutputError when the output cannot take it (a full
        disk); BrokenPipeError as it is (the reader left: cli ends quietly)."""
        try:
            if self._buf:
                view = memoryview(self._buf)
                while view:  # a pipe whose reader left takes a partial write, then EPIPE
                    n = self.out.write(view)
                    if not n:
                        break
                    view = view[n:]
                view.release()
                self._buf = bytearray()
            flush = getattr(self.out, "flush", None)
            if flush is not None:
                flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputError(err.strerror or str(err)) from None


# -------------------------------------------------------------------------------- reader


def encode(msg: Any, flavour: str = "current") -> bytes:
    """One framed message (size + payload) in the given flavour."""
    lay = _LAYOUTS[flavour][msg.TYPE]
    if lay is None:
        raise ProtocolError(f"message type {msg.TYPE} does not exist in flavour {flavour}")
    return bytes(lay.frame([getattr(msg, n) for n in lay.names]))


def _check_header(data: bytes) -> int:
    if len(data) < len(HEADER):
        raise ProtocolError("stream too short for the QPERFSTREAM header")
    if data[:12] != MAGIC:
        raise ProtocolError("not a QPERFSTREAM (bad magic)")
    return struct.unpack_from("<i", data, 12)[0]


def _payloads(view: memoryview) -> Iterator[tuple[int, memoryview] | tuple[None, memoryview]]:
    """(type, payload) per complete message after the header; finally (None, rest) if an
    incomplete message trails."""
    pos, end = len(HEADER), len(view)
    while pos < end:
        if pos + 4 > end:
            break
        (size,) = _U32LE.unpack_from(view, pos)
        if pos + 4 + size > end:
            break
        if size == 0:
            raise ProtocolError(f"empty message at offset {pos}")
        payload = view[pos + 4:pos + 4 + size]
        if payload[0] >= NUM_TYPES:
            raise ProtocolError(f"unknown message type {payload[0]} at offset {pos}")
        yield payload[0], payload
        pos += 4 + size
    if pos < end:
        yield None, view[pos:]


def read_stream(data: bytes, flavour: str | None = None) -> Stream:
    """Decode a whole stream strictly, like hotspot (ProtocolError on the first bad message)."""
    version = _check_header(data)
    if flavour is None:
        flavour = detect_flavour(data)
    elif flavour not in FLAVOURS:
        raise ValueError(f"unknown protocol flavour {flavour!r} (one of {FLAVOURS})")
    table = _LAYOUTS[flavour]
    messages = []
    trailing = b""
    for type_id, payload in _payloads(memoryview(data)):
        if type_id is None:
            trailing = bytes(payload)
            break
        lay = table[type_id]
        if lay is None:
            raise ProtocolError(f"message type {type_id} does not exist in flavour {flavour}")
        messages.append(lay.decode(payload))
    from .protocol_messages import Stream

    return Stream(version, flavour, messages, trailing)


@cache
def _size_evidence() -> dict[int, dict[int, set[str]]]:
    """type id -> payload size -> the flavours it is valid in, for the messages whose size
    tells the flavour."""
    evidence: dict[int, dict[int, set[str]]] = {}
    for f in FLAVOURS:
        for lay in _LAYOUTS[f]:
            if lay is not None and lay.fixed is not None:
                evidence.setdefault(lay.type_id, {}).setdefault(lay.size, set()).add(f)
    return {t: by_size for t, by_size in evidence.items() if len(by_size) > 1}


def detect_flavour(data: bytes) -> str:
    """The flavour a stream was written in, from its payload sizes.

    When the stream does not tell (e.g. no tracepoints: 1.5 and current are then the same
    bytes), the first remaining flavour in FLAVOURS order is returned.
    """
    _check_header(data)
    candidates = set(FLAVOURS)
    for type_id, payload in _payloads(memoryview(data)):
        if type_id is None:
            break
        by_size = _size_evidence().get(type_id)
        if by_size is not None:
            fits = by_size.get(len(payload), set())
            if not fits:
                raise ProtocolError(f"payload of {len(payload)} bytes for event of type "
                                    f"{type_id} fits no known protocol flavour")
        elif type_id == _TRACEPOINT_SAMPLE:
            fits = set()
            for f in candidates:
                try:
                    _LAYOUTS[f][type_id].decode(payload)
                    fits.add(f)
                except ProtocolError:
                    pass
        elif _LAYOUTS["1.3"][type_id] is None:
            fits = {f for f in FLAVOURS if _LAYOUTS[f][type_id] is not None}
        else:
            continue
        if not candidates & fits:
            raise ProtocolError("message sizes of the stream fit no single protocol flavour")
        candidates &= fits
        if len(candidates) == 1:
            break
    return next(f for f in FLAVOURS if f in candidates)
