"""The message layouts of every protocol flavour, compiled from the schema (`schema.SCHEMA`)
into codecs and `struct.Struct` objects: `_LAYOUTS[flavour]`
is indexed by message type id. A layout frames a message for the writer and decodes one for
the reader; the stream's header and framing constants live here too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ..tuples import TYPE_CHECKING
from .codec import ProtocolError, _as_codec, _Codec, _codec, _ScalarRun, _Short, _unpack
from .schema import SCHEMA

if TYPE_CHECKING:
    from typing import Any

FLAVOURS = ("current", "1.5", "1.4", "1.3")
MAGIC = b"QPERFSTREAM\0"
VERSION = 19  # QDataStream::Qt_5_12..5_15; identical encoding for every type used here
HEADER = MAGIC + struct.pack("<i", VERSION)
NUM_TYPES = 16  # hotspot treats a type byte >= this as a fatal parse error

_AGE = {name: i for i, name in enumerate(SCHEMA["flavours"])}
_U32LE = struct.Struct("<I")  # a message's size, before its payload


def _message_classes() -> dict[int, type]:
    """type id -> message class (messages.py, imported on first decode)."""
    from .messages import MESSAGE_CLASSES

    return MESSAGE_CLASSES


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
