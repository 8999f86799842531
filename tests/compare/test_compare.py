"""compare: semantic diff of two streams, classification, exit codes, parser runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import compare as C
from perfparser_py import protocol as P

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / ".." / "shared" / "spec" / "golden"
PARALLEL = GOLDEN / "parallel_static_gcc_perf.data.zstd.qperfstream"
VECTOR = GOLDEN / "vector_static_gcc_perf.data.qperfstream"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "compare"), *args],
                          capture_output=True, text=True)


def rewrite(path: Path, change) -> bytes:
    """The stream with change(message) applied to every message, re-encoded."""
    data = path.read_bytes()
    stream = P.read_stream(data)
    return P.HEADER + b"".join(P.encode(change(m), stream.flavour) for m in stream.messages)


def rename_symbol(old: bytes, new: bytes):
    def change(m):
        if isinstance(m, P.String) and m.string == old:
            return P.String(m.id, new)
        return m
    return change


@pytest.mark.parametrize("golden", [PARALLEL, VECTOR])
def test_golden_against_itself_is_identical(golden):
    r = run("--json", "--ours-stream", str(golden), "--reference-stream", str(golden))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["equal"] is True
    assert report["samples"]["identical_percent"] == 100.0
    assert report["samples"]["identical"] == report["samples"]["ours"] > 0
    assert report["differences"] == {} and report["threads"] == []


def test_renamed_symbol_is_a_different_symbol(tmp_path):
    mutated = tmp_path / "mutated.qperfstream"
    mutated.write_bytes(rewrite(VECTOR, rename_symbol(b"__libc_start_main", b"renamed")))
    r = run("--json", "--ours-stream", str(mutated), "--reference-stream", str(VECTOR))
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert set(report["differences"]) == {"different symbol"}
    assert 0 < report["samples"]["identical_percent"] < 100
    first = report["first_differences"][0]
    assert any(f.startswith("renamed ") for f in first["ours"])
    assert any(f.startswith("__libc_start_main ") for f in first["reference"])
    # within tolerance it counts as equal
    tolerance = str(100 - report["samples"]["identical_percent"] + 0.01)
    assert run("--ours-stream", str(mutated), "--reference-stream", str(VECTOR),
               "--tolerance", tolerance).returncode == 0


def test_other_flavour_of_the_same_stream_is_identical(tmp_path):
    current = tmp_path / "current.qperfstream"
    stream = P.read_stream(PARALLEL.read_bytes())
    current.write_bytes(P.HEADER + b"".join(P.encode(m, "current") for m in stream.messages))
    r = run("--json", "--ours-stream", str(current), "--reference-stream", str(PARALLEL))
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["ours"]["flavour"] == "current"
    assert report["reference"]["flavour"] == "1.5"


def side(samples: list[tuple]) -> C.Side:
    return C.Side("x", "1.5", C.StreamState(), samples)


F_MAIN = ("main", "app", "a.c:3", False)
F_START = ("_start", "app", "", False)
F_INL = ("inl", "app", "a.c:9", True)
F_UNK = (C.UNKNOWN, "app", "", False)


@pytest.mark.parametrize(("ours", "ref", "kind"), [
    ((F_UNK, F_START), (F_MAIN, F_START), "missing symbol (ours)"),
    ((F_MAIN, F_START), (F_UNK, F_START), "missing symbol (reference)"),
    ((("other", "app", "a.c:3", False), F_START), (F_MAIN, F_START), "different symbol"),
    ((F_MAIN, F_START, F_START), (F_MAIN, F_START), "extra frames"),
    ((F_MAIN,), (F_MAIN, F_START), "missing frames"),
    ((F_INL, F_MAIN, F_START), (F_MAIN, F_START), "different inline expansion"),
    ((("main", "app", "a.c:4", False), F_START), (F_MAIN, F_START), "different file:line"),
    ((("main", "lib", "a.c:3", False), F_START), (F_MAIN, F_START), "different binary"),
])
def test_classification(ours, ref, kind):
    assert C.classify(ours, ref) == kind


def test_thread_stats_values_and_unaligned_samples():
    a = [(1, 1, 10, 0, (("cycles", 5),), (F_MAIN,)), (1, 2, 20, 1, (("cycles", 5),), (F_MAIN,))]
    b = [(1, 1, 10, 0, (("cycles", 6),), (F_MAIN,)), (1, 1, 11, 0, (("cycles", 5),), (F_MAIN,))]
    report = C.compare(side(a), side(b))
    assert report["differences"] == {"different values": 1, "sample only in ours": 1,
                                     "sample only in reference": 1}
    assert report["samples"]["aligned"] == 1 and report["samples"]["identical"] == 0
    by_tid = {t["tid"]: t for t in report["threads"]}
    assert by_tid[1]["values"] == [{"cycles": 5}, {"cycles": 11}]
    assert by_tid[2]["samples"] == [1, None]
    assert "different values" in C.format_report(report)


def test_runs_parser_commands_on_a_perf_data(tmp_path):
    """Both sides produced by commands (stand-ins that emit a golden for --input FILE)."""
    fake = tmp_path / "fake_parser.py"
    fake.write_text("import sys; a = sys.argv; assert a[1] == '--input' and a[3] == '--x'\n"
                    "sys.stdout.buffer.write(open(a[2], 'rb').read())\n")
    cmd = f"{sys.executable} {fake}"
    r = run(str(PARALLEL), "--ours", cmd, "--reference", cmd, "--", "--x")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "identical 242 (100.0%)" in r.stdout


def test_errors_exit_2(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a stream at all")
    r = run("--ours-stream", str(bad), "--reference-stream", str(VECTOR))
    assert r.returncode == 2 and "corrupt stream" in r.stderr
    r = run("--ours-stream", str(VECTOR), "--reference-stream", str(tmp_path / "missing"))
    assert r.returncode == 2
    r = run("--reference-stream", str(VECTOR))  # nothing to run ours on
    assert r.returncode == 2 and "need a perf.data" in r.stderr
    r = run(str(VECTOR), "--ours", str(tmp_path / "no-such-binary"),
            "--reference-stream", str(VECTOR))
    assert r.returncode == 2 and "cannot run" in r.stderr


def test_a_parser_that_writes_no_stream_is_reported_with_what_it_said(tmp_path):
    """A parser that fails before its stream (a crash, a missing module) is reported by its
    exit code and the last line of its stderr, not only as a corrupt stream."""
    fake = tmp_path / "failing_parser.py"
    fake.write_text("import sys; print('first line', file=sys.stderr)\n"
                    "print('perfparser: needs construct', file=sys.stderr); sys.exit(7)\n")
    r = run(str(VECTOR), "--ours", f"{sys.executable} {fake}", "--reference-stream", str(VECTOR))
    assert r.returncode == 2
    assert r.stderr.strip().endswith("it exited 7: perfparser: needs construct"), r.stderr


def test_own_parser_is_the_checkout_a_tool_runs_from(monkeypatch):
    """tools/compare and tools/perfdiff put their checkout first on their own path only: the
    parser they run gets it first on PYTHONPATH. Where the interpreter finds the package by
    itself (an install, an editable one), PYTHONPATH is left as it is."""
    root = str(REPO)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setattr(sys, "path", [root, "/usr/lib/python3.11"])
    cmd, env = C.own_parser()
    assert cmd == [sys.executable, "-m", "perfparser_py.cli"]
    assert env["PYTHONPATH"] == os.pathsep.join((root, "/elsewhere"))
    monkeypatch.setattr(sys, "path", ["/usr/bin", "/usr/lib/python3.11", root + "/."])
    assert C.own_parser()[1]["PYTHONPATH"] == "/elsewhere"


def test_exit_codes_count_only_when_both_sides_ran():
    base = {"samples": {"identical_percent": 100.0}}
    for ours, ref, equal in ((0, None, True), (None, 1, True), (0, 0, True), (0, 1, False)):
        report = {**base, "ours": {"exit_code": ours}, "reference": {"exit_code": ref}}
        assert C.is_equal(report, 0.0) is equal


def test_parser_options_go_to_both_parsers_without_a_separator(tmp_path):
    fake = tmp_path / "fake_parser.py"
    fake.write_text("import sys; a = sys.argv\n"
                    "assert a[3:] == ['--app', '/some/dir', '--kallsyms', 'k', '--x'], a\n"
                    "sys.stdout.buffer.write(open(a[2], 'rb').read())\n")
    cmd = f"{sys.executable} {fake}"
    r = run(str(PARALLEL), "--app", "/some/dir", "--ours", cmd, "--reference", cmd,
            "--kallsyms", "k", "--", "--x")
    assert r.returncode == 0, r.stdout + r.stderr


def test_source_paths_spelled_differently_are_the_same_position(tmp_path):
    spelled = tmp_path / "spelled.qperfstream"

    def respell(m):
        if isinstance(m, P.String) and m.string.startswith(b"/") and m.string.endswith((b".c", b".cpp", b".h")):
            return P.String(m.id, b"/./x/.." + m.string)
        return m
    spelled.write_bytes(rewrite(VECTOR, respell))
    assert rewrite(VECTOR, respell) != VECTOR.read_bytes()
    r = run("--json", "--ours-stream", str(spelled), "--reference-stream", str(VECTOR))
    assert r.returncode == 0, r.stdout
    assert C.source_path("./csu/../sysdeps/nptl/x.h") == C.source_path("../sysdeps/nptl/x.h")
    assert C.source_path("/a/b/../c.c") == "/a/c.c"


@pytest.mark.parametrize("tool", ["compare", "stream2text"])
def test_help_names_the_installed_command(tool):
    r = subprocess.run([sys.executable, str(REPO / "tools" / tool), "--help"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith(f"usage: perfparser-{tool} ")
