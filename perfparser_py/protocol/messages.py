"""The message dataclasses the reader gives back, one per message type, made from the schema:
the fields in the wire order of the newest flavour, each annotated with its wire type, and
the type id as `TYPE` (Features is in values.py, as the writer is given it).

Imported on first use through the package's `__getattr__` (`protocol.Sample` etc.), so the
writer does not pay for creating them.
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass

from .schema import SCHEMA
from .values import Features


def _message_class(msg: dict) -> type:
    cls = make_dataclass(msg["name"], [(f["name"], f["type"]) for f in msg["fields"]],
                         namespace={"TYPE": msg["id"]}, slots=True)
    cls.__module__ = __name__  # make_dataclass (Python 3.11) cannot be told
    return cls


MESSAGE_CLASSES: dict[int, type] = {
    m["id"]: Features if m["name"] == "Features" else _message_class(m)
    for m in SCHEMA["messages"]}
globals().update((cls.__name__, cls) for cls in MESSAGE_CLASSES.values())
# Features is written by hand (its defaults serve the writer): its fields must be the schema's
if list(Features._fields) != next(
        [f["name"] for f in m["fields"]] for m in SCHEMA["messages"] if m["id"] == Features.TYPE):
    raise RuntimeError("Features: its fields do not match schema")


@dataclass(slots=True)
class Stream:
    version: int
    flavour: str
    messages: list
    trailing_bytes: bytes  # an incomplete last message (hotspot ignores it)
