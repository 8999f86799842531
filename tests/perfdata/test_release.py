"""Bounded memory on large files: the reader releases the mapped input it has consumed."""

from __future__ import annotations

import mmap
import re
from pathlib import Path

from perfparser_py import source
from perfparser_py.perfdata import reader as reader_mod
from perfparser_py.perfdata.reader import PerfReader
from tests.synth import PipeWriter


def _rss_file_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"RssFile:\s+(\d+) kB", status).group(1))


def test_release_drops_touched_pages_and_keeps_the_content(tmp_path):
    path = tmp_path / "big"
    size = 64 << 20
    path.write_bytes(bytes(range(256)) * (size // 256))
    with open(path, "rb") as f:
        src = source.FileSource(f)
        view = src.buffer()
        total = sum(view[i] for i in range(0, size, mmap.PAGESIZE))  # touch every page
        before = _rss_file_kb()
        src.release(size - 1000)  # rounded down to a page boundary
        after = _rss_file_kb()
        assert before - after > 48 << 10, (before, after)
        # still readable: the pages fault back in with the same bytes
        assert sum(view[i] for i in range(0, size, mmap.PAGESIZE)) == total
        src.release(10)  # behind what was released already: nothing to do


def test_reader_releases_behind_its_position(tmp_path, monkeypatch):
    w = PipeWriter()
    w.comm(7, 7, b"big", 1)
    chain = list(range(0x400000, 0x400000 + 8 * 120, 8))
    for t in range(24_000):  # ~24 MB of samples
        w.sample(7, 7, 10 + t, chain[0], chain)
        if t % 1000 == 999:
            w.finished_round()
    data = w.data()
    path = tmp_path / "pipe.data"
    path.write_bytes(data)
    calls: list[int] = []
    monkeypatch.setattr(source.FileSource, "release", lambda self, upto: calls.append(upto))
    n = sum(1 for _ in PerfReader(source.open_source(str(path), None, 0)).events())
    assert n > 24_000
    assert calls == sorted(calls)
    # released up to within the kept window of the end, in steps of the release interval
    assert calls[-1] >= len(data) - reader_mod._KEEP_MAPPED - reader_mod._RELEASE_EVERY
    assert len(calls) >= len(data) // reader_mod._RELEASE_EVERY - 1
