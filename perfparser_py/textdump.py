"""Render a QPERFSTREAM as text: upstream's test-client dump (spec/TEXTDUMP.md) or a summary.

`render()` reproduces upstream's `*.expected.txt` format byte for byte; `main()` is the
`stream2text` command, which also prints the views of `reports` (summary, folded stacks).
"""

from __future__ import annotations

import argparse
import sys

from .protocol import (
    FLAVOURS,
    ProtocolError,
    TracePointFormat,
    TracePointSample,
    Variant,
    read_stream,
)
from .perfdata.abi import TYPE_TRACEPOINT
from .stream_state import StreamState

_NO_FORMAT = TracePointFormat(-1, -1, -1, 0, -1)

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
            if a.attr_type == TYPE_TRACEPOINT:
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


def main(argv: list[str] | None = None) -> int:
    from . import reports

    ap = argparse.ArgumentParser(
        prog="perfparser-stream2text",
        description="Render a QPERFSTREAM like upstream perfparser's test client, or as a "
                    "summary or folded stacks.")
    ap.add_argument("file", help="stream file, or - for stdin")
    view = ap.add_mutually_exclusive_group()
    view.add_argument("--summary", action="store_true",
                      help="per process: hottest functions (self and total %%), hottest call "
                           "paths, and the unresolved frames by library with their fix")
    view.add_argument("--folded", action="store_true",
                      help="folded stacks for flamegraph.pl, inferno or speedscope")
    ap.add_argument("--json", action="store_true", help="with --summary: the summary as JSON")
    ap.add_argument("--top", type=int, default=5, metavar="N",
                    help="rows per table in --summary (default 5)")
    ap.add_argument("--pid", type=_int_list, action="extend", default=[], metavar="PID[,PID]",
                    help="only these processes")
    ap.add_argument("--tid", type=_int_list, action="extend", default=[], metavar="TID[,TID]",
                    help="only these threads")
    ap.add_argument("--comm", action="append", default=[], metavar="NAME",
                    help="only threads or processes of this command name")
    ap.add_argument("--time", type=reports.parse_time_range, metavar="START,END",
                    help="only samples in this time range, in seconds as perf script prints "
                         "times (either side may be empty)")
    ap.add_argument("--max-unresolved", type=float, metavar="PCT",
                    help="exit 1 when more than PCT %% of the selected frames are unresolved "
                         "(a CI check that symbols did not go missing)")
    ap.add_argument("--flavour", choices=FLAVOURS, help="protocol flavour (default: detect)")
    args = ap.parse_args(argv)
    if args.json and not args.summary:
        ap.error("--json goes with --summary")
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
    start, end = args.time or (None, None)
    selection = reports.Selection(frozenset(args.pid), frozenset(args.tid),
                                  frozenset(args.comm), start, end)
    stacks = reports.Stacks(state, selection)
    analysis = reports.analyse(stacks) if args.summary or args.max_unresolved is not None \
        else None
    if args.summary:
        text = (reports.summary_json(analysis) if args.json
                else reports.summary_text(analysis, args.top))
    elif args.folded:
        text = reports.folded(stacks)
    elif selection != reports.Selection():
        state.samples = [smp for smp, _frames in stacks]
        text = render(state)
    else:
        text = render(state)
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    if args.max_unresolved is not None and \
            analysis["unresolved_percent"] > args.max_unresolved:
        print(f"stream2text: {analysis['unresolved_percent']:.1f}% of "
              f"{analysis['frames']} frames unresolved, more than the "
              f"{args.max_unresolved:g}% allowed", file=sys.stderr)
        return 1
    return 0


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None


if __name__ == "__main__":
    sys.exit(main())
