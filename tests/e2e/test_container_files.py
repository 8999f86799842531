"""A process in its own mount namespace (a container's) maps files this machine has at the
same path with other contents, or not at all. perf records the build ids of the files the
process sees (it reads them through the process's namespace), and `perf script` names their
frames through it while the process runs. Ours takes the file the process sees,
/proc/PID/root/PATH, when no file here has the recorded build id, and never a file of another
build id.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from tests.corpus.expect import decode, run_parser
from tests.e2e.programs import build_c

# the functions a sample of the container's build may be in
INSIDE = {"work_container", "main"}
PROGRAM = r"""
static volatile long sink;
__attribute__((noinline)) void work_NAME(void) { for (long i = 0; i < 100000; i++) sink += i; }
int main(void) { for (;;) work_NAME(); }
"""


@pytest.fixture
def programs(tmp_path: Path):
    """(the program's path, the process running it in a mount namespace of its own where
    the path holds another build, the one running it here); both are killed at the end."""
    host = build_c(tmp_path, "host", PROGRAM.replace("NAME", "host"), "-O1", "-g")
    inside = build_c(tmp_path, "inside", PROGRAM.replace("NAME", "container"), "-O1", "-g")
    (tmp_path / "bin").mkdir()
    prog = tmp_path / "bin" / "prog"
    prog.write_bytes(host.read_bytes())
    prog.chmod(0o755)
    procs = [subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f'mount --bind "{inside}" "{prog}" && exec "{prog}"']),
             subprocess.Popen([str(prog)])]
    try:
        deadline = time.monotonic() + 10
        for proc in procs:
            while os.readlink(f"/proc/{proc.pid}/exe") != str(prog):  # until the exec
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.01)
        yield prog, *procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _record(data: Path, *procs) -> Path:
    subprocess.run(["perf", "record", "-q", "-N", "-g", "-p",
                    ",".join(str(p.pid) for p in procs), "-o", str(data), "--", "sleep", "0.3"],
                   check=True, timeout=60, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return data


def _names(data: Path) -> tuple[dict[int, set[str | None]], str]:
    """The names of the program's leaf frames per process, and the parser's stderr."""
    res = run_parser(["--input", str(data), "--no-cache"])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    samples, _ = decode(res.stdout)
    names: dict[int, set[str | None]] = {}
    for s in samples:
        if s.frames and s.frames[0].dso == "prog":
            names.setdefault(s.pid, set()).add(s.frames[0].sym)
    return names, res.stderr.decode()


def test_a_containers_file_is_the_one_it_sees(programs, tmp_path: Path) -> None:
    prog, inside, _here = programs
    data = _record(tmp_path / "inside.data", inside)
    names, _err = _names(data)
    assert list(names) == [inside.pid]
    assert "work_container" in names[inside.pid] <= INSIDE  # a sample may be in main's loop
    inside.kill()
    inside.wait()
    # gone with the process: the file here has another build id, so no name, and a warning
    names, err = _names(data)
    assert names == {inside.pid: {None}}
    assert f"{prog}: build id differs from the recorded one" in err


def test_one_path_two_files(programs, tmp_path: Path) -> None:
    """The path maps a file here and another in the container: perf lists both build ids
    under one name. Each process gets its own file, or none; never the other's."""
    _prog, inside, here = programs
    names, _err = _names(_record(tmp_path / "both.data", inside, here))
    assert "work_container" in names[inside.pid] <= INSIDE
    assert names[here.pid] <= {"work_host", "main", None}


def test_a_view_of_the_same_files_changes_nothing(tmp_path: Path) -> None:
    """systemd runs many services in mount namespaces of their own (PrivateTmp,
    ProtectSystem) that show this machine's files: their frames are those of any process,
    the file here, not a copy of it under /proc/PID/root."""
    prog = build_c(tmp_path, "prog", PROGRAM.replace("NAME", "same"), "-O1", "-g")
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", str(prog)])
    try:
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{proc.pid}/exe") != str(prog):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        assert os.readlink(f"/proc/{proc.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        data = _record(tmp_path / "same.data", proc)
        res = run_parser(["--input", str(data), "--no-cache"])
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    samples, stream = decode(res.stdout)
    names = {s.frames[0].sym for s in samples if s.frames and s.frames[0].dso == "prog"}
    assert "work_same" in names <= {"work_same", "main"}
    strings = {m.id: m.string for m in stream.messages if isinstance(m, P.String)}
    actual = {strings.get(m.actual_path) for m in stream.messages if isinstance(m, P.Symbol)}
    assert not [a for a in actual if a and a.startswith(b"/proc/")]
