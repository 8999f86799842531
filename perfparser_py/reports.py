"""Views of a decoded stream for people and pipelines, without hotspot: folded stacks, a summary
with self and total shares per function, the hottest call paths, and the unresolved frames by
library with their cause and fix; as text or JSON. `stream2text` (textdump.main) prints them.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import probes
from .diagnostics import KERNEL_BINARY, cause_of, is_position_name
from .stream_state import StreamState

UNKNOWN = "??"


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a stack as a person reads it: an inlined function is a frame of its own."""

    name: str  # UNKNOWN when no symbol was found
    library: str  # the binary's file name, "" outside every mapping
    path: str  # the recorded path of the binary
    found: bool  # the binary was found on this machine
    kernel: bool

    @property
    def resolved(self) -> bool:
        return self.name != UNKNOWN and not is_position_name(self.name)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which samples a view counts (stream2text's --pid, --tid, --comm and --time)."""

    pids: frozenset[int] = frozenset()
    tids: frozenset[int] = frozenset()
    comms: frozenset[str] = frozenset()
    start_ns: int | None = None
    end_ns: int | None = None

    def takes(self, state: StreamState, pid: int, tid: int, time: int) -> bool:
        return ((not self.pids or pid in self.pids)
                and (not self.tids or tid in self.tids)
                and (not self.comms or state.comm(tid) in self.comms
                     or state.comm(pid) in self.comms)
                and (self.start_ns is None or time >= self.start_ns)
                and (self.end_ns is None or time <= self.end_ns))


def parse_time_range(text: str) -> tuple[int | None, int | None]:
    """`START,END` in seconds as perf script prints times (either side may be empty), as
    `perf script --time` takes it; returns nanoseconds."""
    start, sep, end = text.partition(",")
    if not sep:
        raise ValueError(f"expected START,END in seconds, got {text!r}")

    def ns(part: str) -> int | None:
        part = part.strip()
        if not part:
            return None
        whole, _, frac = part.partition(".")
        if not (whole or frac) or not (whole + frac).isdigit():
            raise ValueError(f"not a time in seconds: {part!r}")
        return int(whole or 0) * 1_000_000_000 + int((frac + "000000000")[:9])

    return ns(start), ns(end)


class Stacks:
    """The selected samples of a stream, each as its frames leaf first (inline frames
    expanded, innermost first), with frames built once per location id."""

    def __init__(self, state: StreamState, selection: Selection = Selection()) -> None:
        self.state = state
        self.selection = selection
        self._frames: dict[int, tuple[Frame, ...]] = {}

    def __iter__(self) -> Iterator[tuple[object, list[Frame]]]:
        st, takes = self.state, self.selection.takes
        for smp in st.samples:
            if not takes(st, smp.pid, smp.tid, smp.time):
                continue
            frames: list[Frame] = []
            for lid in smp.frames:
                frames.extend(self.frames_of(lid))
            yield smp, frames

    def frames_of(self, lid: int) -> tuple[Frame, ...]:
        got = self._frames.get(lid)
        if got is None:
            got = self._frames[lid] = self._build(lid)
        return got

    def _build(self, lid: int) -> tuple[Frame, ...]:
        st = self.state
        out = []
        for loc in st.chain(lid):
            sym = st.symbols.get(loc)
            if sym is None:
                continue
            name = st.s(sym.name) if sym.name != -1 else ""
            path = st.s(sym.path) if sym.path != -1 else ""
            library = st.s(sym.binary) if sym.binary != -1 else ""
            if sym.is_kernel:
                library = library or KERNEL_BINARY
            else:  # a Symbol without a binary name ([vdso]'s) is named by its path
                library = library or os.path.basename(path)
            out.append(Frame(name or UNKNOWN, library, path,
                             _found(path, st.s(sym.actual_path) if sym.actual_path != -1 else ""),
                             sym.is_kernel))
        # a location without any symbol lies outside every mapping (PROTOCOL §6.2)
        return tuple(out) or (Frame(UNKNOWN, "", "", False, False),)


def _found(path: str, actual: str) -> bool:
    """Whether the parser had the binary. The stream says where it looked for it, not whether
    it was there: the recorded path stands in for a file it did not find, so that case is
    told by the file being there (on this machine, which is usually the parser's)."""
    return bool(actual) and (actual != path or probes.isfile(actual))


def folded(stacks: Stacks) -> str:
    """One line per distinct stack, `comm;outermost;...;leaf count`, in the format
    flamegraph.pl, inferno and speedscope read (stackcollapse-perf's, with the command first)."""
    counts: Counter[str] = Counter()
    st = stacks.state
    for smp, frames in stacks:
        names = [_folded_name(f) for f in reversed(frames)]
        counts[";".join([_folded_name_text(st.comm(smp.tid) or st.comm(smp.pid) or "?"),
                         *names])] += 1
    return "".join(f"{stack} {n}\n" for stack, n in sorted(counts.items()))


def _folded_name(f: Frame) -> str:
    if f.resolved:
        return _folded_name_text(f.name)
    return f"[{f.library}]" if f.library else "[unknown]"


def _folded_name_text(name: str) -> str:
    # ';' separates frames and a newline ends the line in the folded format
    return name.replace(";", ":").replace("\n", " ")


@dataclass
class _Process:
    """What one process's samples add up to (analyse keeps them by pid)."""

    comm: str
    samples: int = 0
    frames: int = 0
    unresolved: int = 0
    self_cost: Counter = field(default_factory=Counter)
    total_cost: Counter = field(default_factory=Counter)
    paths: Counter = field(default_factory=Counter)


@dataclass
class _Unresolved:
    library: str
    path: str
    kernel: bool
    found: bool
    frames: int = 0


PATH_DEPTH = 5  # call paths show their innermost frames, where the cost is


def analyse(stacks: Stacks) -> dict:
    """Everything the summary shows, as plain data (the JSON form)."""
    st = stacks.state
    procs: dict[int, _Process] = {}
    unresolved: dict[tuple[str, str, bool], _Unresolved] = {}
    for smp, frames in stacks:
        p = procs.get(smp.pid)
        if p is None:
            p = procs[smp.pid] = _Process(st.comm(smp.pid) or st.comm(smp.tid))
        p.samples += 1
        # the stack's entries, not its inline-expanded frames: an unresolved entry expands to
        # one frame, and the parser's end-of-run summary counts the same way
        p.frames += len(smp.frames)
        for f in frames:
            if not f.resolved:
                p.unresolved += 1
                key = (f.library, f.path, f.kernel)
                u = unresolved.get(key)
                if u is None:
                    u = unresolved[key] = _Unresolved(f.library, f.path, f.kernel, f.found)
                u.frames += 1
        if frames:
            p.self_cost[(frames[0].name, frames[0].library)] += 1
        for fn in {(f.name, f.library) for f in frames}:
            p.total_cost[fn] += 1
        p.paths[tuple(f.name for f in reversed(frames[:PATH_DEPTH]))
                + (len(frames) > PATH_DEPTH,)] += 1
    samples = sum(p.samples for p in procs.values())
    frames_total = sum(p.frames for p in procs.values())
    unresolved_total = sum(p.unresolved for p in procs.values())
    return {
        "samples": samples,
        "frames": frames_total,
        "unresolved_frames": unresolved_total,
        "unresolved_percent": _percent(unresolved_total, frames_total),
        "processes": [_process_data(pid, p, samples) for pid, p in
                      sorted(procs.items(), key=lambda kv: (-kv[1].samples, kv[0]))],
        "unresolved_by_library": [
            {"library": u.library or "[unknown]", "path": u.path, "frames": u.frames,
             "percent": _percent(u.frames, frames_total), **_cause(u)}
            for u in sorted(unresolved.values(), key=lambda u: (-u.frames, u.library))],
    }


def _process_data(pid: int, p: _Process, samples: int) -> dict:
    def share(key: tuple[str, str]) -> tuple[int, int]:
        return p.self_cost[key], p.total_cost[key]

    return {
        "pid": pid, "comm": p.comm, "samples": p.samples,
        "percent": _percent(p.samples, samples),
        "frames": p.frames, "unresolved_frames": p.unresolved,
        "unresolved_percent": _percent(p.unresolved, p.frames),
        # every function on a stack, hottest self cost first; total counts a sample once
        # however often the function is on its stack (inclusive cost)
        "functions": [{"name": name, "library": lib,
                       "self_percent": _percent(share((name, lib))[0], p.samples),
                       "total_percent": _percent(share((name, lib))[1], p.samples)}
                      for name, lib in sorted(p.total_cost, key=lambda k: (
                          -share(k)[0], -share(k)[1], k))],
        "paths": [{"frames": list(path[:-1]), "truncated": path[-1], "samples": n,
                   "percent": _percent(n, p.samples)}
                  # names then the truncation flag: paths of other lengths never compare a
                  # flag with a name
                  for path, n in sorted(p.paths.items(),
                                        key=lambda kv: (-kv[1], kv[0][:-1], kv[0][-1]))],
    }


def _cause(u: _Unresolved) -> dict:
    """Why the frames of one library have no name, and what makes them resolve."""
    c = cause_of(u.library, u.kernel, u.found)
    return {"cause": c.cause, "fix": c.fix}


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def summary_text(data: dict, top: int = 5) -> str:
    """The summary for people: per process its hottest functions (self and total), its
    hottest call paths, then the unresolved frames by library."""
    lines = []
    for p in data["processes"]:
        lines.append(f"pid {p['pid']} ({p['comm'] or '?'}): {p['samples']} samples "
                     f"({p['percent']:.1f}%), {p['unresolved_percent']:.1f}% of {p['frames']} "
                     "frames unresolved")
        lines.append(f"  {'self':>6} {'total':>6}  function [library]")
        for fn in p["functions"][:top]:
            lines.append(f"  {fn['self_percent']:5.1f}% {fn['total_percent']:5.1f}%  "
                         f"{fn['name']}{_library(fn['library'])}")
        lines.append("  hottest call paths (caller > callee):")
        for path in p["paths"][:top]:
            shown = " > ".join(path["frames"])
            lines.append(f"  {path['percent']:5.1f}%  {'... > ' if path['truncated'] else ''}"
                         f"{shown}")
    lines.append(f"total: {data['samples']} samples in {len(data['processes'])} processes, "
                 f"{data['unresolved_percent']:.1f}% of {data['frames']} frames unresolved")
    if data["unresolved_by_library"]:
        lines.append("unresolved frames by library:")
        for u in data["unresolved_by_library"][:top * 2]:
            lines.append(f"  {u['percent']:5.1f}%  {u['library']}: {u['cause']}; {u['fix']}")
    return "\n".join(lines) + "\n"


def _library(name: str) -> str:
    if not name or name.startswith("["):  # "[kernel.kallsyms]", "[vdso]" come bracketed
        return f" {name}" if name else ""
    return f" [{name}]"


def summary_json(data: dict) -> str:
    return json.dumps(data, indent=1) + "\n"
