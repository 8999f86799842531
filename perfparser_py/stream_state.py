"""A stream's final state as upstream's test client keeps it while decoding (TEXTDUMP §2):
strings, attributes, commands, locations, symbols, tracepoint formats and samples, which the
text dump (textdump) and the summaries (reports) read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .protocol import (
    Attributes,
    Command,
    Location,
    Sample,
    String,
    Symbol,
    ThreadStart,
    TracePointFormat,
    TracePointSample,
)

_NO_LOCATION = Location(-1, 0, -1, 0, -1, -1, -1, 0)
_NO_SYMBOL = Symbol(-1, -1, -1, -1, False, 0, 0, -1, False)
_NO_ATTRIBUTE = Attributes(-1, 0, 0, -1, False, 0)


@dataclass
class StreamState:
    """What the test client keeps while decoding (TEXTDUMP §2), final state of the stream."""

    strings: list[str] = field(default_factory=list)
    attributes: list[Attributes] = field(default_factory=list)
    commands: dict[int, int] = field(default_factory=dict)  # pid/tid -> name string id
    locations: list[Location] = field(default_factory=list)
    symbols: dict[int, Symbol] = field(default_factory=dict)
    formats: dict[int, TracePointFormat] = field(default_factory=dict)
    samples: list[Sample | TracePointSample] = field(default_factory=list)

    @classmethod
    def from_messages(cls, messages: Iterable) -> StreamState:
        st = cls()
        for m in messages:
            if isinstance(m, String):
                st.strings.append(m.string.decode("utf-8", "replace"))
            elif isinstance(m, Attributes):
                st.attributes.append(m)
            elif isinstance(m, Command):
                st.commands[m.tid] = m.comm
                if m.pid != m.tid and m.pid not in st.commands:
                    st.commands[m.pid] = m.comm
            elif isinstance(m, ThreadStart):
                st.commands[m.pid] = st.commands.get(m.ppid, -1)
            elif isinstance(m, Location):
                st.locations.append(m)
            elif isinstance(m, Symbol):
                st.symbols[m.id] = m
            elif isinstance(m, TracePointFormat):
                st.formats[m.id] = m
            elif isinstance(m, Sample | TracePointSample):
                st.samples.append(m)
        return st

    def s(self, id: int) -> str:
        return self.strings[id] if 0 <= id < len(self.strings) else ""

    def location(self, id: int) -> Location:
        return self.locations[id] if 0 <= id < len(self.locations) else _NO_LOCATION

    def symbol(self, id: int) -> Symbol:
        return self.symbols.get(id, _NO_SYMBOL)

    def attribute(self, id: int) -> Attributes:
        return self.attributes[id] if 0 <= id < len(self.attributes) else _NO_ATTRIBUTE

    def comm(self, pid: int) -> str:
        return self.s(self.commands.get(pid, -1))

    def chain(self, frame: int) -> Iterable[int]:
        """The frame's location id, then its parents up to the root; no more ids than there
        are locations, however a damaged stream's parents loop."""
        lid = frame
        for _ in range(len(self.locations) + 1):
            yield lid
            lid = self.location(lid).parent_location_id
            if lid == -1:
                return
