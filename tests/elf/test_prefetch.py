"""ElfImage.prefetch: sections decompressed on the prefetch thread are exactly what
section() decompresses itself, wherever section() would take them, damaged ones included;
the finder prefetches the files perf lists with samples; the prefetch thread runs below the
main thread's priority."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from perfparser_py.cpus import HELPER_NICENESS
from perfparser_py.elf import compressed
from perfparser_py.elf import image as image_mod
from perfparser_py.elf.dwarf import SECTIONS
from perfparser_py.elf.finder import ElfFinder
from perfparser_py.elf.image import ElfImage

NAMES = [".debug_" + n for n in SECTIONS]


def contents(img: ElfImage) -> dict[str, bytes | None]:
    out = {}
    for name in NAMES:
        sec = img.section(name)
        out[name] = None if sec is None else (sec[0], bytes(sec[1]))
    return out


@pytest.mark.parametrize("name", ["zlib", "zstd", "zgnu", "pie"])
def test_prefetched_sections_equal_direct_ones(built: dict[str, Path], name: str) -> None:
    direct = contents(ElfImage.open(str(built[name])))
    ahead = ElfImage.open(str(built[name]))
    ahead.prefetch(NAMES)
    if name != "pie":  # compressed: jobs were queued
        assert ahead._inflations
    assert contents(ahead) == direct
    assert direct[".debug_info"] is not None
    assert not ahead._inflations  # every job was taken


def test_the_prefetch_thread_runs_below_the_main_thread(built) -> None:
    main_nice = os.getpriority(os.PRIO_PROCESS, 0)
    img = ElfImage.open(str(built["zlib"]))
    img.prefetch(NAMES)
    assert contents(img)[".debug_info"] is not None
    thread = next(t for t in threading.enumerate() if t.name == "perfparser-prefetch")
    wanted = min(19, main_nice + HELPER_NICENESS)
    deadline = time.monotonic() + 10  # the thread lowers itself when it starts
    while os.getpriority(os.PRIO_PROCESS, thread.native_id) != wanted:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert os.getpriority(os.PRIO_PROCESS, 0) == main_nice


def test_a_job_the_thread_has_not_started_runs_in_the_caller(built, monkeypatch) -> None:
    queued = []
    monkeypatch.setattr(compressed, "prefetch", lambda job, size: queued.append(job))
    img = ElfImage.open(str(built["zlib"]))
    img.prefetch(NAMES)
    assert queued
    assert img.section(".debug_info") is not None  # no thread ran it: the caller did
    assert contents(img) == contents(ElfImage.open(str(built["zlib"])))


def test_prefetch_goes_to_the_attached_debug_file(built, tmp_path: Path) -> None:
    debug = tmp_path / "debug"
    subprocess.run(["objcopy", "--compress-debug-sections=zlib", str(built["debug"]),
                    str(debug)], check=True)
    stripped = ElfImage.open(str(built["stripped"]))
    stripped.attach_debug(ElfImage.open(str(debug)))
    stripped.prefetch(NAMES)
    assert not stripped._inflations and stripped.debug._inflations
    reference = ElfImage.open(str(built["stripped"]))
    reference.attach_debug(ElfImage.open(str(debug)))
    assert contents(stripped) == contents(reference)


def test_damaged_section_warns_once_from_the_main_thread(built, tmp_path: Path,
                                                         capsys) -> None:
    bad = tmp_path / "bad"
    shutil.copy(built["zlib"], bad)
    sec = ElfImage.open(str(bad))._by_name[".debug_info"]
    data = bytearray(bad.read_bytes())
    body = sec.offset + 24  # behind the 64-bit compression header
    data[body + 2:body + 40] = bytes(38)
    bad.write_bytes(bytes(data))
    img = ElfImage.open(str(bad))
    img.prefetch(NAMES)
    image_mod._warned.discard(str(bad))
    assert img.section(".debug_info") is None
    err = capsys.readouterr().err
    assert err.count("cannot decompress") == 1 and str(bad) in err


def test_finder_prefetches_listed_files_only(built, tmp_path: Path) -> None:
    listed = tmp_path / "listed"
    other = tmp_path / "other"
    shutil.copy(built["zlib"], listed)
    shutil.copy(built["zlib"], other)
    finder = ElfFinder(app="", extra=[], sysroot="/", debug_paths=[], build_ids={})
    finder.build_ids[str(listed).encode()] = ElfImage.open(str(listed)).build_id
    finder.prefetch = True
    finder.open_listed([(-1, b"", b"[kernel.kallsyms]"), (-1, b"", str(listed).encode())])
    assert not finder._found  # opened, but a mapping still decides where a path goes
    _, img = finder.find(str(listed).encode())
    assert img._inflations  # queued when opened (the .debug_info check took its own)
    _, plain = finder.find(str(other).encode())
    assert not plain._inflations
    finder.prefetch = False
    finder2 = ElfFinder(app="", extra=[], sysroot="/", debug_paths=[], build_ids=finder.build_ids)
    _, img2 = finder2.find(str(listed).encode())
    assert not img2._inflations


def test_listed_names_with_a_nul_are_no_files(tmp_path: Path) -> None:
    """Fuzz finding (seed 1, #1577): a build-id table name with a NUL byte reached os.stat."""
    finder = ElfFinder(app="", extra=[], sysroot="/", debug_paths=[], build_ids={})
    finder.prefetch = True
    finder.open_listed([(-1, b"", str(tmp_path).encode() + b"/a\0b")])
    assert finder.find(str(tmp_path).encode() + b"/a\0b")[1] is None


def test_a_job_claimed_before_a_fork_runs_in_the_child(built) -> None:
    """A forked process has no prefetch thread: a job that thread held at the fork must not
    leave the child waiting for it."""
    import os

    img = ElfImage.open(str(built["zlib"]))
    packed = img._compressed(img._holder(".debug_info"))
    job = compressed.Inflation(*packed)
    job._claim.acquire()  # as the thread does when it starts the job
    job._owner = os.getppid()  # ... in another process
    addr, data, warning = job.result()
    assert warning is None and bytes(data) == bytes(ElfImage.open(str(built["zlib"]))
                                                    .section(".debug_info")[1])


def _resident_kib(path: Path) -> int:
    """KiB of `path`'s mappings resident in this process (/proc/self/smaps)."""
    total = 0
    mine = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                mine = len(head) > 5 and head[5] == str(path)
            elif mine and head[0] == "Rss:":
                total += int(head[1])
    return total


@pytest.mark.parametrize("prefetched", [False, True])
def test_a_decompressed_section_leaves_its_compressed_pages(built, tmp_path: Path,
                                                            prefetched: bool) -> None:
    """Once a section is decompressed, the mapped pages of its compressed body are not read
    again: they leave this process's RSS (a distribution's debug file of libc is ~3.5 MB of
    them), and the section still reads the same."""
    import random

    rng = random.Random(19)
    blob = tmp_path / "blob"
    body = rng.randbytes(3 << 20).hex().encode()  # compresses to about half: kept compressed
    blob.write_bytes(body)
    plain, path = tmp_path / "plain", tmp_path / "big"
    subprocess.run(["objcopy", f"--add-section=.debug_macro={blob}", built["pie"], plain],
                   check=True)
    subprocess.run(["objcopy", "--compress-debug-sections=zlib", plain, path], check=True)
    img = ElfImage.open(str(path))
    sec = img._holder(".debug_macro")
    assert sec.flags & image_mod.SHF_COMPRESSED and sec.size > 2 << 20
    bytes(img._raw_section(sec))  # as the inflation reads it
    assert _resident_kib(path) > sec.size >> 10
    if prefetched:
        img.prefetch([".debug_macro"])
    assert bytes(img.section(".debug_macro")[1]) == body
    assert _resident_kib(path) < sec.size >> 13  # under an eighth of it
