"""The message dataclasses the reader gives back (one per message type; Features is in
values.py, as the writer is given it).

Imported on first use through the package's `__getattr__` (`protocol.Sample` etc.), so the
writer does not pay for creating them. layout.py checks their fields against the schema the
first time it decodes a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .values import Features, Variant

checked = False  # set by layout._message_classes()


# Field order = wire order of the newest flavour (checked against the schema at import).


@dataclass(slots=True)
class ThreadStart:
    TYPE: ClassVar[int] = 0
    pid: int
    tid: int
    time: int
    cpu: int
    ppid: int


@dataclass(slots=True)
class ThreadEnd:
    TYPE: ClassVar[int] = 1
    pid: int
    tid: int
    time: int
    cpu: int


@dataclass(slots=True)
class Command:
    TYPE: ClassVar[int] = 2
    pid: int
    tid: int
    time: int
    cpu: int
    comm: int


@dataclass(slots=True)
class Location:
    TYPE: ClassVar[int] = 3
    id: int
    address: int
    file: int
    pid: int
    line: int
    column: int
    parent_location_id: int
    rel_addr: int


@dataclass(slots=True)
class Symbol:
    TYPE: ClassVar[int] = 4
    id: int
    name: int
    binary: int
    path: int
    is_kernel: bool
    rel_addr: int
    size: int
    actual_path: int
    is_inline: bool


@dataclass(slots=True)
class String:
    TYPE: ClassVar[int] = 5
    id: int
    string: bytes


@dataclass(slots=True)
class Lost:
    TYPE: ClassVar[int] = 6
    pid: int
    tid: int
    time: int
    cpu: int
    lost: int


@dataclass(slots=True)
class Error:
    TYPE: ClassVar[int] = 8
    code: int
    message: str | None


@dataclass(slots=True)
class Progress:
    TYPE: ClassVar[int] = 9
    percent: float


@dataclass(slots=True)
class TracePointFormat:
    TYPE: ClassVar[int] = 10
    id: int
    system: int
    name: int
    flags: int
    format: int


@dataclass(slots=True)
class Attributes:
    TYPE: ClassVar[int] = 11
    id: int
    attr_type: int
    config: int
    name: int
    uses_frequency: bool
    frequency_or_period: int


@dataclass(slots=True)
class ContextSwitch:
    TYPE: ClassVar[int] = 12
    pid: int
    tid: int
    time: int
    cpu: int
    switch_out: bool


@dataclass(slots=True)
class Sample:
    TYPE: ClassVar[int] = 13
    pid: int
    tid: int
    time: int
    cpu: int
    frames: list[int]
    guessed_frames: int
    values: list[tuple[int, int]]


@dataclass(slots=True)
class TracePointSample:
    TYPE: ClassVar[int] = 14
    pid: int
    tid: int
    time: int
    cpu: int
    frames: list[int]
    guessed_frames: int
    values: list[tuple[int, int]]
    event_format_id: int
    trace_data: list[tuple[int, Variant]]  # QHash entries in wire order


@dataclass(slots=True)
class DebugInfoDownloadProgress:
    TYPE: ClassVar[int] = 15
    module: int
    url: int
    numerator: int
    denominator: int


Message = (
    ThreadStart | ThreadEnd | Command | Location | Symbol | String | Lost | Features | Error
    | Progress | TracePointFormat | Attributes | ContextSwitch | Sample | TracePointSample
    | DebugInfoDownloadProgress
)
MESSAGE_CLASSES: dict[int, type] = {
    c.TYPE: c
    for c in (
        ThreadStart, ThreadEnd, Command, Location, Symbol, String, Lost, Features, Error,
        Progress, TracePointFormat, Attributes, ContextSwitch, Sample, TracePointSample,
        DebugInfoDownloadProgress,
    )
}


@dataclass(slots=True)
class Stream:
    version: int
    flavour: str
    messages: list
    trailing_bytes: bytes  # an incomplete last message (hotspot ignores it)
