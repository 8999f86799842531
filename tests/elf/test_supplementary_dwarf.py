"""A supplementary DWARF file (dwz -m: Debian's dh_dwz, Fedora's debuginfo packages): the DIEs
and strings two programs share move into one file their DWARF refers to, by
`.gnu_debugaltlink` with DW_FORM_GNU_ref_alt/strp_alt, or (`dwz -5`) by `.debug_sup` with
DW_FORM_ref_sup4/strp_sup. Scopes read through it must be those of the programs before dwz.

The two programs are INLINED built twice (a variant's main differs): their inline functions'
abstract DIEs (namespaces, templates, lambdas, local classes) are the shared ones."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfparser_py.elf.dwarf import DwarfInfo
from perfparser_py.elf.image import ElfImage
from tests.cxx_programs import INLINED

VARIANT = INLINED.replace("for (int r = 0; r < rounds; r++) outer(r);",
                          "for (int r = rounds; r > 0; r--) outer(r + 1);")


def _programs(tmp: Path, compiler: str) -> list[Path]:
    """The two programs, and a copy of each as built (`.orig`). clang's DWARF 4: dwz 0.15
    (Debian 12) does not read its DWARF 5 (.debug_addr)."""
    out = []
    for name, source in (("one", INLINED), ("two", VARIANT)):
        src = tmp / f"{name}.cpp"
        src.write_text(source)
        exe = tmp / name
        version = ["-gdwarf-4"] if compiler == "clang++" else []
        subprocess.run([compiler, "-O2", "-g", *version, "-o", str(exe), str(src)], check=True,
                       capture_output=True)
        shutil.copy(exe, tmp / f"{name}.orig")
        out.append(exe)
    return out


def _dwz(tmp: Path, programs: list[Path], link: str, dwarf5: bool) -> Path:
    """dwz -m over the programs: the supplementary file tmp/common.debug, named `link`."""
    common = tmp / "common.debug"
    subprocess.run(["dwz", *(["-5"] if dwarf5 else []), "-m", str(common), "-M", link,
                    *map(str, programs)], check=True, capture_output=True)
    section = ".debug_sup" if dwarf5 else ".gnu_debugaltlink"
    assert all(ElfImage.open(str(p)).section(section) for p in programs)
    return common


def _answers(info, path: Path) -> dict[int, tuple | None]:
    """Every .text address's scopes_at answer, without DIE offsets."""
    addr, text = ElfImage.open(str(path)).section(".text")
    out = {}
    for a in range(addr, addr + len(text)):
        answer = info.scopes_at(a)
        out[a] = None if answer is None else (
            tuple(answer[0])[:-1], [tuple(s)[:-1] for s in answer[1]])
    return out


def _inlined(answers: dict) -> int:
    return sum(1 for a in answers.values() if a and a[1] and all(s[0] for s in a[1]))


@pytest.mark.parametrize("dwarf5", [False, True], ids=["gnu_debugaltlink", "debug_sup"])
@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_scopes_through_the_supplementary_file_are_those_before_dwz(
        tmp_path: Path, compiler: str, dwarf5: bool) -> None:
    programs = _programs(tmp_path, compiler)
    common = _dwz(tmp_path, programs, "common.debug", dwarf5)  # beside the programs
    for exe in programs:
        want = _answers(DwarfInfo.decode(ElfImage.open(f"{exe}.orig")), exe)
        assert _inlined(want) > 100
        assert _answers(DwarfInfo.decode(ElfImage.open(str(exe))), exe) == want
    common.rename(tmp_path / "gone")  # the test depends on the file: without it, no names
    got = _answers(DwarfInfo.decode(ElfImage.open(str(programs[0]))), programs[0])
    assert _inlined(got) < _inlined(want)


@pytest.mark.parametrize("place", ["name", "build-id"])
def test_the_finder_looks_in_the_debug_directories(tmp_path: Path, place: str) -> None:
    """A link to `/usr/lib/debug/.dwz/...` (as dh_dwz writes it) is looked for in each
    --debug directory too, and a file of the link's build id under `.build-id`."""
    from perfparser_py.elf.finder import ElfFinder

    programs = _programs(tmp_path, "g++")
    common = _dwz(tmp_path, programs, "/usr/lib/debug/.dwz/perfparser-test/common.debug",
                  False)
    debug = tmp_path / "debug"
    if place == "name":
        where = debug / ".dwz" / "perfparser-test" / "common.debug"
    else:
        hexid = ElfImage.open(str(common)).build_id.hex()
        where = debug / ".build-id" / hexid[:2] / f"{hexid[2:]}.debug"
    where.parent.mkdir(parents=True)
    common.rename(where)
    exe = programs[0]
    finder = ElfFinder(str(tmp_path), [], "", [str(debug)], {}, use_cache=False)
    infos = [DwarfInfo.for_image(finder.find(str(p).encode())[1]) for p in programs]
    want = _answers(DwarfInfo.decode(ElfImage.open(f"{exe}.orig")), exe)
    assert _answers(infos[0], exe) == want
    _answers(infos[1], programs[1])
    assert infos[0]._sup is infos[1]._sup is not None  # one for the files sharing it
    finder.done()
    # without the finder's directories it is not found
    assert _inlined(_answers(DwarfInfo.decode(ElfImage.open(str(exe))), exe)) < _inlined(want)


