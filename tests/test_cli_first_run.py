"""The first commands a user types (issue "Ship it"): a positional perf.data, a terminal on
either end, --help and --version, `python -m perfparser_py`, a saved stream as input and a
root-owned recording. Terminal behaviour runs under a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfparser_py.protocol import HEADER, read_stream
from tests.corpus.expect import CORPUS, run_parser

REPO = Path(__file__).resolve().parents[1]
FP = CORPUS / "recorded" / "fp" / "perf.data"
CMD = [sys.executable, "-m", "perfparser_py"]


def run_on_pty(args: list[str], stdin_tty: bool, stdout_tty: bool,
               timeout: float = 30) -> tuple[int, bytes, bytes]:
    """Run the parser with stdin and/or stdout on a pseudo-terminal (the other ends on
    /dev/null and a pipe); returns (exit code, what reached the terminal, stderr)."""
    leader, follower = pty.openpty()
    with open(os.devnull, "rb") as null:
        proc = subprocess.Popen(CMD + args, cwd=REPO, stdin=follower if stdin_tty else null,
                                stdout=follower if stdout_tty else subprocess.PIPE,
                                stderr=subprocess.PIPE)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                seen += os.read(leader, 65536)
            except OSError:  # EIO: no process holds the terminal open any more
                time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        pytest.fail(f"{args} still waited on the terminal after {timeout} s")
    os.close(leader)
    return proc.wait(), seen, proc.stderr.read()


def test_a_positional_perf_data_is_the_input(tmp_path):
    by_option = run_parser(["--input", str(FP)])
    positional = run_parser([str(FP)])
    assert positional.returncode == by_option.returncode == 0
    assert positional.stdout == by_option.stdout and len(positional.stdout) > 10_000
    # --input wins over a positional argument
    assert run_parser([str(tmp_path / "nothing"), "--input", str(FP)]).stdout == \
        by_option.stdout


def test_no_input_at_a_terminal_is_refused_at_once():
    code, _, err = run_on_pty([], stdin_tty=True, stdout_tty=False)
    assert code == 7
    assert err.count(b"\n") == 1 and b"give the perf.data file" in err


def test_binary_output_to_a_terminal_is_refused():
    code, seen, err = run_on_pty(["--input", str(FP)], stdin_tty=False, stdout_tty=True)
    assert code == 7 and HEADER not in seen
    assert b"--output FILE" in err and err.count(b"\n") == 1
    # --print-stats is text: it may go to the terminal
    code, seen, _ = run_on_pty(["--input", str(FP), "--print-stats"], stdin_tty=False,
                               stdout_tty=True)
    assert code == 0 and b"samples" in seen.lower()


def test_help_keeps_every_option_apart_from_its_text():
    out = run_parser(["--help"]).stdout.decode()
    rows = [ln for ln in out.splitlines() if ln.startswith("  -")]
    assert len(rows) >= 20
    starts = {re.search(r"\S\s{2,}(\S)", ln).start(1) for ln in rows}
    assert len(starts) == 1, rows  # one column for every description
    assert "Usage: perfparser [options] [perf.data]" in out


def test_version_names_the_package_and_upstream_release():
    from perfparser_py import __version__

    out = run_parser(["--version"]).stdout.decode()
    assert out.startswith(f"perfparser-py {__version__}") and "perfparser 10.0" in out
    by_module = subprocess.run(CMD + ["--version"], capture_output=True, text=True)
    assert by_module.returncode == 0 and by_module.stdout == out


def test_a_saved_stream_is_passed_through_in_the_requested_flavour(tmp_path):
    saved = tmp_path / "saved.perfparser"
    direct_13 = tmp_path / "direct13"
    assert run_parser(["--input", str(FP), "--output", str(saved),
                       "--protocol", "current"]).returncode == 0
    assert run_parser(["--input", str(FP), "--output", str(direct_13),
                       "--protocol", "1.3"]).returncode == 0
    same = run_parser(["--input", str(saved), "--protocol", "current"])
    assert same.returncode == 0 and same.stdout == saved.read_bytes()
    as_13 = run_parser([str(saved), "--protocol", "1.3"])
    assert as_13.returncode == 0 and as_13.stdout == direct_13.read_bytes()
    assert read_stream(as_13.stdout).flavour == "1.3"
    cut = tmp_path / "cut.perfparser"
    cut.write_bytes(saved.read_bytes()[:-5])
    r = run_parser([str(cut), "--protocol", "1.3"])
    assert r.returncode == 0 and b"incomplete last message" in r.stderr
    assert read_stream(r.stdout).trailing_bytes == b""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a root-owned file")
def test_a_root_owned_recording_says_how_to_read_it():
    # pytest's own tmp_path lies below a 0700 directory that `nobody` cannot enter
    with tempfile.TemporaryDirectory() as where:
        os.chmod(where, 0o755)
        private = Path(where) / "perf.data"
        shutil.copy(FP, private)
        os.chmod(private, 0o600)
        r = _as_nobody(private)
    assert r.returncode == 2
    assert "Permission denied" in r.stderr and "sudo chown $USER" in r.stderr


def _as_nobody(private: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           *CMD, "--input", str(private), "--output", "/dev/null"],
                          cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PERFPARSER_NO_CACHE": "1"})
