"""The command line as spec/CLI.md describes upstream's: syntax, validation, exit codes."""

from __future__ import annotations

import subprocess

import pytest

from perfparser_py.protocol import HEADER
from tests.corpus.expect import CORPUS, decode, run_parser

FP = CORPUS / "recorded" / "fp" / "perf.data"
GOLDEN = CORPUS.parent / "spec" / "golden"


def test_version_and_help():
    res = run_parser(["--version"])
    assert res.returncode == 0 and res.stdout.startswith(b"perfparser-py ")
    assert b"perfparser 10.0" in res.stdout and b"\nperfparser-py core: " in res.stdout
    res = run_parser(["-h"])
    assert res.returncode == 0 and b"--input" in res.stdout and b"--max-frames" in res.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--bogus"], b"Unknown option 'bogus'."),
        (["--input"], b"Missing value after '--input'."),
        (["-input", "x"], b"Unknown option"),
    ],
)
def test_syntax_errors_exit_1_with_empty_output(args, message):
    res = run_parser(args)
    assert res.returncode == 1
    assert message in res.stderr and b"Traceback" not in res.stderr
    assert res.stdout == b""


@pytest.mark.parametrize(
    "option,value,text",
    [
        ("--buffer-size", "12k", b'Failed to parse buffer-size argument. Expected unsigned integer, got: "12k"'),
        ("--max-buffer-size", "-1", b"Failed to parse buffer-size argument"),
        ("--max-frames", "many", b'Failed to parse max-frames argument. Expected integer, got: "many"'),
        ("--protocol", "0.9", b"unknown protocol"),
    ],
)
def test_invalid_values_exit_7_after_truncating_output(tmp_path, option, value, text):
    out = tmp_path / "out"
    out.write_bytes(b"old content")
    res = run_parser(["--input", str(FP), "--output", str(out), option, value])
    assert res.returncode == 7
    assert text in res.stderr
    assert out.read_bytes() == b""


def test_missing_input_exits_2_after_the_header(tmp_path):
    res = run_parser(["--input", str(tmp_path / "nope.data")])
    assert res.returncode == 2
    assert res.stdout == HEADER
    assert len([ln for ln in res.stderr.splitlines() if ln]) == 1


def test_unwritable_output_exits_2_with_a_message(tmp_path):
    res = run_parser(["--input", str(FP), "--output", str(tmp_path / "no" / "such" / "dir")])
    assert res.returncode == 2
    assert b"cannot open output file" in res.stderr


@pytest.mark.parametrize("split", ["0", "1"])
def test_a_full_disk_exits_2_with_one_line(split, monkeypatch):
    """Writing fails mid-run (ENOSPC): a clear line and the unwritable-output code, not an
    internal error; in a split run too (the reading process must not outlive it)."""
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", split)
    res = run_parser(["--input", str(FP), "--output", "/dev/full"], timeout=60)
    assert res.returncode == 2
    assert res.stderr == b"perfparser: cannot write the output: No space left on device\n"


def test_a_file_cut_in_its_feature_sections_warns_once(tmp_path):
    """perf writes the feature sections after the data: a copy cut there keeps every sample;
    one line names the features lost (one per feature was noise), the run succeeds."""
    data = FP.read_bytes()
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[:-1000])
    kallsyms = ["--kallsyms", str(CORPUS / "kallsyms" / "kallsyms.gz")]  # the recording's
    res = run_parser(["--input", str(cut), "--app", str(FP.parent), *kallsyms])
    assert res.returncode == 0
    assert res.stderr.startswith(b"perfparser: the file ends before its feature sections ")
    assert res.stderr.count(b"\n") == 1
    full = run_parser(["--input", str(FP), "--app", str(FP.parent), *kallsyms])
    assert len(decode(res.stdout)[0]) == len(decode(full.stdout)[0]) > 0


def test_equals_syntax_last_value_wins_and_positionals_ignored(tmp_path):
    out = tmp_path / "out"
    res = run_parser(["ignored", f"--input={tmp_path / 'missing'}", "--input", str(FP),
                      f"--output={out}", "--app", str(FP.parent), "--max-frames=-1"])
    assert res.returncode == 0, res.stderr
    assert out.read_bytes().startswith(HEADER)


def test_stdout_is_the_default_output():
    res = run_parser(["--input", str(FP), "--app", str(FP.parent)])
    assert res.returncode == 0 and res.stdout.startswith(HEADER) and len(res.stdout) > 10_000


@pytest.mark.parametrize("name", ["probe.data.file", "probe.data.stream", "contentsize.data"])
def test_print_stats_equals_upstream(name):
    res = run_parser(["--input", str(CORPUS / "upstream" / name), "--print-stats"])
    assert res.returncode == 0
    assert res.stdout == (GOLDEN / f"{name}.stats.txt").read_bytes()


def test_empty_stdin_is_a_header_error():
    res = run_parser([], stdin=subprocess.DEVNULL)
    assert res.returncode == 4
    assert res.stdout == HEADER


def test_progress_on_a_terminal_only(tmp_path):
    """A person at a terminal sees progress on stderr; hotspot (stderr is a pipe) does not."""
    import os
    import pty

    master, slave = pty.openpty()
    try:
        res = run_parser(["--input", str(FP), "--app", str(FP.parent), "--output",
                          str(tmp_path / "out")], stderr=slave)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert res.returncode == 0
    assert b"perfparser: reading" in seen and b"perfparser: done" in seen
    piped = run_parser(["--input", str(FP), "--app", str(FP.parent), "--output",
                        str(tmp_path / "out2")])
    assert b"reading" not in piped.stderr
