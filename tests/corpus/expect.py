"""Evaluate a corpus case.toml's [[expect]] entries on our decoded output stream.

Semantics are those of ../shared/corpus/README.md ("[[expect]] semantics"): frames leaf first,
kernel frames are those resolved in the kernel table, user_stack_prefix compares real
(non-inlined) functions only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from perfparser_py import protocol as P

REPO = Path(__file__).resolve().parents[2]
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()


@dataclass
class Frame:
    sym: str | None  # the real (non-inlined) function
    dso: str | None
    kernel: bool
    # logical frames, inner first: (name, inlined, source file, line) where the line is the
    # executing line for the innermost one and the call site for each caller
    chain: list[tuple[str | None, bool, str | None, int]] = field(default_factory=list)


@dataclass
class DecodedSample:
    pid: int
    tid: int
    time: int
    comm: str
    event: str
    frames: list[Frame]


def decode(data: bytes) -> tuple[list[DecodedSample], P.Stream]:
    stream = P.read_stream(data)
    strings: dict[int, bytes] = {}
    locations: dict[int, P.Location] = {}
    symbols: dict[int, P.Symbol] = {}
    attrs: dict[int, str] = {}
    comms: dict[int, str] = {}
    cache: dict[int, Frame] = {}
    samples: list[DecodedSample] = []

    def s(i: int) -> str | None:
        return strings[i].decode("utf-8", "replace") if i >= 0 else None

    def frame(lid: int) -> Frame:
        f = cache.get(lid)
        if f is not None:
            return f
        chain = []
        real = None
        sym_def = None
        cur = lid
        line_loc = locations[lid]
        seen = 0
        while cur >= 0 and seen < 1000:
            sd = symbols.get(cur)
            if sd is None and cur != lid:
                line_loc = locations[cur]  # an inline call site: the caller's line
            if sd is not None:
                chain.append((s(sd.name), sd.is_inline, s(line_loc.file), line_loc.line))
                if sym_def is None:
                    sym_def = sd
                if not sd.is_inline:
                    real = sd
                    break
            cur = locations[cur].parent_location_id
            seen += 1
        top = real or sym_def
        f = Frame(
            sym=s(top.name) if top else None,
            dso=s(top.binary) if top else None,
            kernel=bool(top.is_kernel) if top else False,
            chain=chain,
        )
        cache[lid] = f
        return f

    for m in stream.messages:
        t = type(m)
        if t is P.String:
            strings[m.id] = m.string
        elif t is P.Location:
            locations[m.id] = m
            cache.clear()
        elif t is P.Symbol:
            symbols[m.id] = m
            cache.clear()
        elif t is P.Attributes:
            attrs[m.id] = s(m.name) or ""
        elif t is P.Command:
            comms[m.tid] = s(m.comm) or ""
        elif t is P.ThreadStart and m.tid not in comms:
            comms[m.tid] = comms.get(m.ppid, "")  # a new task runs under its parent's name
        elif t in (P.Sample, P.TracePointSample):
            aid = m.values[0][0] if m.values else -1
            samples.append(
                DecodedSample(
                    m.pid, m.tid, m.time, comms.get(m.tid, ""), attrs.get(aid, ""),
                    [frame(i) for i in m.frames],
                )
            )
    return samples, stream


def user_frames(sample: DecodedSample) -> list[Frame]:
    return [f for f in sample.frames if not f.kernel]


def run_parser(args: list[str], cwd: str | None = None, timeout: float = 300,
               stdin=None, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
    """Our parser: the frozen executable if PERFPARSER_EXE is set, else the package."""
    exe = os.environ.get("PERFPARSER_EXE")
    cmd = [exe] if exe else [sys.executable, "-m", "perfparser_py.cli"]
    return subprocess.run(cmd + args, stdout=subprocess.PIPE, stderr=stderr, timeout=timeout,
                          cwd=cwd, stdin=stdin)


def case_options(case_dir: Path) -> list[str]:
    """Parser options for a recorded case: its directory as --app, the corpus sysroot."""
    opts = ["--app", str(case_dir), "--sysroot", str(CORPUS / "sysroot") + "/",
            "--debug", str(CORPUS / "sysroot" / "usr" / "lib" / "debug")]
    kallsyms = CORPUS / "kallsyms"
    files = sorted(kallsyms.glob("*")) if kallsyms.is_dir() else []
    if files:
        opts += ["--kallsyms", str(files[0])]
    else:
        opts += ["--kallsyms", "/dev/null"]
    return opts


def case_args(case_dir: Path, data_name: str) -> list[str]:
    """The parser's arguments for one recording of a case: case_options plus its perf map."""
    args = ["--input", str(case_dir / data_name), *case_options(case_dir)]
    perf_map = load_case(case_dir).get("parser", {}).get("perf_map_path")
    if perf_map:
        # the value may carry prose after the path: ". (this directory holds ...)"
        args += ["--perf-map-path", str((case_dir / perf_map.split()[0]).resolve())]
    return args


