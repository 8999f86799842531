"""QDataStream value codecs (spec/PROTOCOL.md §2), built from the schema's type names.

A codec encodes one value onto a bytearray and decodes one from (buffer, pos) -> (v, pos).
Scalars are not codecs: consecutive scalar fields are packed by one struct.Struct
(`_ScalarRun`), which layout.py builds per message.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence

from ..tuples import TYPE_CHECKING
from .schema import SCHEMA
from .values import BuildId, GroupDesc, NumaNode, Pmu, Variant

if TYPE_CHECKING:
    from typing import Any

_U32 = struct.Struct(">I")
_STRUCT_CLASSES = {c.__name__: c for c in (BuildId, NumaNode, Pmu, GroupDesc)}


class ProtocolError(Exception):
    """The bytes are not a valid QPERFSTREAM (in the requested flavour)."""


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
    if names != list(cls._fields):
        raise RuntimeError(f"{name}: the named tuple's fields do not match protocol schema")
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
