"""The replay cache (perfparser_py/replay.py): a second run of the same recording with the same
settings gives the first run's stream, stderr and exit code without running, and runs again
as soon as anything it depended on changed: a file it read, a file it looked for and did not
find, a search directory, an option, the environment, the code. Damaged entries are misses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfparser_py import replay
from tests.corpus.expect import CORPUS, case_options

SHAREDLIB = CORPUS / "recorded" / "sharedlib"  # a program and its own .so, found by --app
SYSWIDE = CORPUS / "recorded" / "syswide-dwarf"  # warnings on stderr


def _env(cache: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PERFPARSER_NO_REPLAY", "PERFPARSER_NO_CACHE")}
    env.update(XDG_CACHE_HOME=str(cache), PERFPARSER_PY_SPLIT="0")
    env.update(more)
    return env


def parse(args: list[str], cache: Path, *python: str, **env: str):
    """(stdout, stderr, exit code, whether it ran rather than replayed) of one CLI run."""
    cmd = [sys.executable, *python, "-X", "importtime", "-m", "perfparser_py.cli", *args]
    proc = subprocess.run(cmd, capture_output=True, env=_env(cache, **env), timeout=300)
    err = proc.stderr.decode()
    ran = "perfparser_py.pipeline" in err
    # -X importtime's lines are not the parser's
    err = "".join(line for line in err.splitlines(keepends=True)
                  if not line.startswith("import time:"))
    return proc.stdout, err, proc.returncode, ran


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "perfparser-py").glob("*.ppr"))


def _copies(root: Path, n: int) -> list[Path]:
    """`n` copies of the sharedlib case, old enough to be stored (replay.py stores no run
    that saw a file changed within the last second)."""
    made = []
    for i in range(n):
        d = root / f"app{i}"
        d.mkdir()
        for name in ("perf.data", "libuser", "libhot.so"):
            shutil.copy2(SHAREDLIB / name, d / name)
        made.append(d)
    time.sleep(1.1)
    return made


@pytest.fixture(scope="module")
def _pool(tmp_path_factory) -> list[Path]:
    return _copies(tmp_path_factory.mktemp("apps"), 24)  # one wait for all the tests


@pytest.fixture
def app(_pool: list[Path], tmp_path: Path) -> Path:
    """A copy of the sharedlib case of this test's own."""
    return _pool.pop() if _pool else _copies(tmp_path, 1)[0]


def _args(app: Path, *more: str) -> list[str]:
    opts = case_options(SHAREDLIB)
    opts[opts.index("--app") + 1] = str(app)
    return ["--input", str(app / "perf.data"), *opts, *more]


def test_second_run_replays_the_first(tmp_path: Path, app: Path) -> None:
    cache = tmp_path / "cache"
    first = parse(_args(app), cache)
    assert first[2] == 0 and first[3]
    assert len(entries(cache)) == 1
    second = parse(_args(app), cache)
    assert second[:3] == first[:3]
    assert not second[3], "the second run ran instead of replaying"


def test_stderr_and_exit_code_are_replayed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ["--input", str(SYSWIDE / "perf.data"), *case_options(SYSWIDE)]
    first = parse(args, cache)
    assert first[1] and first[3]
    second = parse(args, cache)
    assert not second[3]
    assert second[:3] == first[:3]


def test_a_changed_file_runs_again(tmp_path: Path, app: Path) -> None:
    cache = tmp_path / "cache"
    first = parse(_args(app), cache)
    st = os.stat(app / "libhot.so")
    os.utime(app / "libhot.so", ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))  # same bytes
    again = parse(_args(app), cache)
    assert again[3], "a dependency changed, yet the stored stream was given"
    assert again[:3] == first[:3]


def test_a_file_that_appears_or_goes_runs_again(tmp_path: Path, app: Path) -> None:
    """The library moved away: the run stores a stream without its symbols; put back (a file
    the first run looked for and did not find), the next run finds it."""
    cache = tmp_path / "cache"
    whole = parse(_args(app), cache)
    hidden = tmp_path / "libhot.so"
    (app / "libhot.so").rename(hidden)
    time.sleep(1.1)  # the directory just changed: old enough to be stored
    missing = parse(_args(app), cache)
    assert missing[3] and missing[0] != whole[0]
    assert "libhot.so" in missing[1]
    assert not parse(_args(app), cache)[3]  # stored as it is now
    hidden.rename(app / "libhot.so")
    back = parse(_args(app), cache)
    assert back[3]
    assert back[:3] == whole[:3]