def load_case(case_dir: Path) -> dict:
    return tomllib.loads((case_dir / "case.toml").read_text())


def evaluate_inline(expect: dict, samples: list[DecodedSample], symbols_table: dict) -> tuple[bool, str]:
    """kind="inline": the leading logical frames (inline expansion included) of each sample."""
    flt = expect.get("filter", {})
    sel = [s for s in samples if s.comm == flt.get("comm", s.comm)]
    want = expect["leaf_chain"]

    def ok(sample: DecodedSample) -> bool:
        logical = [c for f in user_frames(sample) for c in f.chain]
        if len(logical) < len(want):
            return False
        for (name, inlined, file, line), w in zip(logical, want, strict=False):
            alt = symbols_table.get(w["symbol"], {})
            if name not in (w["symbol"], alt.get("mangled"), alt.get("no_params")):
                return False
            if inlined != w["inlined"] or os.path.basename(file or "") != w["file"]:
                return False
            if line not in w["lines"]:
                return False
        return True

    match = sum(1 for x in sel if ok(x))
    frac = match / len(sel) if sel else 0.0
    example = next((x for x in sel if not ok(x)), None)
    detail = f" first failing: {[c for f in user_frames(example) for c in f.chain][:5]}" if example else ""
    return frac >= expect.get("min_fraction", 0.0) and bool(sel), f"{expect.get('id')}: {match}/{len(sel)} ({frac:.3f}){detail}"


