"""Split DWARF (`-gsplit-dwarf`): a skeleton unit's scopes come from its .dwo file or the
program's .dwp package, and are those of the same program built without it.

Each program is built twice, with and without -gsplit-dwarf (same code: the text sections
are compared), by g++ and clang++, DWARF 4 (GCC's extension: DW_AT_GNU_dwo_name, a version
2 package index) and 5 (skeleton units, DW_FORM_addrx/strx/rnglistx, .debug_rnglists.dwo;
clang's split units have no line table of their own). Built with `-fdebug-prefix-map` to a
directory that does not exist, so the .dwo files are found beside the program."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py.elf.dwarf import DwarfInfo
from perfparser_py.elf.finder import ElfFinder
from perfparser_py.elf.image import ElfImage
from tests.cxx_programs import INLINED

# Two units laid out alike (their DIEs at the same offsets of their .dwo files) whose
# inlined scopes must still be told apart.
TWIN = r"""
static volatile int sink_NAME;
namespace two {
template <typename T> inline __attribute__((always_inline)) T step(T x)
{ sink_NAME = sink_NAME + (int)x; return x + 1; }
}
__attribute__((noinline)) int NAME(int n) { int s = 0; for (int i = 0; i < n; i++) s += two::step(i); return s; }
"""

CASES = [("g++", "4"), ("g++", "5"), ("clang++", "4"), ("clang++", "5")]


def _build(tmp: Path, compiler: str, version: str, split: bool, extra: list[str] = ()) -> Path:
    d = tmp / ("split" if split else "whole")
    d.mkdir(exist_ok=True)
    (d / "main.cpp").write_text(INLINED)
    (d / "twin_a.cpp").write_text(TWIN.replace("NAME", "twin_a"))
    (d / "twin_b.cpp").write_text(TWIN.replace("NAME", "twin_b"))
    subprocess.run([compiler, "-O2", "-g", f"-gdwarf-{version}", f"-fdebug-prefix-map={d}=/gone",
                    *(["-gsplit-dwarf"] if split else []), *extra, "-o", "p", "main.cpp",
                    "twin_a.cpp", "twin_b.cpp"], cwd=d, check=True, capture_output=True)
    return d / "p"


def _text(path: Path) -> tuple[int, bytes]:
    image = ElfImage.open(str(path))
    addr, data = image.section(".text")
    return addr, bytes(data)


def _scopes(path: Path) -> dict[int, tuple]:
    """Every .text address's scopes_at answer."""
    info = DwarfInfo.for_image(ElfImage.open(str(path)))
    lo, text = _text(path)
    return {a: info.scopes_at(a) for a in range(lo, lo + len(text))}


def _plain(answer) -> tuple | None:
    """An answer without its DIE offsets (those of a .dwo are not the program's)."""
    if answer is None:
        return None
    sub, inlined = answer
    return tuple(sub)[:-1], [tuple(s)[:-1] for s in inlined]


