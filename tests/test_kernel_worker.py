"""KallsymsWorker: the table parsed in a forked process answers every lookup the way a
table parsed here does, and any trouble with the worker falls back to parsing here."""

from __future__ import annotations

import hashlib
import io
import os
import random
import signal
from pathlib import Path

import pytest

from perfparser_py import cache, cpus
from perfparser_py.cli import make_options, parse_args
from perfparser_py.kernel import kallsyms
from perfparser_py.kernel.kallsyms import Kallsyms, KallsymsError
from perfparser_py.kernel.symbols import OwnCopy, likely_path
from perfparser_py.kernel.worker import KallsymsWorker
from perfparser_py.perfdata.header import excludes_kernel
from perfparser_py.run import run
from tests.corpus.expect import CORPUS, case_options
from tests.test_kernel_fast import random_kallsyms

pytestmark = pytest.mark.skipif(cpus.usable() < 2,
                                reason="the worker needs two CPUs")  # CI machines have them


def probes(table: Kallsyms, rng: random.Random) -> list[int]:
    """Addresses around every entry (exact, one past, one before) and random ones."""
    addrs = list(table._addrs)
    out = [0, 1, (1 << 64) - 1]
    for a in addrs:
        out += [a, a + 1, a - 1]
    out += [rng.randrange(addrs[0] - 64, addrs[-1] + 64) for _ in range(200)]
    return out


def worker_table(path: str, own: OwnCopy | None = None) -> tuple[str, Kallsyms]:
    worker = KallsymsWorker.start(path, own)
    assert worker is not None
    got = worker.table(path)
    assert got is not None
    return got


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", ["random", "sorted", "crlf"])
def test_worker_table_answers_like_a_local_parse(tmp_path: Path, seed: int, shape: str):
    rng = random.Random(seed)
    data = random_kallsyms(rng, 300)  # unsorted, zero addresses, modules
    if shape == "sorted":  # the file order /proc/kallsyms has without modules
        data = b"".join(sorted(line for line in data.splitlines(keepends=True)
                               if not line.startswith(b"0000")))
    elif shape == "crlf":  # line by line parse
        data = data.replace(b"\n", b"\r\n")
    path = tmp_path / "kallsyms"
    path.write_bytes(data)
    local = Kallsyms.parse(data)
    key, remote = worker_table(str(path))
    assert key == kallsyms.cache_key(*kallsyms.read(str(path)))
    assert len(remote) == len(local)
    for addr in probes(local, rng):
        assert remote.lookup(addr) == local.lookup(addr), hex(addr)


def test_cache_key_is_the_file_identity_else_the_content_digest(tmp_path: Path):
    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T start\n")
    key, _table = worker_table(str(path))
    assert key == "file:" + cache.file_identity(str(path))
    path.write_bytes(b"ffffffff81000000 T other\n")  # rewritten in place: a new key
    assert worker_table(str(path))[0] not in (key, None)
    # a file whose size says nothing about its content (procfs: 0) is keyed by content
    data, identity = kallsyms.read("/proc/self/maps")
    assert identity is None and len(data) > 0
    assert kallsyms.cache_key(data, None) == "sha256:" + hashlib.sha256(data).hexdigest()


def test_gzip_file_and_errors_match_a_local_load(tmp_path: Path):
    import gzip

    path = tmp_path / "kallsyms.gz"
    path.write_bytes(gzip.compress(b"ffffffff81000000 T start\nffffffff81000100 t next\n"))
    _key, table = worker_table(str(path))
    assert table.lookup(0xFFFFFFFF81000104) == (0xFFFFFFFF81000100, "next", "")
    for name, content in [("missing", None), ("empty", b""), ("zeros", b"0" * 16 + b" T a\n"),
                          ("badhex", b"ffffffffz1000000 T a\n"), ("bad.gz", b"\x1f\x8bnot")]:
        bad = tmp_path / name
        if content is not None:
            bad.write_bytes(content)
        with pytest.raises(KallsymsError) as here:
            Kallsyms.load(str(bad))
        worker = KallsymsWorker.start(str(bad))
        with pytest.raises(KallsymsError) as there:
            worker.table(str(bad))
        assert str(there.value) == str(here.value)


