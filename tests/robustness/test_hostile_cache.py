"""Issue 24 rule 4: the persistent cache does not trust its directory. It is created 0700
whatever the umask; a directory of another user, or one others may write, is refused with one
warning; an entry that is a link, a FIFO or too large is never read, and a well-formed entry
whose values have the wrong types is a miss. In every case the output is the --no-cache one."""

from __future__ import annotations

import marshal
import os
import stat
import struct
import zlib

import lz4.block
import pytest

from tests.robustness.fuzzer import CORPUS
from tests.robustness.hostile import run

INLINE = CORPUS / "recorded" / "inline"
TIMEOUT = 20
_HEAD = struct.Struct("<8sIII")


def _args(*more) -> list[str]:
    return ["--input", str(INLINE / "perf.data"), "--app", str(INLINE), "--kallsyms",
            "/dev/null", "--protocol", "current", *more]


@pytest.fixture(scope="module")
def uncached() -> bytes:
    return run(_args("--no-cache"), TIMEOUT).output


def _run(xdg, umask: int | None = None):
    env = {"XDG_CACHE_HOME": str(xdg), "PERFPARSER_PY_SPLIT": "0"}
    if umask is None:
        return run(_args(), TIMEOUT, env)
    old = os.umask(umask)  # inherited by the child
    try:
        return run(_args(), TIMEOUT, env)
    finally:
        os.umask(old)


def _entries(xdg) -> list:
    return sorted((xdg / "perfparser-py").glob("*.ppc"))


def test_directory_created_private_whatever_the_umask(tmp_path, uncached):
    res = _run(tmp_path, umask=0)
    assert res.output == uncached
    mode = stat.S_IMODE(os.stat(tmp_path / "perfparser-py").st_mode)
    assert mode == 0o700, oct(mode)
    assert _entries(tmp_path)


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "other-owner"])
def test_untrusted_directory_refused_with_one_warning(tmp_path, uncached, how):
    d = tmp_path / "perfparser-py"
    d.mkdir()
    if how == "other-owner":
        os.chmod(d, 0o700)
        os.chown(d, 65534, 65534)  # nobody (the tests run as root, as CI does)
    else:
        os.chmod(d, 0o777 if how == "world-writable" else 0o770)
    res = _run(tmp_path)
    assert res.output == uncached
    assert res.stderr.count("cache directory") == 1, res.stderr
    assert not _entries(tmp_path)  # nothing written there either


def _reframe(path, change) -> None:
    """Rewrite the entry at `path` with change(marshalled record) as its record, correctly
    framed."""
    raw = path.read_bytes()
    magic, fmt, _crc, klen = _HEAD.unpack_from(raw)
    key = raw[_HEAD.size:_HEAD.size + klen]
    body = lz4.block.compress(change(lz4.block.decompress(raw[_HEAD.size + klen:])))
    path.write_bytes(_HEAD.pack(magic, fmt, zlib.crc32(body), klen) + key + body)


def _poison(path, change) -> None:
    """Rewrite the entry at `path` with change(data) as its record, correctly framed."""
    _reframe(path, lambda body: marshal.dumps(change(marshal.loads(body))))


def _ill_typed(data: dict) -> dict:
    out = dict(data)
    if "lines" in out:
        out["lines"] = {k: ("file", "line", None) for k in out["lines"]}
    if "scopes" in out:
        out["scopes"] = {k: ((1, 2), "x") for k in out["scopes"]}
    if "symbols" in out:
        values, sizes, names, strings = out["symbols"]
        out["symbols"] = (["0"] * len(values), sizes, names, strings)
    return out


def _replace(how):
    def fifo(p):
        p.unlink()
        os.mkfifo(p)

    def zero(p):
        p.unlink()
        os.symlink("/dev/zero", p)

    def huge(p):  # a sparse 1 GiB file
        with open(p, "r+b") as f:
            f.truncate(1 << 30)

    def nones(p):  # 100 MB of marshal (400 KB in the entry) that loads as 100 M Nones, 900 MB
        n = 100_000_000
        _reframe(p, lambda _body: b"[" + struct.pack("<I", n) + b"N" * n)

    return {"fifo": fifo, "symlink-to-dev-zero": zero, "huge": huge, "decode-bomb": nones,
            "ill-typed": lambda p: _poison(p, _ill_typed),
            "not-a-dict": lambda p: _poison(p, lambda d: [d])}[how]


@pytest.mark.parametrize("how", ["fifo", "symlink-to-dev-zero", "huge", "ill-typed",
                                 "not-a-dict", "decode-bomb"])
def test_hostile_entries_are_misses(tmp_path, uncached, how):
    first = _run(tmp_path)
    assert first.output == uncached
    entries = _entries(tmp_path)
    assert entries
    for p in entries:
        _replace(how)(p)
    res = _run(tmp_path)
    assert res.output == uncached
    assert res.seconds < 10
    assert res.max_rss < 300 << 20, res.max_rss


def test_record_shapes():
    """valid_record() accepts what the code writes and nothing else (found by the fuzzer: an
    empty tuple, being falsy, once slipped through)."""
    from perfparser_py.cache import valid_record

    scope = ("f", 1, b"a.c", 2, 0, None, 0, 0, 9)
    good = {"symbols": ([1, 2], [0, 4], [0, 2], b"x\0y\0"), "dwarf": True,
            "lines": {1: (b"a.c", 3, 4), 2: None}, "scopes": {1: (scope, (scope,)), 2: None},
            "parsed": True, "lookups": {5: (5, "f", ""), 6: None}}
    assert valid_record(good)
    for key, bad in [("lines", {1: ()}), ("scopes", {1: ()}), ("scopes", {1: 0}),
                     ("scopes", {1: (scope[:8], ())}), ("lookups", {1: (1, "f")}),
                     ("symbols", ([1], [0], [0, 1], b"")), ("dwarf", 1), ("lines", {"1": None}),
                     ("unknown", 1)]:
        assert not valid_record({**good, key: bad}), (key, bad)