def _symbol(path: Path, name: str) -> tuple[int, int]:
    out = subprocess.run(["nm", "-S", str(path)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts[-1] == name:
            return int(parts[0], 16), int(parts[1], 16)
    raise AssertionError(name)


def _check_like_whole(split: Path, whole: Path) -> None:
    assert _text(split) == _text(whole)
    got, want = _scopes(split), _scopes(whole)
    assert sum(1 for a in want.values() if a and a[1]) > 100  # inlined scopes to compare
    assert {a: _plain(s) for a, s in got.items()} == {a: _plain(s) for a, s in want.items()}
    # the twins' inlined scopes: DIEs at equal .dwo offsets, each its own scope
    offsets = []
    for twin in ("_Z6twin_ai", "_Z6twin_bi"):
        start, size = _symbol(split, twin)
        found = {s.die_offset for a in range(start, start + size) if got[a] for s in got[a][1]}
        assert found
        offsets.append(found)
    assert not offsets[0] & offsets[1]


@pytest.mark.parametrize(("compiler", "version"), CASES)
def test_scopes_come_from_the_dwo_files_as_from_a_whole_build(tmp_path: Path, compiler: str,
                                                                version: str) -> None:
    split = _build(tmp_path, compiler, version, True)
    assert sorted(split.parent.glob("*.dwo"))  # found beside the program, not at /gone
    _check_like_whole(split, _build(tmp_path, compiler, version, False))


PACKAGERS = [("g++", "4", "dwp"), ("g++", "4", "llvm-dwp"), ("g++", "5", "llvm-dwp"),
             ("clang++", "4", "llvm-dwp"), ("clang++", "5", "llvm-dwp")]


@pytest.mark.parametrize(("compiler", "version", "packager"), PACKAGERS)
def test_scopes_come_from_the_dwp_package_as_from_a_whole_build(
        tmp_path: Path, compiler: str, version: str, packager: str) -> None:
    """`<program>.dwp` (binutils' dwp writes version 2 indexes, llvm-dwp 2 and 5), with the
    .dwo files gone."""
    split = _build(tmp_path, compiler, version, True)
    dwos = sorted(split.parent.glob("*.dwo"))
    subprocess.run([packager, "-o", "p.dwp", *dwos], cwd=split.parent, check=True,
                   capture_output=True)
    for dwo in dwos:
        dwo.unlink()
    _check_like_whole(split, _build(tmp_path, compiler, version, False))


def _inlined_in(path: Path, function: str) -> int:
    """How many addresses of `function` have inlined scopes."""
    start, size = _symbol(path, function)
    info = DwarfInfo.for_image(ElfImage.open(str(path)))
    return sum(1 for a in range(start, start + size) if (info.scopes_at(a) or (0, []))[1])


@pytest.mark.parametrize("version", ["4", "5"])
def test_a_dwo_of_another_build_is_not_read(tmp_path: Path, version: str) -> None:
    """The unit id pairs a skeleton with its split unit: a .dwo rebuilt from changed code
    (the program not relinked) gives no scopes rather than wrong ones; nor does a missing one."""
    split = _build(tmp_path, "g++", version, True)
    assert _inlined_in(split, "_Z5outeri") > 20
    old = split.with_name("old")
    shutil.copy(split, old)
    _build(tmp_path, "g++", version, True, ["-DFORCE=__attribute__((noinline))"])
    assert _inlined_in(old, "_Z5outeri") == 0
    assert _inlined_in(old, "_Z6twin_ai") > 0  # its unit did not change
    for dwo in split.parent.glob("*.dwo"):
        dwo.unlink()
    assert _inlined_in(split, "_Z6twin_ai") == 0


def test_an_answer_without_its_split_unit_is_not_kept_in_the_cache(tmp_path: Path) -> None:
    """The persistent cache's key covers the program and its debug file, not the .dwo files:
    scopes answered while a split unit was missing are not kept, so once the .dwo files are
    back the next run has the inlined scopes, and the one after that answers from the record."""
    from perfparser_py.cache import PersistentCache
    from perfparser_py.elf.dwarf import RecordedDwarf

    split = _build(tmp_path, "g++", "5", True)
    start, size = _symbol(split, "_Z5outeri")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for dwo in split.parent.glob("*.dwo"):
        dwo.rename(hidden / dwo.name)
    counts = []
    for run in range(3):
        if run == 1:
            for dwo in hidden.iterdir():
                dwo.rename(split.parent / dwo.name)
        finder = ElfFinder(str(split.parent), [], "", [], {}, use_cache=False)
        finder.cache = PersistentCache(str(tmp_path / "cache"))
        _path, image = finder.find(str(split).encode())
        info = DwarfInfo.for_image(image)
        assert isinstance(info, RecordedDwarf)
        counts.append(sum(1 for a in range(start, start + size)
                          if (info.scopes_at(a) or (0, []))[1]))
        if run == 2:
            assert info._info is None  # warm: the DWARF was never opened
        finder.save_cache()
    assert counts[0] == 0 and counts[1] > 20 and counts[2] == counts[1]


@pytest.mark.parametrize("packaged", [False, True], ids=["dwo", "dwp"])
def test_damaged_split_files_never_raise(tmp_path: Path, packaged: bool) -> None:
    """Garbled or truncated .dwo files and packages lose (some of) their scopes, never the
    run: every address is answered, None or scopes, without an exception."""
    import random

    split = _build(tmp_path, "clang++", "5", True)
    victims = sorted(split.parent.glob("*.dwo"))
    if packaged:
        subprocess.run(["llvm-dwp", "-o", "p.dwp", *victims], cwd=split.parent, check=True,
                       capture_output=True)
        for dwo in victims:
            dwo.unlink()
        victims = [split.with_name("p.dwp")]
    originals = {v: v.read_bytes() for v in victims}
    rng = random.Random(7)
    answered = 0
    for round_ in range(12):
        for v, data in originals.items():
            data = bytearray(data)
            if round_ % 3 == 0:
                data = data[:rng.randrange(64, len(data))]
            else:  # bytes past the ELF header: the sections, the cu index among them
                for _ in range(4):
                    data[rng.randrange(64, len(data))] = rng.randrange(256)
            v.write_bytes(bytes(data))
        answered += any(a and a[1] for a in _scopes(split).values())
    assert answered  # a few garbled bytes leave some rounds their inlined scopes


def test_dwo_files_are_found_in_the_compilation_directory(tmp_path: Path) -> None:
    """A program copied away from its build keeps finding its .dwo files where it was
    compiled (DW_AT_comp_dir joined with the relative DW_AT_dwo_name)."""
    build = tmp_path / "build"
    build.mkdir()
    (build / "main.cpp").write_text(INLINED)
    subprocess.run(["g++", "-O2", "-g", "-gsplit-dwarf", "-o", "p", "main.cpp"], cwd=build,
                   check=True, capture_output=True)
    elsewhere = tmp_path / "installed" / "p"
    elsewhere.parent.mkdir()
    shutil.copy(build / "p", elsewhere)
    assert not list(elsewhere.parent.glob("*.dwo"))
    assert _inlined_in(elsewhere, "_Z5outeri") > 20


def _reproducible_build(tmp: Path) -> Path:
    """A program built as reproducible builds build (the compilation directory recorded as
    `.`), its .dwo files in a subdirectory of the build: DW_AT_dwo_name `obj/main.dwo`."""
    build = tmp / "build"
    (build / "obj").mkdir(parents=True)
    (build / "main.cpp").write_text(INLINED)
    subprocess.run(["g++", "-O2", "-g", "-gsplit-dwarf", f"-fdebug-prefix-map={build}=.", "-c",
                    "-o", "obj/main.o", "main.cpp"], cwd=build, check=True, capture_output=True)
    subprocess.run(["g++", "-o", "p", "obj/main.o"], cwd=build, check=True, capture_output=True)
    assert (build / "obj" / "main.dwo").is_file()
    return build / "p"


def test_dwo_files_of_a_reproducible_build_are_found_from_the_program(tmp_path: Path,
                                                                       monkeypatch) -> None:
    """Compilation directory `.`: the .dwo name is relative to the build, where the program
    is; found from the program's directory whatever the working directory (elfutils)."""
    program = _reproducible_build(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _inlined_in(program, "_Z5outeri") > 20


@pytest.mark.parametrize("layout", ["tree", "flat"])
def test_dwo_files_are_found_in_the_search_directories(tmp_path: Path, layout: str,
                                                       monkeypatch) -> None:
    """The program installed away from its build and the .dwo files copied elsewhere, as a
    build tree (`D/obj/main.dwo`) or all in one directory (`D/main.dwo`): found through
    `--debug D`, as GDB finds them in its debug-file-directory; not without it."""
    program = _reproducible_build(tmp_path)
    installed = tmp_path / "installed" / "p"
    installed.parent.mkdir()
    shutil.copy(program, installed)
    copies = tmp_path / "dwo"
    target = copies / "obj" if layout == "tree" else copies
    target.mkdir(parents=True)
    shutil.move(str(program.parent / "obj" / "main.dwo"), target / "main.dwo")
    monkeypatch.chdir(tmp_path)
    assert _inlined_in(installed, "_Z5outeri") == 0
    finder = ElfFinder("", [], "/", [str(copies)], {})
    _local, image = finder.find(str(installed).encode())
    start, size = _symbol(installed, "_Z5outeri")
    info = DwarfInfo.for_image(image)
    assert sum(1 for a in range(start, start + size) if (info.scopes_at(a) or (0, []))[1]) > 20


def test_the_dwp_beside_the_recorded_program_serves_its_build_id_cache_copy(
        tmp_path: Path) -> None:
    """perf's build-id cache (`~/.debug/PATH/<id>/elf`) copies the program, not its .dwp
    (rustc's `-C split-debuginfo=packed` leaves only the package): the copy is read, the
    package beside the recorded program gives its inlined scopes."""
    program = _build(tmp_path, "g++", "5", True)
    dwos = sorted(program.parent.glob("*.dwo"))
    subprocess.run(["llvm-dwp", "-o", "p.dwp", *dwos], cwd=program.parent, check=True,
                   capture_output=True)
    for dwo in dwos:
        dwo.unlink()
    build_id = ElfImage.open(str(program)).build_id
    copy = tmp_path / "cache" / str(program).lstrip("/") / build_id.hex() / "elf"
    copy.parent.mkdir(parents=True)
    shutil.copy(program, copy)
    finder = ElfFinder("", [], "/", [str(tmp_path / "cache")], {bytes(program): build_id})
    local, image = finder.find(bytes(program))
    assert local == str(copy)
    assert _inlined_in(program, "_Z5outeri") > 20
    start, size = _symbol(program, "_Z5outeri")
    info = DwarfInfo.for_image(image)
    assert sum(1 for a in range(start, start + size) if (info.scopes_at(a) or (0, []))[1]) > 20


def test_many_dwo_files_fit_under_a_low_open_file_limit(tmp_path: Path) -> None:
    """Each mapped .dwo keeps a descriptor: the soft limit is raised to the hard one when
    the first is opened, so that a program of thousands of units does not run out."""
    split = _build(tmp_path, "g++", "5", True)
    script = (
        "import resource, sys\n"
        "from perfparser_py.elf.dwarf import DwarfInfo\n"
        "from perfparser_py.elf.image import ElfImage\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
        "image = ElfImage.open(sys.argv[1])\n"
        "info = DwarfInfo.decode(image)\n"
        "addr, text = image.section('.text')\n"
        "found = sum(1 for a in range(addr, addr + len(text)) if (info.scopes_at(a) or (0, []))[1])\n"
        "print(found, resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard))\n")
    out = subprocess.run([sys.executable, "-c", script, str(split)], capture_output=True,
                         text=True, check=True).stdout.split()
    assert int(out[0]) > 100 and out[1] == "True"