def test_another_path_or_a_dead_worker_means_a_local_parse(tmp_path: Path):
    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T start\n")
    worker = KallsymsWorker.start(str(path))
    assert worker.table(str(tmp_path / "other")) is None
    assert worker.table(str(path)) is not None
    worker = KallsymsWorker.start(str(path))
    os.kill(worker._pid, signal.SIGKILL)
    os.waitpid(worker._pid, 0)
    worker._pid = 0  # reaped here already
    assert worker.table(str(path)) is None
    table = Kallsyms.load(str(path), worker)  # falls back
    assert table.lookup(0xFFFFFFFF81000010) == (0xFFFFFFFF81000000, "start", "")


def test_close_ends_and_reaps_the_worker(tmp_path: Path):
    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T start\n" * 50_000)
    worker = KallsymsWorker.start(str(path))
    pid = worker._pid
    worker.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert worker._replies == worker._memfd == -1
    assert worker.table(str(path)) is None


def test_a_later_fork_does_not_keep_the_workers_pipe(tmp_path: Path):
    """A split run's reading process is forked after the worker: it must not hold the
    worker's descriptors (they would outlive this process in it)."""
    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T start\n")
    worker = KallsymsWorker.start(str(path))
    pid = os.fork()
    if pid == 0:
        os._exit(0 if worker._replies == -1 and not KallsymsWorker._open else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert worker.table(str(path)) is not None


def test_load_records_the_worker_table_in_the_persistent_cache(tmp_path: Path):
    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T start\nffffffff81000100 t next\t[mod]\n")
    store = cache.PersistentCache(str(tmp_path / "cache"))
    cache.set_current(store)
    try:
        first = Kallsyms.load(str(path), KallsymsWorker.start(str(path)))
        assert first.lookup(0xFFFFFFFF81000101) == (0xFFFFFFFF81000100, "next", "[mod]")
        assert not first.in_image(0xFFFFFFFF81000010)  # the next line is a module's
        store.save()
        cache.set_current(cache.PersistentCache(str(tmp_path / "cache")))
        warm = Kallsyms.load(str(path))  # parses nothing: the answers are recorded
        assert warm._table is None
        assert warm.lookup(0xFFFFFFFF81000101) == (0xFFFFFFFF81000100, "next", "[mod]")
        assert not warm.in_image(0xFFFFFFFF81000010) and warm._table is None
    finally:
        cache.set_current(None)


def test_the_worker_keeps_the_runs_own_copy_of_proc_kallsyms(tmp_path: Path):
    """The worker reading /proc/kallsyms keeps the run's own copy of it before it replies
    (the run ends it once it has the table); a copy that exists is not written again."""
    own = OwnCopy.of_running_kernel(cache.PersistentCache(str(tmp_path)), None, "/")
    assert own is not None
    _key, table = worker_table("/proc/kallsyms", own)
    copy = Path(own.path)
    assert copy.is_file()
    assert Kallsyms.parse(copy.read_bytes()).address_of(b"_text") == table.address_of(b"_text")
    copy.write_bytes(b"ffffffff81000000 T _text\n")
    worker_table("/proc/kallsyms", own)
    assert copy.read_bytes() == b"ffffffff81000000 T _text\n"


def test_likely_path():
    """Known before the recording is read: what a recording of the running kernel reads."""
    assert likely_path("/k", "/") == "/k"
    assert likely_path(None, "/") == "/proc/kallsyms"  # not "//proc/kallsyms" in messages
    assert likely_path(None, "") == "/proc/kallsyms"
    assert likely_path(None, "/sr") == likely_path(None, "/sr/") == "/sr/proc/kallsyms"


def _kernel_cases():
    for case in sorted((CORPUS / "recorded").iterdir()):
        if (case / "case.toml").is_file() and case.name != "badinput":
            for data in sorted(case.glob("*.data*")):
                yield pytest.param(data, id=f"{case.name}-{data.name}")


@pytest.mark.parametrize("data", list(_kernel_cases()))
def test_runs_with_a_worker_write_what_runs_without_write(monkeypatch, data: Path):
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "0")
    monkeypatch.setenv("PERFPARSER_NO_CACHE", "1")
    options = make_options(parse_args(["--input", str(data), *case_options(data.parent)]))
    plain = io.BytesIO()
    assert run(options, plain) == 0
    stream, path, asked = run_with_worker(monkeypatch, options)
    assert stream == plain.getvalue()
    if b"[kernel.kallsyms]" in plain.getvalue():
        assert asked == [path]  # the worker's table was the one used