def test_an_answer_without_the_supplementary_file_is_not_kept_in_the_cache(
        tmp_path: Path) -> None:
    """The persistent cache's key covers the program and its debug file: answers made
    while the supplementary file was missing are not kept, so the run after it is installed
    has the names, and the one after that answers from the record."""
    from perfparser_py.cache import PersistentCache
    from perfparser_py.elf.dwarf import RecordedDwarf
    from perfparser_py.elf.finder import ElfFinder

    programs = _programs(tmp_path, "g++")
    common = _dwz(tmp_path, programs, "common.debug", False)
    common.rename(tmp_path / "away")
    exe = programs[0]
    counts = []
    for run in range(3):
        if run == 1:
            (tmp_path / "away").rename(common)
        finder = ElfFinder(str(tmp_path), [], "", [], {}, use_cache=False)
        finder.cache = PersistentCache(str(tmp_path / "cache"))
        _path, image = finder.find(str(exe).encode())
        info = DwarfInfo.for_image(image)
        assert isinstance(info, RecordedDwarf)
        counts.append(_inlined(_answers(info, exe)))
        if run == 2:
            assert info._info is None  # warm: the DWARF was never opened
        finder.save_cache()
        finder.done()
    assert counts[0] < counts[1] and counts[1] > 100 and counts[2] == counts[1]


def test_damaged_or_foreign_supplementary_files_never_raise(tmp_path: Path) -> None:
    """A supplementary file of another build id is not taken; a garbled one loses names,
    never the run."""
    import random

    programs = _programs(tmp_path, "g++")
    common = _dwz(tmp_path, programs, "common.debug", False)
    exe = programs[0]
    want = _answers(DwarfInfo.decode(ElfImage.open(f"{exe}.orig")), exe)
    original = common.read_bytes()
    shutil.copy(f"{exe}.orig", common)  # an ELF file of another build id
    assert _inlined(_answers(DwarfInfo.decode(ElfImage.open(str(exe))), exe)) < _inlined(want)
    rng = random.Random(3)
    for _ in range(8):
        data = bytearray(original)
        for _ in range(rng.choice([2, 20])):
            data[rng.randrange(64, len(data))] = rng.randrange(256)
        common.write_bytes(bytes(data))
        _answers(DwarfInfo.decode(ElfImage.open(str(exe))), exe)


def test_the_finder_fetches_it_from_debuginfod_by_its_build_id(tmp_path: Path) -> None:
    """Not found locally, the supplementary file comes from debuginfod as the debug file of
    the link's build id (how debuginfod servers index dwz files), and is taken only if it
    has that build id."""
    from perfparser_py.elf.debuginfod import DebuginfodClient
    from perfparser_py.elf.finder import ElfFinder
    from tests.elf.test_debuginfod import Server

    programs = _programs(tmp_path, "g++")
    common = _dwz(tmp_path, programs, "/usr/lib/debug/.dwz/perfparser-test-absent/x.debug",
                  False)
    body = common.read_bytes()
    common.unlink()
    bid = ElfImage.from_bytes("common", body).build_id
    exe = programs[0]
    want = _answers(DwarfInfo.decode(ElfImage.open(f"{exe}.orig")), exe)
    server = Server()
    try:
        for served, equal in ((Path(f"{exe}.orig").read_bytes(), False), (body, True)):
            server.files.clear()
            server.serve(bid, "debuginfo", served)
            finder = ElfFinder(str(tmp_path), [], "", [], {}, use_cache=False)
            finder.debuginfod = DebuginfodClient([server.url], str(tmp_path / f"c{equal}"))
            got = _answers(DwarfInfo.for_image(finder.find(str(exe).encode())[1]), exe)
            assert (got == want) is equal  # another build id's file is not taken
            assert f"/buildid/{bid.hex()}/debuginfo" in server.requests
            finder.done()
    finally:
        server.stop()
