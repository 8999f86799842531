"""QPERFSTREAM, the binary stream hotspot reads (spec/PROTOCOL.md): writer and reader.

The byte layout of every message in every protocol flavour is data (`schema.SCHEMA`). Its
modules, in the order they build on each other:

- values: the non-numeric values as the writer is given them (Variant, Features, its structs)
- codec: the QDataStream codec of each schema type
- layout: per flavour, each message's layout compiled from the schema; the stream's header
- writer: StreamWriter and its fast Sample/Location paths, FrameCounts (compiled: the hot side)
- reader: read_stream, detect_flavour, encode (loaded on first use, as are the messages)
- messages: the message dataclasses the reader gives back
"""

from __future__ import annotations

from ..tuples import TYPE_CHECKING
from .codec import ProtocolError
from .layout import FLAVOURS, HEADER, MAGIC, NUM_TYPES, VERSION, message_size
from .schema import SCHEMA
from .values import INVALID_VARIANT, BuildId, Features, GroupDesc, NumaNode, Pmu, Variant
from .writer import HAS_SYMBOL, NAMED, FrameCounts, OutputError, StreamWriter

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FLAVOURS", "HEADER", "MAGIC", "NUM_TYPES", "VERSION", "HAS_SYMBOL", "NAMED",
    "INVALID_VARIANT", "BuildId", "Features", "FrameCounts", "GroupDesc", "NumaNode",
    "OutputError", "Pmu", "ProtocolError", "StreamWriter", "Variant", "message_size",
]

# Only tools and tests read streams: a run that writes one does not load these.
_READER_NAMES = frozenset(("read_stream", "detect_flavour", "encode"))
_MESSAGE_NAMES = frozenset((*(m["name"] for m in SCHEMA["messages"]), "MESSAGE_CLASSES", "Stream"))


def __getattr__(name: str) -> Any:
    if name in _READER_NAMES:
        from . import reader as module
    elif name in _MESSAGE_NAMES:
        from . import messages as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