def run_with_worker(monkeypatch, options) -> tuple[bytes, str, list[str]]:
    """A run with the kallsyms worker started as cli starts it: (its stream, the path the
    worker parsed, the paths the run asked the worker for)."""
    path = likely_path(options.kallsyms, options.sysroot)
    worker = KallsymsWorker.start(path)
    asked = []
    real_table = KallsymsWorker.table
    monkeypatch.setattr(KallsymsWorker, "table",
                        lambda self, p: asked.append(p) or real_table(self, p))
    out = io.BytesIO()
    try:
        assert run(options, out, worker) == 0
    finally:
        worker.close()
    return out.getvalue(), path, asked


USER_ONLY = CORPUS / "upstream" / "cpp-inlining" / "cpp-inlining.perf.data"  # `:u` events


def test_excludes_kernel_reads_every_attr_s_exclude_kernel(tmp_path: Path):
    assert excludes_kernel(str(USER_ONLY))
    with_kernel = next(_kernel_cases()).values[0]
    assert not excludes_kernel(str(with_kernel))
    # one attr of several that may sample the kernel is enough to want kallsyms
    raw = bytearray(USER_ONLY.read_bytes())
    attr_size, attrs_offset, attrs_size = (int.from_bytes(raw[o:o + 8], "little")
                                           for o in (16, 24, 32))
    assert attrs_size // attr_size == 3
    raw[attrs_offset + attr_size + 40] &= ~(1 << 5)  # the second attr's exclude_kernel
    second = tmp_path / "second-attr-kernel.data"
    second.write_bytes(raw)
    assert not excludes_kernel(str(second))
    # what it cannot read says "not excluded": the worker starts as before
    assert not excludes_kernel(str(tmp_path / "missing.data"))
    assert not excludes_kernel(str(tmp_path))
    (tmp_path / "short.data").write_bytes(USER_ONLY.read_bytes()[:50])
    assert not excludes_kernel(str(tmp_path / "short.data"))
    far = bytearray(USER_ONLY.read_bytes())
    far[24:32] = (2**64 - 8).to_bytes(8, "little")  # attrs past any file (and any seek)
    (tmp_path / "far.data").write_bytes(far)
    assert not excludes_kernel(str(tmp_path / "far.data"))


@pytest.mark.parametrize(("data", "started"), [(USER_ONLY, False),
                                               (next(_kernel_cases()).values[0], True)])
def test_cli_starts_the_worker_only_for_recordings_that_may_hold_kernel_frames(
        monkeypatch, tmp_path: Path, data: Path, started: bool):
    from perfparser_py import cli

    monkeypatch.setenv("PERFPARSER_NO_CACHE", "1")
    monkeypatch.delenv("PERFPARSER_PY_SPLIT", raising=False)
    starts = []
    real_start = KallsymsWorker.start
    monkeypatch.setattr(KallsymsWorker, "start",
                        staticmethod(lambda path, own=None: starts.append(path)
                                     or real_start(path, own)))
    out = tmp_path / "out.bin"
    assert cli.main(["--input", str(data), "--output", str(out),
                     *case_options(data.parent)]) == 0
    assert bool(starts) == started
    assert out.stat().st_size > 0
