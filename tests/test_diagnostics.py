"""The end-of-run diagnostics (issue "Ship it"): the unresolved frames by library with their
cause and fix, as Error messages in the stream and, with stderr at a terminal (run here under
a real pseudo-terminal), a summary line and the same lines; one warning for a --sysroot that
does not exist."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfparser_py import diagnostics, reports, textdump
from perfparser_py import protocol as P
from tests.corpus.expect import CORPUS
from tests.synth import PipeWriter

REPO = Path(__file__).resolve().parents[1]
RECORDED = CORPUS / "recorded"
SUMMARY = re.compile(r"perfparser: (\d+) samples in (\d+) processes, ([\d.]+)% of (\d+) frames "
                     r"unresolved; stream written to (.*)")
BASE = 0x400000


def stderr_on_pty(args: list[str], stdin: bytes | None = None, timeout: float = 120) -> tuple[
        int, str]:
    """Run the parser with stderr on a pseudo-terminal; (exit code, what the terminal got)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "perfparser_py.cli", *args], cwd=REPO,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the parser closed the terminal
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    try:
        code = proc.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{args} did not finish in {timeout} s")
    return code, seen.decode("utf-8", "replace").replace("\r\n", "\n")


def _missing_libraries(pids=(400, 401), libs=(b"/nonexistent/libmissing.so",)) -> bytes:
    w = PipeWriter()
    for pid in pids:
        w.comm(pid, pid, b"prog", 1)
        for i, lib in enumerate(libs):
            w.mmap2(pid, BASE + i * 0x10000, 0x5000, 0, lib, 1)
        for n in range(3):
            w.sample(pid, pid, 10 + pid + n, BASE + 0x1000)
    return w.data()


def test_a_recording_from_another_machine_names_the_missing_file_and_the_option(tmp_path):
    """The corpus `sharedlib` case was recorded with its libraries in /tmp/corpus-build: on
    this machine, without --app, they are missing."""
    data = RECORDED / "sharedlib" / "perf.data"
    out = tmp_path / "out.stream"
    code, terminal = stderr_on_pty(["--input", str(data), "--output", str(out),
                                    "--kallsyms", "/dev/null"])
    assert code == 0, terminal
    [summary] = [m for m in map(SUMMARY.match, terminal.splitlines()) if m]
    samples, processes, share, frames, where = summary.groups()
    assert where == str(out) and float(share) > 0
    lines = [x for x in terminal.splitlines() if "libhot.so" in x and "of the frames" in x]
    assert lines and "not found" in lines[0] and "--app" in lines[0]
    assert "/tmp/corpus-build/sharedlib/libhot.so" in lines[0]
    # hotspot gets the same as Error messages
    messages = [m.message for m in P.read_stream(out.read_bytes()).messages
                if isinstance(m, P.Error) and m.message.startswith(diagnostics.PREFIX)]
    assert any("libhot.so" in m and "--app" in m for m in messages)
    # with --app the file is found: no such line
    code, terminal = stderr_on_pty(["--input", str(data), "--output", str(out), "--app",
                                    str(data.parent), "--kallsyms", "/dev/null"])
    assert code == 0 and SUMMARY.search(terminal)
    assert "libhot.so (" not in terminal


@pytest.mark.parametrize("case", ["sharedlib", "kernel", "syswide-fp", "dwarf", "inline"])
def test_the_summary_counts_what_stream2text_counts(case, tmp_path):
    """The parser counts frames as they are written (protocol.FrameCounts); stream2text
    counts them from the stream: both must agree, for every kind of stack."""
    out = tmp_path / "out.stream"
    code, terminal = stderr_on_pty(["--input", str(RECORDED / case / "perf.data"), "--output",
                                    str(out), "--kallsyms", "/dev/null"])
    assert code == 0, terminal
    [summary] = [m for m in map(SUMMARY.match, terminal.splitlines()) if m]
    state = textdump.StreamState.from_messages(P.read_stream(out.read_bytes()).messages)
    data = reports.analyse(reports.Stacks(state))
    assert int(summary[1]) == data["samples"] > 0
    assert int(summary[2]) == len(data["processes"])
    assert int(summary[4]) == data["frames"]
    assert float(summary[3]) == pytest.approx(data["unresolved_percent"], abs=0.06)
    by_library = {u["library"]: u["frames"] for u in data["unresolved_by_library"]}
    shown = {}
    for line in terminal.splitlines():
        m = re.match(r"perfparser:   (<?[\d.]+)% of the frames are in (.+?)(?: \(|:)", line)
        if m:
            shown[m[2]] = m[1]
    assert shown and set(shown) <= set(by_library)


def test_without_a_terminal_only_the_stream_carries_the_report():
    res = subprocess.run([sys.executable, "-m", "perfparser_py.cli", "--kallsyms", "/dev/null"],
                         cwd=REPO, input=_missing_libraries(), capture_output=True, timeout=120)
    assert res.returncode == 0
    assert not SUMMARY.search(res.stderr.decode())  # hotspot reads stderr through a pipe
    [report] = [m for m in P.read_stream(res.stdout).messages
                if isinstance(m, P.Error) and m.message.startswith(diagnostics.PREFIX)]
    assert report.code == 2
    assert report.message == (diagnostics.PREFIX + "100.0% of the frames are in libmissing.so "
                              "(/nonexistent/libmissing.so): " + diagnostics.NOT_FOUND.cause
                              + "; " + diagnostics.NOT_FOUND.fix)


