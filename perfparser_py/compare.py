"""Semantic comparison of two QPERFSTREAMs: ours against a reference perfparser.

Runs both parsers on one perf.data (or takes saved streams), decodes each stream in its own
auto-detected flavour and compares what hotspot would show, not bytes: per process and
thread the sample counts, time ranges, cpus and event value sums; per sample (aligned by
tid, time and order) the logical frames (symbol, binary, file:line, inline) leaf to root.
`main()` is the `compare` command: exit 0 when equal within --tolerance, 1 when not, 2 on
error.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import shlex
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .protocol import ProtocolError, read_stream
from .textdump import StreamState

DEBIAN_REFERENCE = "/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser"
# perfparser options that say how to read the recording: given to both parsers
PARSER_OPTIONS = ("app", "sysroot", "extra", "debug", "kallsyms", "arch", "perf-map-path",
                  "max-frames", "buffer-size", "max-buffer-size")
UNKNOWN = "??"

# A logical frame: (symbol name, binary, "file:line" or "", is_inline)
Frame = tuple[str, str, str, bool]


class CompareError(Exception):
    """A side could not be produced or decoded."""


@dataclass
class Side:
    """One decoded stream reduced to what the comparison looks at."""

    label: str
    flavour: str
    state: StreamState
    samples: list[tuple]  # (pid, tid, time, cpu, values, frames) per sample, stream order
    exit_code: int | None = None
    notes: list[str] = field(default_factory=list)


def logical_frames(state: StreamState, frame_ids: list[int]) -> tuple[Frame, ...]:
    """Expand a sample's frames into inline-aware logical frames, leaf to root.

    Each symbol on a frame's location chain is one logical frame; its position is the
    file:line of the location below it (the leaf address or an inline call site).
    """
    s = state.s
    out: list[Frame] = []
    for fid in frame_ids:
        pending = ""
        first = True
        found = False
        for lid in state.chain(fid):
            loc = state.location(lid)
            pos = f"{source_path(s(loc.file))}:{loc.line}" if loc.file != -1 else ""
            sym = state.symbols.get(lid)
            if sym is None:
                pending = pos
            else:
                name = s(sym.name) if sym.name != -1 else UNKNOWN
                binary = s(sym.binary) or s(sym.path)  # kernel and special maps: no binary
                out.append((name, binary, pos if first else pending, sym.is_inline))
                pending = ""
                found = True
            first = False
        if not found:
            leaf = state.location(fid)
            out.append((UNKNOWN, "", f"{source_path(s(leaf.file))}:{leaf.line}"
                        if leaf.file != -1 else "", False))
    return tuple(out)


def source_path(path: str) -> str:
    """A source path as both parsers mean it: lexically normalised, without the leading `..`
    that only says where the compiler ran. Parsers join a line table's directory and file
    names differently (`./csu/../sysdeps/x.h` against `../sysdeps/x.h` for one glibc file),
    and that spelling is not a difference a user sees in hotspot."""
    if not path:
        return path
    path = posixpath.normpath(path)
    while path.startswith("../"):
        path = path[3:]
    return path


def decode_side(label: str, data: bytes, exit_code: int | None = None) -> Side:
    try:
        stream = read_stream(data)
    except ProtocolError as e:
        raise CompareError(f"{label}: corrupt stream: {e}") from None
    state = StreamState.from_messages(stream.messages)
    samples = []
    for m in state.samples:
        values = tuple(sorted((state.s(state.attribute(a).name), v) for a, v in m.values))
        samples.append((m.pid, m.tid, m.time, m.cpu, values, logical_frames(state, m.frames)))
    side = Side(label, stream.flavour, state, samples, exit_code)
    if stream.trailing_bytes:
        side.notes.append(f"incomplete last message ({len(stream.trailing_bytes)} bytes)")
    return side


def classify(ours: tuple[Frame, ...], ref: tuple[Frame, ...]) -> str:
    """Name the kind of difference between two logical frame lists."""
    if [f[0] for f in ours] == [f[0] for f in ref]:
        if [f[1] for f in ours] != [f[1] for f in ref]:
            return "different binary"
        if [f[3] for f in ours] != [f[3] for f in ref]:
            return "different inline expansion"
        return "different file:line"
    outer_ours = [f[:2] for f in ours if not f[3]]
    outer_ref = [f[:2] for f in ref if not f[3]]
    if outer_ours == outer_ref:
        return "different inline expansion"
    if len(outer_ours) != len(outer_ref):
        return "extra frames" if len(outer_ours) > len(outer_ref) else "missing frames"
    for a, b in zip(outer_ours, outer_ref, strict=True):
        if a != b:
            if a[0] == UNKNOWN:
                return "missing symbol (ours)"
            if b[0] == UNKNOWN:
                return "missing symbol (reference)"
            return "different symbol" if a[0] != b[0] else "different binary"
    return "different inline expansion"


def _keyed(samples: list[tuple]) -> dict[tuple[int, int, int], tuple]:
    """Samples by (tid, time, n-th sample with that tid and time)."""
    seen: Counter = Counter()
    out = {}
    for smp in samples:
        k = (smp[1], smp[2])
        out[(*k, seen[k])] = smp
        seen[k] += 1
    return out


def _thread_stats(samples: list[tuple]) -> dict[tuple[int, int], dict]:
    stats: dict[tuple[int, int], dict] = {}
    for pid, tid, time, cpu, values, _frames in samples:
        t = stats.setdefault((pid, tid), {"samples": 0, "first": time, "last": time,
                                          "cpus": set(), "values": Counter()})
        t["samples"] += 1
        t["first"] = min(t["first"], time)
        t["last"] = max(t["last"], time)
        t["cpus"].add(cpu)
        for name, v in values:
            t["values"][name] += v
    return stats


def _symbolization(samples: list[tuple]) -> dict[int, float]:
    frames: Counter = Counter()
    known: Counter = Counter()
    for smp in samples:
        frames[smp[0]] += len(smp[5])
        known[smp[0]] += sum(f[0] != UNKNOWN for f in smp[5])
    return {pid: known[pid] / n for pid, n in frames.items() if n}


def _frame_text(f: Frame) -> str:
    return f"{f[0]} [{f[1]}] {f[2]}{' (inlined)' if f[3] else ''}"


def compare(ours: Side, ref: Side, show: int = 5) -> dict:
    """The comparison report as a JSON-ready dict."""
    a, b = _keyed(ours.samples), _keyed(ref.samples)
    kinds: Counter = Counter()
    identical = 0
    shown = []
    for key in sorted(a.keys() | b.keys()):
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            kind = "sample only in reference" if x is None else "sample only in ours"
        else:
            problems = []
            if x[5] != y[5]:
                problems.append(classify(x[5], y[5]))
            if x[4] != y[4]:
                problems.append("different values")
            if x[0] != y[0] or x[3] != y[3]:
                problems.append("different pid/cpu")
            if not problems:
                identical += 1
                continue
            kind = problems[0]
            kinds.update(problems[1:])
        kinds[kind] += 1
        if len(shown) < show:
            shown.append({
                "tid": key[0], "time": key[1], "kind": kind,
                "ours": [_frame_text(f) for f in x[5]] if x else None,
                "reference": [_frame_text(f) for f in y[5]] if y else None,
            })
    total = len(a.keys() | b.keys())
    ta, tb = _thread_stats(ours.samples), _thread_stats(ref.samples)
    threads = []
    for pid, tid in sorted(ta.keys() | tb.keys()):
        sa, sb = ta.get((pid, tid)), tb.get((pid, tid))
        diff = {}
        for k in ("samples", "first", "last"):
            va, vb = (sa or {}).get(k), (sb or {}).get(k)
            if va != vb:
                diff[k] = [va, vb]
        for k in ("cpus", "values"):
            va = sorted((sa or {}).get(k, ())) if k == "cpus" else dict((sa or {}).get(k, {}))
            vb = sorted((sb or {}).get(k, ())) if k == "cpus" else dict((sb or {}).get(k, {}))
            if va != vb:
                diff[k] = [va, vb]
        if diff:
            threads.append({"pid": pid, "tid": tid, **diff})
    ra, rb = _symbolization(ours.samples), _symbolization(ref.samples)
    symbolization = [
        {"pid": pid, "comm": ours.state.comm(pid) or ref.state.comm(pid),
         "ours": round(ra.get(pid, 0.0), 4), "reference": round(rb.get(pid, 0.0), 4)}
        for pid in sorted(ra.keys() | rb.keys())
        if abs(ra.get(pid, 0.0) - rb.get(pid, 0.0)) > 0.0005
    ]
    return {
        "ours": _side_info(ours), "reference": _side_info(ref),
        "samples": {"ours": len(ours.samples), "reference": len(ref.samples),
                    "aligned": len(a.keys() & b.keys()), "identical": identical,
                    "identical_percent": round(100.0 * identical / total, 3) if total else 100.0},
        "differences": dict(kinds.most_common()),
        "threads": threads,
        "symbolization": symbolization,
        "first_differences": shown,
    }


def _side_info(side: Side) -> dict:
    return {"flavour": side.flavour, "exit_code": side.exit_code, "notes": side.notes}


def is_equal(report: dict, tolerance: float) -> bool:
    """Equal when at most `tolerance` percent of samples differ and the exit codes agree
    (when both sides were run; a saved stream has none)."""
    codes = (report["ours"]["exit_code"], report["reference"]["exit_code"])
    same_exit = None in codes or codes[0] == codes[1]
    return same_exit and 100.0 - report["samples"]["identical_percent"] <= tolerance


def format_report(report: dict) -> str:
    s = report["samples"]
    lines = [
        f"ours: flavour {report['ours']['flavour']}, exit {report['ours']['exit_code']}; "
        f"reference: flavour {report['reference']['flavour']}, "
        f"exit {report['reference']['exit_code']}",
        f"samples: ours {s['ours']}, reference {s['reference']}, aligned {s['aligned']}, "
        f"identical {s['identical']} ({s['identical_percent']}%)",
    ]
    for side in ("ours", "reference"):
        lines += [f"{side}: {note}" for note in report[side]["notes"]]
    if report["differences"]:
        lines.append("differences:")
        lines += [f"  {n:8d}  {kind}" for kind, n in report["differences"].items()]
    for t in report["threads"]:
        detail = ", ".join(f"{k} {v[0]} vs {v[1]}" for k, v in t.items() if k not in
                           ("pid", "tid"))
        lines.append(f"thread {t['pid']}/{t['tid']}: {detail}")
    for p in report["symbolization"]:
        lines.append(f"symbolized frames of pid {p['pid']} ({p['comm']}): "
                     f"ours {100 * p['ours']:.1f}%, reference {100 * p['reference']:.1f}%")
    for d in report["first_differences"]:
        lines.append(f"--- tid {d['tid']} time {d['time']}: {d['kind']}")
        ours, ref = d["ours"] or [], d["reference"] or []
        width = max((len(x) for x in ours), default=4)
        for i in range(max(len(ours), len(ref))):
            x = ours[i] if i < len(ours) else ""
            y = ref[i] if i < len(ref) else ""
            lines.append(f"  {'=' if x == y else '!'} {x:<{width}}  | {y}")
    return "\n".join(lines) + "\n"


def own_parser() -> tuple[list[str], dict[str, str]]:
    """The command that runs this package's parser with this interpreter, and its
    environment. A tool run from a source checkout (tools/compare, tools/perfdiff) put the
    checkout first on its own path only: the checkout goes first on the parser's
    PYTHONPATH too, so that the parser run is the tool's, installed anywhere or not."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ)
    if all(not p or Path(p).resolve() != root for p in sys.path[1:]):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), env.get("PYTHONPATH"))))
    return [sys.executable, "-m", "perfparser_py.cli"], env


