"""Issue 24 rule 1: a file a recording names that is not a regular file (a FIFO, our own stdin
or stdout, a device) counts as missing: opening never waits, our output is never read back.

Each case would hang (FIFO, stdin) or corrupt the stream (stdout) on code that opens such a
path blindly; the run is bounded in time and must keep every sample."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.robustness.hostile import (
    FEAT_BUILD_ID,
    FEAT_CMDLINE,
    PID,
    PROG,
    build_id_table,
    file_mode,
    recording,
    run,
    strings,
)

TIMEOUT = 20
HOSTILE = [b"/proc/self/fd/0", b"/proc/self/fd/1", b"/proc/self/fd/2", b"/dev/zero",
           b"/dev/stdin"]


def _options(app, **more) -> list[str]:
    opts = ["--app", str(app), "--sysroot", "/", "--debug", str(app),
            "--kallsyms", "/dev/null", "--protocol", "current", "--no-cache"]
    for k, v in more.items():
        opts += [f"--{k.replace('_', '-')}", str(v)]
    return opts


@pytest.fixture
def app(tmp_path):
    """--app with the good program and a FIFO named like a library."""
    d = tmp_path / "app"
    d.mkdir()
    shutil.copy(PROG, d / "hotloop")
    os.mkfifo(d / "libfifo.so")
    return d


def test_mmap_names_of_special_files_count_as_missing(tmp_path, app):
    fifo = str(app / "libfifo.so").encode()
    w, n = recording([fifo, b"/tmp/libfifo.so", *HOSTILE], prog=str(app / "hotloop").encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run([*_options(app), "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 0
    assert res.samples == n  # every sample, and a stream nobody read from
    assert b"main" in res.symbols()  # the regular file next to the FIFO still resolves


def test_build_id_table_naming_special_files(tmp_path, app):
    fifo = str(app / "libfifo.so").encode()
    w, n = recording([fifo, b"/proc/self/fd/0", b"/proc/self/fd/1"])
    table = build_id_table([(PID, bytes(range(20)), name)
                            for name in (fifo, b"/proc/self/fd/0", b"/proc/self/fd/1")])
    data = file_mode(w.data(), {FEAT_BUILD_ID: table, FEAT_CMDLINE: strings([b"victim"])})
    (tmp_path / "perf.data").write_bytes(data)
    res = run([*_options(app), "--input", str(tmp_path / "perf.data")], TIMEOUT)
    assert res.code == 0 and res.samples == n


def _debuglinked(tmp_path, target) -> tuple[str, str]:
    """A stripped copy of PROG whose .gnu_debuglink names `prog.debug`, which is `target`
    (a FIFO or a link to /proc/self/fd/0); (directory, program path)."""
    d = tmp_path / "linked"
    d.mkdir()
    prog = d / "prog"
    subprocess.run(["objcopy", "--only-keep-debug", str(PROG), str(d / "real.debug")],
                   check=True)
    subprocess.run(["objcopy", "--strip-all", "--remove-section=.note.gnu.build-id",
                    f"--add-gnu-debuglink={d / 'real.debug'}", str(PROG), str(prog)],
                   check=True)
    (d / "real.debug").rename(d / "prog.debug.orig")
    target(d / "prog.debug")
    return d, prog


@pytest.mark.parametrize("kind", ["fifo", "stdin-link", "stdout-link"])
def test_debuglink_target_special_file(tmp_path, kind):
    make = {"fifo": os.mkfifo,
            "stdin-link": lambda p: os.symlink("/proc/self/fd/0", p),
            "stdout-link": lambda p: os.symlink("/proc/self/fd/1", p)}[kind]
    d, prog = _debuglinked(tmp_path, make)
    w, n = recording([], prog=str(prog).encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run([*_options(d), "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 0 and res.samples == n


def test_perf_map_and_kallsyms_special_files(tmp_path, app):
    maps = tmp_path / "maps"
    maps.mkdir()
    os.mkfifo(maps / f"perf-{PID}.map")
    w, n = recording([b"//anon"])
    (tmp_path / "pipe.data").write_bytes(w.data())
    kallsyms = tmp_path / "kallsyms"
    os.mkfifo(kallsyms)
    opts = _options(app, perf_map_path=maps)
    opts[opts.index("--kallsyms") + 1] = str(kallsyms)
    res = run([*opts, "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 0 and res.samples == n
    # the same with a map that is a link to our own stdout
    os.unlink(maps / f"perf-{PID}.map")
    os.symlink("/proc/self/fd/1", maps / f"perf-{PID}.map")
    res = run([*opts, "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 0 and res.samples == n


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path):
    from perfparser_py.regular import open_regular, read_regular

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_bytes(b"12345")
    os.symlink(tmp_path / "file", tmp_path / "link")
    assert open_regular(str(tmp_path / "fifo")) is None
    assert open_regular("/dev/zero") is None
    assert open_regular(str(tmp_path / "missing")) is None
    assert read_regular(str(tmp_path / "link"), 10) == b"12345"
    assert read_regular(str(tmp_path / "link"), 10, follow=False) is None
    assert read_regular(str(tmp_path / "file"), 4) is None
