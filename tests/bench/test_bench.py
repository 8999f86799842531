"""tools/bench runs end to end on tiny recordings (no timing assertions); needs perf, g++ and
sqlite3, which CI has (tools/run-tests' apt list)."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "tools" / "bench"


def run_bench(tmp_path: Path, *args: str, reference: str | None = None) -> dict:
    out = tmp_path / "results.json"
    env = dict(os.environ)
    if reference is not None:
        env["PERFPARSER_REFERENCE"] = reference
    proc = subprocess.run(
        [sys.executable, str(BENCH), *args, "--runs", "1", "--work", str(tmp_path / "work"),
         "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    report["stdout"] = proc.stdout
    return report


def test_bench_smoke(tmp_path: Path) -> None:
    report = run_bench(tmp_path, "--only", "tiny-fp", reference="/nonexistent/perfparser")
    assert "tiny-fp" in report["stdout"] and "per-stage profile" in report["stdout"]
    # which kallsyms the kernel's names come from, as a run here chooses it
    kallsyms = report["machine"]["kallsyms"]
    assert kallsyms == "/proc/kallsyms" or kallsyms.endswith("/kallsyms") and os.path.isfile(
        kallsyms)
    assert f"from: {kallsyms}" in report["stdout"]
    (entry,) = report["results"]
    assert entry["set"] == "synthetic" and entry["samples"] > 0
    assert entry["ours"]["exit_codes"] == [0]
    assert entry["ours"]["median_s"] > 0 and entry["ours"]["peak_rss_kib"] > 0
    assert "reference" not in entry  # reference missing: ours only
    assert entry["check"] == {"ours": "ok"}
    assert sum(entry["stages_s"].values()) > 0
    assert set(entry["stages_s"]) >= {"parse", "order", "unwind", "symbolize", "emit"}


def test_bench_compares_the_interpreted_core(tmp_path: Path) -> None:
    report = run_bench(tmp_path, "--only", "tiny-fp", "--no-profile", "--interpreted",
                       reference="/nonexistent/perfparser")
    (entry,) = report["results"]
    assert entry["interpreted"]["identical"] and entry["interpreted"]["exit_codes"] == [0]
    assert entry["interpreted"]["wall_s"] > 0 and entry["check"] == {"ours": "ok"}


def test_bench_times_ours_seeded_with_the_kernel_symbols_copy(tmp_path: Path) -> None:
    """--seeded: cold runs whose cache holds only the copy of the running kernel's kallsyms
    the first run kept (where perf's build-id cache has none), on all CPUs and pinned."""
    reference = tmp_path / "reference"  # ours again, for the ratios
    reference.write_text(f'#!/bin/sh\nexec {sys.executable} -m perfparser_py.cli "$@"\n')
    reference.chmod(0o755)
    report = run_bench(tmp_path, "--only", "tiny-fp", "--no-profile", "--no-warm", "--seeded",
                       "--markdown", reference=str(reference))
    (entry,) = report["results"]
    for variant in ("ours_seeded", "ours_pinned_seeded"):
        assert entry[variant]["exit_codes"] == [0] and entry[variant]["median_s"] > 0
    assert entry["ratio_seeded"] > 0 and entry["ratio_pinned_seeded"] > 0
    assert "| pinned warm | seeded | pinned seeded | RSS" in report["stdout"]


def test_bench_real_sqlite3(tmp_path: Path) -> None:
    """The real set's path: Debian's sqlite3 recorded here in a clean environment with DWARF
    stacks, every variant timed, and our stream holding exactly perf's sample count."""
    report = run_bench(tmp_path, "--only", "sqlite3-dwarf-1k", "--no-profile")
    (entry,) = report["results"]
    assert entry["set"] == "real"
    assert entry["workload"]["program"] == "sqlite3" and entry["workload"]["units"] >= 1
    header = subprocess.run(["perf", "report", "--header-only", "-i", entry["file"]],
                            capture_output=True, text=True, check=True).stdout
    cmdline = next(line for line in header.splitlines() if line.startswith("# cmdline"))
    assert " -N -F 1999 --call-graph dwarf " in cmdline
    assert 200 < entry["samples"] < 5000  # about 1k: the calibration held
    for variant in ("ours", "ours_warm", "ours_pinned", "ours_pinned_warm"):
        assert entry[variant]["exit_codes"] == [0] and entry[variant]["median_s"] > 0
    assert entry["check"]["ours"] == "ok"
    assert entry["ours"]["stream_samples"] == entry["samples"]
    assert entry["ours"]["placed_share"] > 0.9  # a program with its debug symbols installed
    if report["reference"] is not None:
        assert {"ratio", "ratio_warm", "ratio_pinned", "ratio_pinned_warm"} <= set(entry)


def _bench_module(monkeypatch):
    loader = importlib.machinery.SourceFileLoader("bench_tool", str(BENCH))
    bench = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    monkeypatch.setitem(sys.modules, loader.name, bench)  # its dataclass looks itself up there
    monkeypatch.setattr(sys, "path", list(sys.path))  # it adds tools/ for its modules
    loader.exec_module(bench)
    return bench


def test_peak_memory_is_the_parsers_not_the_benchs(monkeypatch) -> None:
    """A child's ru_maxrss includes the RSS its parent had when the child's exec replaced the
    copy of it: the peak must come from the parser's own pages, whatever the bench holds."""
    bench = _bench_module(monkeypatch)
    held = bytearray(256 << 20)
    held[::4096] = b"\1" * len(held[::4096])  # resident here
    child = [sys.executable, "-c", "import time; time.sleep(0.3)"]
    _wall, (rss, pss), code = bench.timed(child, dict(os.environ), sample_rss=True)
    assert code == 0
    assert 0 < pss <= rss < 128 << 10  # KiB: an idle interpreter, far below what is held here
    assert bench.timed(child, dict(os.environ))[1] == (0, 0)  # timed runs do not sample
    del held


def test_check_names_what_is_wrong(monkeypatch) -> None:
    """A parser's verdict fails on any run's exit code and on a stream short of perf's count."""
    bench = _bench_module(monkeypatch)

    def variant(codes: list[int], stream: int | None = None) -> dict:
        v = {"runs": [0.1], "exit_codes": codes}
        return v if stream is None else {**v, "stream_samples": stream}

    entry = {"samples": 100, "ours": variant([0], 100), "ours_pinned": variant([0, 1]),
             "reference": variant([0], 99), "reference_pinned": variant([0])}
    assert bench.check(entry, ("ours", "reference")) == {
        "ours": "exit codes [0, 1]",
        "reference": "99 samples in the stream, perf counts 100"}
    entry["ours_pinned"] = variant([0])
    assert bench.check(entry, ("ours",)) == {"ours": "ok"}


def test_stream_summary_counts_the_frames_placed_in_a_binary(monkeypatch, tmp_path) -> None:
    """A frame is placed through its own symbol or its nearest enclosing location's (an
    inlined frame's parent); a symbol without a binary name, and a location with no symbol
    anywhere up its chain, leave it unplaced."""
    bench = _bench_module(monkeypatch)
    from perfparser_py.protocol import Location, Sample, String, Symbol, encode
    from perfparser_py.protocol.layout import HEADER

    def loc(i: int, parent: int = -1) -> Location:
        return Location(id=i, address=0x1000 + i, file=-1, pid=1, line=0, column=0,
                        parent_location_id=parent, rel_addr=0)

    def sym(i: int, binary: int) -> Symbol:
        return Symbol(id=i, name=-1, binary=binary, path=-1, is_kernel=False, rel_addr=0,
                      size=0, actual_path=-1, is_inline=False)

    messages = [String(id=0, string=b"libc.so.6"), String(id=1, string=b""),
                loc(0), sym(0, 0),  # placed
                loc(1, 0),  # inlined into 0: placed through it
                loc(2), sym(2, 1),  # a symbol, but no binary name
                loc(3),  # no symbol at all
                Sample(pid=1, tid=1, time=1, cpu=0, frames=[0, 1, 2, 3], guessed_frames=0,
                       values=[]),
                Sample(pid=1, tid=1, time=2, cpu=0, frames=[1, 1], guessed_frames=0,
                       values=[])]
    path = tmp_path / "s.stream"
    path.write_bytes(bytes(HEADER) + b"".join(encode(m) for m in messages))
    assert bench.stream_summary(path) == {"samples": 2, "frames": 6, "placed_share": 4 / 6}
    path.write_bytes(b"not a stream")
    assert bench.stream_summary(path) is None
