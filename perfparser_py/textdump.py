"""Render a QPERFSTREAM as text: upstream's test-client dump (spec/TEXTDUMP.md) or a summary.

`render()` reproduces upstream's `*.expected.txt` format byte for byte; `summary()` is a
short per-process report for humans. `main()` is the `stream2text` command.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .protocol import (
    FLAVOURS,
    Attributes,
    Command,
    Location,
    ProtocolError,
    Sample,
    String,
    Symbol,
    ThreadStart,
    TracePointFormat,
    TracePointSample,
    Variant,
    read_stream,
)

_NO_LOCATION = Location(-1, 0, -1, 0, -1, -1, -1, 0)
_NO_SYMBOL = Symbol(-1, -1, -1, -1, False, 0, 0, -1, False)
_NO_ATTRIBUTE = Attributes(-1, 0, 0, -1, False, 0)
_NO_FORMAT = TracePointFormat(-1, -1, -1, 0, -1)
TRACEPOINT_ATTR_TYPE = 2

# Older demanglers' spellings that upstream's test rewrites before comparing (TEXTDUMP §6).
UPSTREAM_TEST_REWRITES = (
    ("doublecomplex ", "double _Complex"),
    ("_ZSt3cosIiEN9__gnu_cxx11__enable_ifIXsr12__is_integerIT_EE7__valueEdE6__typeES2_",
     "__gnu_cxx::__enable_if<__is_integer<int>::__value, double>::__type std::cos<int>(int)"),
    ("_ZSt3sinIiEN9__gnu_cxx11__enable_ifIXsr12__is_integerIT_EE7__valueEdE6__typeES2_",
     "__gnu_cxx::__enable_if<__is_integer<int>::__value, double>::__type std::sin<int>(int)"),
    ("_ZSt14__relocate_a_1IddENSt9enable_ifIXsr3std24__is_bitwise_relocatableIT_EE5valueEPS1_"
     "E4typeES2_S2_S2_RSaIT0_E",
     "std::enable_if<std::__is_bitwise_relocatable<double>::value, double*>::type "
     "std::__relocate_a_1<double, double>(double*, double*, double*, std::allocator<double>&)"),
)


def normalize_like_upstream_test(text: str) -> str:
    for old, new in UPSTREAM_TEST_REWRITES:
        text = text.replace(old, new)
    return text


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
        """The frame's location id, then its parents up to the root."""
        lid = frame
        while True:
            yield lid
            lid = self.location(lid).parent_location_id
            if lid == -1:
                return


def variant_text(v: Variant) -> str:
    """QVariant::toString() as Qt5 does it for the types in tracepoint data."""
    t = v.type_id
    if t in (37, 40):
        return chr(v.value & 0xFF)
    if t == 12:
        return v.value.split(b"\0", 1)[0].decode("utf-8", "replace")
    if t in (2, 3, 4, 5, 33, 36):
        return str(v.value)
    return ""


def render(state: StreamState) -> str:
    """All samples in the test client's text format (TEXTDUMP §3)."""
    out: list[str] = []
    put = out.append
    s = state.s
    for smp in state.samples:
        put(f"{state.comm(smp.pid)}\t{smp.pid}\t{smp.tid}\t"
            f"{smp.time // 1_000_000_000}.{smp.time % 1_000_000_000:09d}\n")
        for aid, value in smp.values:
            a = state.attribute(aid)
            put(f"\t{s(a.name)}: ")
            if a.attr_type == TRACEPOINT_ATTR_TYPE:
                f = state.formats.get(a.config, _NO_FORMAT)
                put(f"{s(f.system)} {s(f.name)} {f.flags:x}\n")
                if isinstance(smp, TracePointSample):
                    for key, var in sorted(smp.trace_data, key=lambda kv: kv[0]):
                        put(f"\t\t{s(key)}={variant_text(var)}\n")
            else:
                put(f"{value if a.uses_frequency else a.frequency_or_period}\n")
        put("\n")
        for frame in smp.frames:
            for lid in state.chain(frame):
                loc, sym = state.location(lid), state.symbol(lid)
                put(f"\t{loc.address:x} {loc.rel_addr:x}")
                if loc.file != -1:
                    put(f"\t{s(loc.file)}:{loc.line}:{loc.column}")
                put(f"\t{sym.rel_addr:x} {sym.size:x}")
                if sym.path != -1:
                    put(f"\t{s(sym.name)} {s(sym.binary)} {s(sym.path)}")
                    if sym.is_kernel:
                        put(" [kernel]")
                    if sym.is_inline:
                        put(" (inlined)")
                    if not sym.is_kernel and not sym.is_inline:
                        put(" ")
                put("\n")
        put("\n")
    return "".join(out)


def leaf_symbol(state: StreamState, frame: int) -> Symbol | None:
    """The innermost symbol on a frame's chain (inline instance or function), if any."""
    for lid in state.chain(frame):
        sym = state.symbols.get(lid)
        if sym is not None:
            return sym
    return None


def summary(state: StreamState, top: int = 5) -> str:
    """Per process: samples, top leaf symbols, share of frames without a symbol name."""
    per_pid: dict[int, dict] = {}
    for smp in state.samples:
        p = per_pid.setdefault(smp.pid, {"samples": 0, "frames": 0, "unknown": 0,
                                         "leaves": Counter()})
        p["samples"] += 1
        for i, frame in enumerate(smp.frames):
            sym = leaf_symbol(state, frame)
            name = state.s(sym.name) if sym is not None and sym.name != -1 else "??"
            p["frames"] += 1
            p["unknown"] += name == "??"
            if i == 0:
                p["leaves"][name] += 1
    lines = []
    total_frames = total_unknown = 0
    for pid, p in sorted(per_pid.items(), key=lambda kv: -kv[1]["samples"]):
        total_frames += p["frames"]
        total_unknown += p["unknown"]
        lines.append(f"pid {pid} ({state.comm(pid) or '?'}): {p['samples']} samples, "
                     f"{_share(p['unknown'], p['frames'])} of {p['frames']} frames unresolved")
        for name, count in p["leaves"].most_common(top):
            lines.append(f"  {count:8d}  {name}")
    lines.append(f"total: {len(state.samples)} samples in {len(per_pid)} processes, "
                 f"{_share(total_unknown, total_frames)} of {total_frames} frames unresolved, "
                 f"{len(state.locations)} locations, {len(state.symbols)} symbols, "
                 f"{len(state.strings)} strings")
    return "\n".join(lines) + "\n"


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "0.0%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="stream2text",
        description="Render a QPERFSTREAM like upstream perfparser's test client.")
    ap.add_argument("file", help="stream file, or - for stdin")
    ap.add_argument("--summary", action="store_true", help="short per-process report instead")
    ap.add_argument("--flavour", choices=FLAVOURS, help="protocol flavour (default: detect)")
    args = ap.parse_args(argv)
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
        stream = read_stream(data, args.flavour)
    except (OSError, ProtocolError) as e:
        print(f"stream2text: {args.file}: {e}", file=sys.stderr)
        return 2
    if stream.trailing_bytes:
        print(f"stream2text: ignoring incomplete last message ({len(stream.trailing_bytes)} "
              "bytes)", file=sys.stderr)
    state = StreamState.from_messages(stream.messages)
    text = summary(state) if args.summary else render(state)
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