def test_a_sysroot_that_does_not_exist_is_said_once(tmp_path):
    libs = tuple(b"/usr/lib/libmissing%d.so" % i for i in range(4))
    res = subprocess.run([sys.executable, "-m", "perfparser_py.cli", "--kallsyms", "/dev/null",
                          "--sysroot", str(tmp_path / "no-such-root")], cwd=REPO,
                         input=_missing_libraries(libs=libs), capture_output=True, timeout=120)
    assert res.returncode == 0
    err = res.stderr.decode()
    assert err.count("no-such-root") == 1 and "is not a directory" in err
    assert "Could not find ELF file" not in err
    # the stream keeps upstream's message per file, which hotspot lists
    missing = [m for m in P.read_stream(res.stdout).messages
               if isinstance(m, P.Error) and m.message.startswith("Could not find ELF file")]
    assert len(missing) == len(libs)
    # an existing sysroot: one line per file, as upstream
    res = subprocess.run([sys.executable, "-m", "perfparser_py.cli", "--kallsyms", "/dev/null",
                          "--sysroot", str(tmp_path)], cwd=REPO,
                         input=_missing_libraries(libs=libs), capture_output=True, timeout=120)
    assert res.stderr.decode().count("Could not find ELF file") == len(libs)


def test_each_kernel_cause_has_its_fix():
    assert diagnostics.cause_of("[kernel.kallsyms]", True, True, "hidden") is \
        diagnostics.KERNEL_HIDDEN
    assert diagnostics.cause_of("[kernel.kallsyms]", True, True, "other kernel") is \
        diagnostics.KERNEL_OTHER
    assert diagnostics.cause_of("[kernel.kallsyms]", True, True, None) is diagnostics.KERNEL
    assert "--kallsyms" in diagnostics.KERNEL_HIDDEN.fix
    assert "root" in diagnostics.KERNEL_HIDDEN.fix


def test_hidden_kernel_addresses_are_named_as_the_cause(tmp_path):
    """A kallsyms read without the right to see addresses (kptr_restrict) has them all 0."""
    hidden = tmp_path / "kallsyms"
    hidden.write_text("0000000000000000 T _text\n0000000000000000 T do_syscall_64\n")
    out = tmp_path / "out.stream"
    code, terminal = stderr_on_pty(["--input", str(RECORDED / "kernel" / "perf.data"),
                                    "--output", str(out), "--kallsyms", str(hidden)])
    assert code == 0, terminal
    [line] = [x for x in terminal.splitlines() if "of the frames are in [kernel.kallsyms]" in x]
    assert diagnostics.KERNEL_HIDDEN.cause in line


SPLIT_PROGRAM = r"""
static volatile unsigned long sink;
static inline void inner(int n) { for (int i = 0; i < n; i++) sink += i * 3; }
__attribute__((noinline)) void work(int n) { inner(n); inner(n / 2); }
int main(int argc, char **argv) { work(argc * 1000); return 0; }
"""


@pytest.mark.parametrize("kind", ["split-dwarf", "dwz"])
def test_missing_split_dwarf_or_supplementary_files_are_named(tmp_path, kind):
    """A program whose inline frames are in .dwo files (-gsplit-dwarf) or whose DWARF refers
    to dwz's supplementary file: when those files are not found, the report names them and
    where they are looked for, in the stream and on the terminal; once found, it is silent."""
    (tmp_path / "p.c").write_text(SPLIT_PROGRAM)
    flags = ["-gsplit-dwarf"] if kind == "split-dwarf" else []
    for name in ("p", "twin"):
        subprocess.run(["gcc", "-O2", "-g", *flags, "-o", name, "p.c"], cwd=tmp_path, check=True)
    if kind == "dwz":
        subprocess.run(["dwz", "-m", "common.debug", "-M", "common.debug", "p", "twin"],
                       cwd=tmp_path, check=True)
    moved = [tmp_path / ("p.dwo" if kind == "split-dwarf" else "common.debug")]
    if not moved[0].exists():  # gcc names it after the output when it links too
        moved = sorted(tmp_path.glob("*.dwo"))
    exe = tmp_path / "p"
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    work = next(int(p[0], 16) for p in map(str.split, nm.splitlines()) if p[-1] == "work")
    w = PipeWriter()
    w.comm(400, 400, b"p", 1)
    w.mmap2(400, BASE, 0x5000, 0, str(exe).encode(), 1)
    for n in range(3):
        w.sample(400, 400, 10 + n, BASE + work + 4)
    recording = tmp_path / "perf.data"
    recording.write_bytes(w.data())
    args = ["--input", str(recording), "--kallsyms", "/dev/null", "--no-cache"]
    away = tmp_path / "away"
    away.mkdir()
    for present in (False, True):
        for path in moved:
            if present:
                (away / path.name).rename(path)
            else:
                path.rename(away / path.name)
        res = subprocess.run([sys.executable, "-m", "perfparser_py.cli", *args], cwd=REPO,
                             capture_output=True, timeout=120)
        assert res.returncode == 0
        errors = [m.message for m in P.read_stream(res.stdout).messages
                  if isinstance(m, P.Error) and m.message.startswith(diagnostics.INCOMPLETE_PREFIX)]
        if present:
            assert errors == []
            continue
        [message] = errors
        assert message.startswith(f"{diagnostics.INCOMPLETE_PREFIX}p ({exe}): no inline frames")
        assert (f"({moved[0].name})" in message if kind == "split-dwarf"
                else "(common.debug)" in message)
        code, seen = stderr_on_pty(args)
        assert code == 0 and f"perfparser: {message}\n" in seen