def evaluate(expect: dict, samples: list[DecodedSample], symbols_table: dict) -> tuple[bool, str]:
    """One kind="samples" expectation; returns (passed, explanation)."""
    flt = expect.get("filter", {})

    def norm_ok(have: str | None, want: str) -> bool:
        if have is None:
            return False
        alt = symbols_table.get(want, {})
        return have in (want, alt.get("mangled"), alt.get("no_params"))

    def base(dso: str | None) -> str | None:
        return os.path.basename(dso) if dso else dso

    def keep(s: DecodedSample) -> bool:
        if "comm" in flt and s.comm != flt["comm"]:
            return False
        if "comm_regex" in flt and not re.fullmatch(flt["comm_regex"], s.comm):
            return False
        if "pid" in flt and s.pid != flt["pid"]:
            return False
        if "tid" in flt and s.tid != flt["tid"]:
            return False
        if "time_min" in flt and s.time / 1e9 < flt["time_min"]:
            return False
        if "time_max" in flt and s.time / 1e9 > flt["time_max"]:
            return False
        if "event" in flt and not s.event.startswith(flt["event"]):
            return False
        if "stack_has" in flt and not any(norm_ok(f.sym, flt["stack_has"]) for f in s.frames):
            return False
        uf = user_frames(s)
        if "user_leaf_symbol" in flt and not (uf and norm_ok(uf[0].sym, flt["user_leaf_symbol"])):
            return False
        if "user_leaf_dso" in flt and not (uf and base(uf[0].dso) == flt["user_leaf_dso"]):
            return False
        return True

    def ok(s: DecodedSample) -> bool:
        uf = user_frames(s)
        if "user_leaf" in expect:
            want = expect["user_leaf"]
            if not uf:
                return False
            if "symbol" in want and not norm_ok(uf[0].sym, want["symbol"]):
                return False
            if "dso" in want and base(uf[0].dso) != want["dso"]:
                return False
        if "user_leaf_any" in expect:
            if not uf or not any(
                norm_ok(uf[0].sym, w["symbol"]) and base(uf[0].dso) == w.get("dso", base(uf[0].dso))
                for w in expect["user_leaf_any"]
            ):
                return False
        if "user_stack_prefix" in expect:
            pre = expect["user_stack_prefix"]
            if len(uf) < len(pre) or not all(norm_ok(f.sym, w) for f, w in zip(uf, pre, strict=False)):
                return False
        if "stack_contains" in expect:
            for w in expect["stack_contains"]:
                if not any(norm_ok(f.sym, w) for f in s.frames):
                    return False
        if "forbid_dso" in expect and any(base(f.dso) == expect["forbid_dso"] for f in s.frames):
            return False
        if "forbid_symbols" in expect:
            if any(any(norm_ok(f.sym, w) for w in expect["forbid_symbols"]) for f in s.frames):
                return False
        return True

    sel = [s for s in samples if keep(s)]
    match = sum(1 for s in sel if ok(s))
    frac = match / len(sel) if sel else 0.0
    passed = len(sel) >= expect.get("min_samples", 1) and frac >= expect.get("min_fraction", 0.0)
    if "max_samples" in expect:
        passed = passed and len(sel) <= expect["max_samples"]
    if "min_matching" in expect:
        passed = passed and match >= expect["min_matching"]
    if "max_matching" in expect:
        passed = passed and match <= expect["max_matching"]
    example = next((s for s in sel if not ok(s)), None)
    detail = ""
    if example is not None:
        detail = " first failing: " + " <- ".join(
            f"{f.sym}@{base(f.dso)}{'[k]' if f.kernel else ''}" for f in example.frames[:8]
        )
    return passed, f"{expect.get('id')}: selected {len(sel)}, matching {match} ({frac:.3f}){detail}"


def evaluate_offcpu(expect: dict, samples: list[DecodedSample], stream: P.Stream,
                    symbols_table: dict) -> tuple[bool, str]:
    """One kind="offcpu" expectation: the off-CPU time of `tid`, per phase.

    Every sched_switch sample of the tid starts an off-CPU interval that ends at the tid's next
    ContextSwitch with switch_out false (hotspot's off-CPU recipe). An interval belongs to the
    phase (a table of the expectation with `switches` and `seconds`) whose function is on the
    sample's stack; its switch count must match and its summed time lie within `tolerance`
    (relative) of `seconds`.
    """
    tid = expect["tid"]
    phases = {k: v for k, v in expect.items() if isinstance(v, dict) and "seconds" in v}
    switch_ins = sorted(m.time for m in stream.messages
                        if isinstance(m, P.ContextSwitch) and m.tid == tid and not m.switch_out)
    found = {name: [0, 0.0] for name in phases}
    for s in samples:
        if s.tid != tid or not s.event.startswith("sched:sched_switch"):
            continue
        later = [t for t in switch_ins if t >= s.time]
        if not later:
            continue
        for name in phases:
            alt = symbols_table.get(name, {})
            names = {name, alt.get("mangled"), alt.get("no_params")}
            if any(f.sym in names for f in s.frames):
                found[name][0] += 1
                found[name][1] += (later[0] - s.time) / 1e9
                break
    passed = True
    parts = []
    for name, want in phases.items():
        switches, seconds = found[name]
        ok = (switches == want["switches"]
              and abs(seconds - want["seconds"]) <= want["tolerance"] * want["seconds"])
        passed = passed and ok
        parts.append(f"{name}: {switches} switches, {seconds:.4f} s "
                     f"(want {want['switches']}, {want['seconds']} ± {want['tolerance']:.0%})")
    return passed, f"{expect.get('id')}: " + "; ".join(parts)
