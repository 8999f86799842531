"""The strict reader of QPERFSTREAM, as hotspot reads it: `read_stream`, `detect_flavour`
(the flavour a stream was written in, from its payload sizes) and `encode` (one message).

Interpreted: only tools and tests read streams; the decoding itself is layout.py's.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from functools import cache

from ..tuples import TYPE_CHECKING
from .codec import ProtocolError
from .layout import _LAYOUTS, _U32LE, FLAVOURS, HEADER, MAGIC, NUM_TYPES

if TYPE_CHECKING:
    from typing import Any

    from .messages import Stream

_TRACEPOINT_SAMPLE = 14


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
    from .messages import Stream

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
