"""PerfMap: incremental reading of perf-PID.map, lookup rules, file location."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfparser_py.jitmap import PerfMap


def test_corpus_jit_map(corpus_dir: Path) -> None:
    path = corpus_dir / "recorded/jit/perf-28417.map"
    pm = PerfMap(str(path))
    first = path.read_text().splitlines()[0].split(" ")
    start, length = int(first[0], 16), int(first[1], 16)
    assert pm.lookup(start) == (start, first[2])
    assert pm.lookup(start + length - 1) == (start, first[2])


def test_incremental_reads(tmp_path: Path) -> None:
    path = tmp_path / "perf-7.map"
    path.write_text("1000 10 first\n")
    pm = PerfMap(str(path))
    assert pm.lookup(0x1005) == (0x1000, "first")
    assert pm.lookup(0x2000) is None
    with open(path, "a") as f:
        f.write("0x2000 0x20  second  with spaces \n3000 8 par")  # last line unfinished
    assert pm.lookup(0x2000) is None  # not read until refresh()
    pm.refresh()
    assert pm.lookup(0x201F) == (0x2000, "second  with spaces")
    assert pm.lookup(0x2020) is None
    assert pm.lookup(0x3000) is None
    with open(path, "a") as f:
        f.write("tial\n500 10 early\nzz 10 bad\n600 10\n1000 4 replaced\n")
    pm.refresh()
    assert pm.lookup(0x3007) == (0x3000, "partial")
    assert pm.lookup(0x505) == (0x500, "early")
    assert pm.lookup(0x1002) == (0x1000, "replaced")  # later line wins on equal start
    assert pm.lookup(0x1008) is None  # the covering entry is the later, shorter one
    pm.refresh()  # nothing new
    assert pm.lookup(0x505) == (0x500, "early")


def test_missing_file(tmp_path: Path) -> None:
    pm = PerfMap(str(tmp_path / "perf-1.map"))
    assert pm.lookup(0x1000) is None


def test_path_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir, option = tmp_path / "tmp", tmp_path / "opt"
    tmpdir.mkdir()
    option.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    assert PerfMap.path_for(42, str(option)) is None
    (tmpdir / "perf-42.map").write_text("")
    assert PerfMap.path_for(42, str(option)) == str(tmpdir / "perf-42.map")
    assert PerfMap.path_for(42, None) == str(tmpdir / "perf-42.map")
    (option / "perf-42.map").write_text("")
    assert PerfMap.path_for(42, str(option)) == str(option / "perf-42.map")
    monkeypatch.delenv("TMPDIR")
    assert PerfMap.path_for(999999999, None) is None
