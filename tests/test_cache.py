"""The persistent cache: warm runs give the cold run's bytes; corrupt, stale, concurrent and
size-bounded caches are handled; --no-cache / PERFPARSER_NO_CACHE turn it off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py.cache import PersistentCache, file_identity
from perfparser_py.elf.dwarf import DwarfInfo, RecordedDwarf
from perfparser_py.elf.finder import ElfFinder
from tests.corpus.expect import case_options

CASE = "inline"  # DWARF lines and inline scopes, a libc with debug info, kernel frames


def parse(corpus: Path, cache_home: Path, *extra: str, env: dict | None = None,
          wait: bool = True):
    case_dir = corpus / "recorded" / CASE
    cmd = [sys.executable, "-m", "perfparser_py.cli", "--input", str(case_dir / "perf.data"),
           *case_options(case_dir), *extra]
    full_env = {k: v for k, v in os.environ.items() if k != "PERFPARSER_NO_CACHE"}
    full_env.update({"XDG_CACHE_HOME": str(cache_home), **(env or {})})
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in err, err.decode()[-2000:]
    return out


def cache_files(cache_home: Path) -> list[Path]:
    root = cache_home / "perfparser-py"
    return sorted(root.iterdir()) if root.is_dir() else []


@pytest.fixture(scope="module")
def cold(corpus_dir: Path, tmp_path_factory) -> tuple[bytes, Path]:
    """The stream without any cache, and a cache directory filled by one run."""
    home = tmp_path_factory.mktemp("cache")
    plain = parse(corpus_dir, home, "--no-cache")
    assert cache_files(home) == []
    assert parse(corpus_dir, home) == plain
    assert [p.suffix for p in cache_files(home)] and all(
        p.suffix == ".ppc" for p in cache_files(home))
    return plain, home


def test_warm_run_is_byte_identical(corpus_dir: Path, cold) -> None:
    plain, home = cold
    before = {p: p.stat().st_mtime_ns for p in cache_files(home)}
    assert parse(corpus_dir, home) == plain
    # nothing new to learn: no file was rewritten
    assert {p: p.stat().st_mtime_ns for p in cache_files(home)}.keys() == before.keys()


def test_environment_turns_it_off(corpus_dir: Path, cold, tmp_path: Path) -> None:
    plain, _home = cold
    assert parse(corpus_dir, tmp_path, env={"PERFPARSER_NO_CACHE": "1"}) == plain
    assert cache_files(tmp_path) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_files_are_ignored(corpus_dir: Path, cold, tmp_path: Path, damage: str) -> None:
    plain, home = cold
    target = tmp_path / "home"
    (target / "perfparser-py").mkdir(parents=True)
    for p in cache_files(home):
        data = bytearray(p.read_bytes())
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip":
            data[-3] ^= 0x55
        elif damage == "garbage":
            data = bytearray(b"PPYCACHE" + os.urandom(64))
        else:
            data = bytearray()
        (target / "perfparser-py" / p.name).write_bytes(data)
    assert parse(corpus_dir, target) == plain
    # the damaged files were replaced by good ones
    again = tmp_path / "again"
    (again / "perfparser-py").mkdir(parents=True)
    for p in cache_files(target):
        (again / "perfparser-py" / p.name).write_bytes(p.read_bytes())
    assert parse(corpus_dir, again) == plain


def test_concurrent_runs(corpus_dir: Path, cold, tmp_path: Path) -> None:
    plain, _home = cold
    procs = [parse(corpus_dir, tmp_path, wait=False) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out == plain, err.decode()[-2000:]
    assert all(p.suffix == ".ppc" for p in cache_files(tmp_path))  # no temporary left over
    assert parse(corpus_dir, tmp_path) == plain


def test_records_round_trip_and_key_check(tmp_path: Path) -> None:
    cache = PersistentCache(str(tmp_path))
    rec = cache.record("image", "a")
    assert rec.data == {}
    rec.data["symbols"] = ([1, 2], [0, 4], [0, 2], b"x\0y\0")
    rec.data["scopes"] = {5: None, 6: (("f", 1, b"a.c", 2, 0, None, 0, 0, 9), ())}
    rec.dirty = True
    cache.save()
    fresh = PersistentCache(str(tmp_path)).record("image", "a")
    assert fresh.data == rec.data
    assert PersistentCache(str(tmp_path)).record("image", "b").data == {}
    # a file whose stored key differs (hash collision, or copied by hand) is a miss
    moved = PersistentCache(str(tmp_path)).record("image", "c")
    Path(moved.path).write_bytes(Path(rec.path).read_bytes())
    assert PersistentCache(str(tmp_path)).record("image", "c").data == {}


def test_unwritable_directory_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    cache = PersistentCache(str(blocker / "sub"))
    rec = cache.record("x")
    rec.data["v"] = 1
    rec.dirty = True
    cache.save()  # cannot create the directory: silently not cached
    assert PersistentCache(str(blocker / "sub")).record("x").data == {}


def test_size_bound_evicts_least_recently_used(tmp_path: Path) -> None:
    cache = PersistentCache(str(tmp_path), max_bytes=3000)
    blob = os.urandom(900)  # incompressible
    paths = []
    for i in range(6):
        rec = cache.record("image", str(i))
        rec.data["symbols"] = ([], [], [], blob)
        rec.dirty = True
        cache.save()
        paths.append(Path(rec.path))
        os.utime(rec.path, ns=(i * 10**9, i * 10**9))
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 3000
    kept = [p.exists() for p in paths]
    assert kept[-1] and not kept[0] and kept == sorted(kept)  # oldest went first
    # a hit refreshes the file's age
    first_kept = paths[kept.index(True)]
    assert PersistentCache(str(tmp_path)).record("image", str(kept.index(True))).data
    assert first_kept.stat().st_mtime_ns > paths[-1].stat().st_mtime_ns


def test_from_env(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PERFPARSER_CACHE_MAX_MB": "7"}
    cache = PersistentCache.from_env(env=env)
    assert cache.root == str(tmp_path / "perfparser-py") and cache.max_bytes == 7 << 20
    assert PersistentCache.from_env(False, env) is None
    assert PersistentCache.from_env(env={**env, "PERFPARSER_NO_CACHE": "1"}) is None
    assert PersistentCache.from_env(env={**env, "PERFPARSER_NO_CACHE": "0"}) is not None


def test_recorded_dwarf_answers_like_dwarf(corpus_dir: Path, tmp_path: Path) -> None:
    case_dir = corpus_dir / "recorded" / CASE
    sysroot = str(corpus_dir / "sysroot") + "/"
    debug = [str(corpus_dir / "sysroot/usr/lib/debug")]
    addrs = None
    answers = []
    for _round in range(2):  # cold, then from the saved record
        finder = ElfFinder(str(case_dir), [], sysroot, debug, {}, use_cache=False)
        finder.cache = PersistentCache(str(tmp_path))
        _path, image = finder.find(b"/usr/lib/x86_64-linux-gnu/libc.so.6")
        assert image is not None and image.cache is not None
        info = DwarfInfo.for_image(image)
        assert isinstance(info, RecordedDwarf)
        if addrs is None:
            plain = DwarfInfo.decode(image)
            lo, hi = image.span()
            addrs = list(range(lo + 0x28000, lo + 0x28000 + 0x4000, 0x61))
            want = [(plain.line_at(a), repr(plain.scopes_at(a))) for a in addrs]
        answers.append([(info.line_at(a), repr(info.scopes_at(a))) for a in addrs])
        assert (info._info is None) == (_round == 1)  # warm: the DWARF was never opened
        assert image.symbol_at(addrs[0]) is not None
        finder.save_cache()
    assert answers[0] == want and answers[1] == want
    assert sum(1 for line, scopes in want if line and "Scope(" in scopes) > len(want) // 2
    assert file_identity(str(tmp_path / "missing")) is None


def test_kallsyms_answers_from_the_record(corpus_dir: Path, tmp_path: Path) -> None:
    from perfparser_py.cache import set_current
    from perfparser_py.kernel.kallsyms import Kallsyms, KallsymsError, RecordedKallsyms

    path = str(corpus_dir / "kallsyms/kallsyms.gz")
    plain = Kallsyms.load(path)
    probes = [a + d for a in plain._addrs[::997] for d in (0, 5)] + [0, 1 << 64]
    bad = tmp_path / "bad"
    bad.write_bytes(b"ffffffff81000000 T a\nzz T b\n")
    try:
        for warm in (False, True):
            cache = PersistentCache(str(tmp_path / "c"))
            set_current(cache)
            table = Kallsyms.load(path)
            assert isinstance(table, RecordedKallsyms)
            assert [table.lookup(a) for a in probes] == [plain.lookup(a) for a in probes]
            assert (table._table is None) == warm  # warm: the text was never parsed
            with pytest.raises(KallsymsError, match="Invalid address: zz"):
                Kallsyms.load(str(bad))
            cache.save()
    finally:
        set_current(None)


def test_the_code_version_covers_every_module_that_fills_records():
    """A record is valid only for the code that computed it: every module that reads or
    fills one (image.cache, cache.current()) changes the version when it changes."""
    import re
    from pathlib import Path

    from perfparser_py import cache

    package = Path(cache.__file__).resolve().parent
    assert all((package / rel).is_file() for rel in cache._CODE)
    fills = {str(p.relative_to(package)) for p in package.rglob("*.py")
             if re.search(r"\bimage\.cache\b|= self\.cache$|from \.+cache import current",
                          p.read_text(), re.M)}
    fills -= {"elf/finder.py"}  # it makes the records' keys, not their contents
    assert fills and fills <= set(cache._CODE), fills - set(cache._CODE)
    # the DWARF package computes the lines and scopes a record keeps in all its modules, not
    # only in the one that touches image.cache
    dwarf = {str(p.relative_to(package)) for p in (package / "elf" / "dwarf").glob("*.py")}
    assert len(dwarf) > 2 and dwarf <= set(cache._CODE), dwarf - set(cache._CODE)
