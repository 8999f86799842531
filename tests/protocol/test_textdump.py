"""stream2text: upstream's expected text dumps from the golden streams, summary, CLI."""

import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from perfparser_py import reports, textdump

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / ".." / "shared" / "spec" / "golden"
UPSTREAM = REPO / ".." / "shared" / "corpus" / "upstream"

# golden stream -> upstream's authoritative text dump of the same input (TEXTDUMP §1)
EXPECTED_TEXT = {
    "vector_static_gcc_perf.data": "vector_static_gcc/perf.data",
    "vector_static_gcc_perf.data.zstd": "vector_static_gcc/perf.data.zstd",
    "vector_static_gcc_perf.lbr.data": "vector_static_gcc/perf.lbr.data",
    "vector_static_clang_perf.data": "vector_static_clang/perf.data",
    "fork_static_gcc_perf.data.zstd": "fork_static_gcc/perf.data.zstd",
    "parallel_static_gcc_perf.data.zstd": "parallel_static_gcc/perf.data.zstd",
}


def state_of(name: str) -> textdump.StreamState:
    stream = P.read_stream((GOLDEN / f"{name}.qperfstream").read_bytes())
    return textdump.StreamState.from_messages(stream.messages)


@pytest.mark.parametrize("golden", sorted(EXPECTED_TEXT))
def test_golden_renders_exactly_like_upstream_expected(golden):
    expected = (UPSTREAM / f"{EXPECTED_TEXT[golden]}.expected.txt").read_bytes()
    text = textdump.normalize_like_upstream_test(textdump.render(state_of(golden)))
    assert text.encode() == expected


def test_tracepoint_fields_and_inline_markers_are_rendered():
    text = textdump.render(state_of("parallel_static_gcc_perf.data.zstd"))
    assert "\tsched:sched_switch: sched sched_switch 0\n\t\tprev_comm=parallel_static\n" in text
    assert "(inlined)\n" in text and " [kernel]\n" in text


def test_variant_text_like_qt5():
    assert textdump.variant_text(P.Variant(37, 65)) == "A"
    assert textdump.variant_text(P.Variant(40, -23)) == "\xe9"
    assert textdump.variant_text(P.Variant(12, b"swapper/17\0\0x")) == "swapper/17"
    assert textdump.variant_text(P.Variant(4, -7)) == "-7"
    assert textdump.variant_text(P.INVALID_VARIANT) == ""
    assert textdump.variant_text(P.Variant(9, [P.Variant(2, 1)])) == ""


def test_lookups_never_fail_on_dangling_ids():
    msgs = [P.Sample(3, 4, 1_000_000_007, 0, [42, -1], 0, [(-1, 9)])]
    text = textdump.render(textdump.StreamState.from_messages(msgs))
    assert text == "\t3\t4\t1.000000007\n\t: 0\n\n\t0 0\t0 0\n\t0 0\t0 0\n\n"


def test_summary_counts_processes_and_unresolved_frames():
    out = reports.summary_text(reports.analyse(reports.Stacks(
        state_of("fork_static_gcc_perf.data.zstd"))))
    lines = out.splitlines()
    assert lines[-1].startswith("total: ")
    per_pid = [ln for ln in lines if ln.startswith("pid ")]
    total = sum(int(ln.split(": ")[1].split()[0]) for ln in per_pid)
    assert f"total: {total} samples in {len(per_pid)} processes" in lines[-1]
    assert per_pid == ["pid 18175 (fork): 106 samples (100.0%), 0.0% of 461 frames unresolved"]


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "stream2text"), *args],
                          input=stdin, capture_output=True)


def test_cli_stdin_and_file_agree():
    path = GOLDEN / "vector_static_clang_perf.data.qperfstream"
    by_file = run_cli(str(path))
    by_stdin = run_cli("-", "--flavour", "1.5", stdin=path.read_bytes())
    assert by_file.returncode == by_stdin.returncode == 0
    assert by_file.stdout == by_stdin.stdout == \
        (UPSTREAM / "vector_static_clang/perf.data.expected.txt").read_bytes()


def test_cli_corrupt_stream_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.qperfstream"
    bad.write_bytes(P.HEADER + b"\x02\x00\x00\x00\x09\x00")
    r = run_cli(str(bad))
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.count(b"\n") == 1 and b"truncated payload" in r.stderr
    assert run_cli(str(tmp_path / "missing")).returncode == 2


def test_main_in_process_reports_incomplete_tail(capsys, tmp_path):
    f = tmp_path / "cut.qperfstream"
    f.write_bytes((GOLDEN / "probe.data.stream.qperfstream").read_bytes()[:-3])
    assert textdump.main(["--summary", str(f)]) == 0
    out, err = capsys.readouterr()
    assert "incomplete last message" in err and "total:" in out


def test_a_location_chain_stops_where_a_damaged_streams_parents_loop() -> None:
    """Two locations that name each other as parent: the chain ends after as many ids as could
    be distinct, instead of looping for ever (the text dump, reports and bench walk it)."""
    def loc(i: int, parent: int) -> P.Location:
        return P.Location(id=i, address=i, file=-1, pid=1, line=0, column=0,
                          parent_location_id=parent, rel_addr=0)

    state = textdump.StreamState.from_messages([loc(0, 1), loc(1, 0), loc(2, -1)])
    assert list(state.chain(0)) == [0, 1, 0, 1]  # bounded: one id more than the 3 locations
    assert list(state.chain(2)) == [2]
    assert list(state.chain(7)) == [7]  # undefined: itself, no parents