def run_parser(label: str, command: list[str], perf_data: str, parser_args: list[str],
               timeout: float, env: dict[str, str] | None = None) -> tuple[bytes, int, str]:
    """(stdout, exit code, the last line of stderr) of `command` run on `perf_data`."""
    try:
        proc = subprocess.run([*command, "--input", perf_data, *parser_args],
                              capture_output=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompareError(f"{label}: cannot run {shlex.join(command)}: {e}") from None
    said = proc.stderr.decode(errors="replace").strip().splitlines()
    return proc.stdout, proc.returncode, said[-1] if said else ""


def _side(label: str, stream: str | None, command: list[str] | None, perf_data: str | None,
          parser_args: list[str], timeout: float, env: dict[str, str] | None = None) -> Side:
    if stream is not None:
        try:
            return decode_side(label, Path(stream).read_bytes())
        except OSError as e:
            raise CompareError(f"{label}: {e}") from None
    if perf_data is None or command is None:
        raise CompareError(f"{label}: need a perf.data file or --{label}-stream")
    data, code, said = run_parser(label, command, perf_data, parser_args, timeout, env)
    try:
        return decode_side(label, data, code)
    except CompareError as e:
        # a parser that wrote no stream says why on stderr (a crash, a missing module)
        raise CompareError(f"{e}; it exited {code}" + (f": {said}" if said else "")) from None


def default_reference() -> list[str] | None:
    exe = os.environ.get("PERFPARSER_REFERENCE") or DEBIAN_REFERENCE
    return [exe] if os.environ.get("PERFPARSER_REFERENCE") or Path(exe).exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="perfparser-compare",
        description="Compare our perfparser's stream with a reference perfparser's, "
                    "semantically. The parser options below and any arguments after -- are "
                    "passed to both parsers.")
    ap.add_argument("perf_data", nargs="?", help="perf.data to run both parsers on")
    ap.add_argument("--ours", help="our parser command (default: python -m perfparser_py.cli)")
    ap.add_argument("--reference", help="reference parser command (default: "
                    f"$PERFPARSER_REFERENCE or {DEBIAN_REFERENCE})")
    ap.add_argument("--ours-stream", help="saved stream instead of running our parser")
    ap.add_argument("--reference-stream", help="saved stream instead of running the reference")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--tolerance", type=float, default=0.0,
                    help="percent of samples that may differ and still count as equal")
    ap.add_argument("--show", type=int, default=5, help="differing samples to show")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per parser run")
    passed = ap.add_argument_group("parser options (passed to both parsers)")
    for name in PARSER_OPTIONS:
        passed.add_argument(f"--{name}", dest=f"parser_{name}", metavar=name.upper())
    argv = sys.argv[1:] if argv is None else argv
    parser_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, parser_args = argv[:cut], argv[cut + 1:]
    args = ap.parse_args(argv)
    given = [(f"--{name}", getattr(args, f"parser_{name}")) for name in PARSER_OPTIONS]
    parser_args = [arg for pair in given if pair[1] is not None for arg in pair] + parser_args
    ours_cmd, ours_env = (shlex.split(args.ours), None) if args.ours else own_parser()
    ref_cmd = shlex.split(args.reference) if args.reference else default_reference()
    try:
        if args.reference_stream is None and ref_cmd is None:
            raise CompareError("no reference parser: set $PERFPARSER_REFERENCE, pass "
                               "--reference or --reference-stream")
        ours = _side("ours", args.ours_stream, ours_cmd, args.perf_data, parser_args,
                     args.timeout, ours_env)
        ref = _side("reference", args.reference_stream, ref_cmd, args.perf_data, parser_args,
                    args.timeout)
    except CompareError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    report = compare(ours, ref, args.show)
    equal = is_equal(report, args.tolerance)
    report["equal"] = equal
    text = json.dumps(report, indent=1) + "\n" if args.json else format_report(report)
    sys.stdout.write(text)
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