def test_options_and_environment_select_the_entry(tmp_path: Path, app: Path) -> None:
    cache = tmp_path / "cache"
    parse(_args(app), cache)
    assert parse(_args(app, "--max-frames", "2"), cache)[3]
    assert parse(_args(app, "--protocol", "1.3"), cache)[3]
    assert parse(_args(app), cache, TMPDIR=str(tmp_path))[3]  # where perf maps are looked for
    assert not parse(_args(app), cache)[3]
    assert len(entries(cache)) == 4


def test_other_code_runs_again(tmp_path: Path, app: Path) -> None:
    """Another module path is another program; a module of the run that changed, too."""
    cache = tmp_path / "cache"
    parse(_args(app), cache)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text("import extra_module  # noqa: F401\n")
    module = shadow / "extra_module.py"
    module.write_text("VALUE = 1\n")
    time.sleep(1.1)
    path = os.pathsep.join(filter(None, (str(shadow), os.environ.get("PYTHONPATH"))))
    assert parse(_args(app), cache, PYTHONPATH=path)[3]
    assert not parse(_args(app), cache, PYTHONPATH=path)[3]
    module.write_text("VALUE = 2\n")
    time.sleep(1.1)
    assert parse(_args(app), cache, PYTHONPATH=path)[3]
    assert not parse(_args(app), cache)[3]  # the first run's entry still holds


@pytest.mark.parametrize("how", ["no-cache", "no-replay", "stdin", "fails", "recent",
                                 "too-large"])
def test_runs_not_stored(tmp_path: Path, app: Path, how: str) -> None:
    cache = tmp_path / "cache"
    args, env, stdin = _args(app), {}, None
    if how == "no-cache":
        args.append("--no-cache")
    elif how == "no-replay":
        env["PERFPARSER_NO_REPLAY"] = "1"
    elif how == "stdin":
        args = args[2:]
        stdin = open(app / "perf.data", "rb")  # noqa: SIM115 - closed below
    elif how == "fails":
        (app / "cut.data").write_bytes((app / "perf.data").read_bytes()[:5000])
        time.sleep(1.1)
        args[1] = str(app / "cut.data")
    elif how == "recent":
        os.utime(app / "libhot.so")  # ctime: now
    else:
        env["PERFPARSER_CACHE_MAX_MB"] = "0"  # a stream over a quarter of the bound
    cmd = [sys.executable, "-m", "perfparser_py.cli", *args]
    try:
        proc = subprocess.run(cmd, stdin=stdin, capture_output=True, env=_env(cache, **env),
                              timeout=300)
    finally:
        if stdin is not None:
            stdin.close()
    assert (proc.returncode != 0) == (how == "fails"), proc.stderr.decode()
    assert entries(cache) == []


@pytest.mark.parametrize("damage", ["stream", "meta", "trailer", "cut", "empty", "fifo",
                                    "link"])
def test_damaged_entries_are_misses(tmp_path: Path, app: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    first = parse(_args(app), cache)
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    size = replay._TRAILER.unpack_from(data, len(data) - replay._TRAILER.size)[4]
    if damage in ("fifo", "link"):
        entry.unlink()
        if damage == "fifo":
            os.mkfifo(entry)
        else:
            other = tmp_path / "other"
            other.write_bytes(data)
            entry.symlink_to(other)
    else:
        if damage == "stream":
            data[size // 2] ^= 1
        elif damage == "meta":
            data[size + (len(data) - size) // 2] ^= 1
        elif damage == "trailer":
            data[-3] ^= 1
        elif damage == "cut":
            data = data[:len(data) - 9]
        else:
            data = bytearray()
        entry.write_bytes(data)
    again = parse(_args(app), cache)
    assert again[3]
    assert again[:3] == first[:3]


def test_a_split_run_keeps_what_its_reading_process_looked_at(tmp_path: Path,
                                                               app: Path) -> None:
    """The reading process unwinds (and so opens the ELF files) on its own: what it saw comes
    back with its last item, so a split run's entry depends on all a serial run's does."""
    kinds = {}
    for split in ("0", "1"):
        cache = tmp_path / f"cache{split}"
        parse(_args(app), cache, PERFPARSER_PY_SPLIT=split)
        (entry,) = entries(cache)
        kinds[split] = set(replay._read(str(entry), _key_of(entry.read_bytes()))[1])
    assert any("libhot.so" in k for k in kinds["0"])
    assert kinds["0"] <= kinds["1"]


def _key_of(data: bytes) -> bytes:
    _m, _f, klen, _mlen, slen, _s, _c = replay._TRAILER.unpack_from(
        data, len(data) - replay._TRAILER.size)
    return data[slen:slen + klen]
