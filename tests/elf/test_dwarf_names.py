"""Names of inlined functions from DWARF, spelled as c++filt spells the symbol they would have
(SEMANTICS §10.5, expected_differences entry 36): every inlined scope at every address of a
g++ and a clang++ build, against the symbols of the same program built with those functions
`noinline` (tests/cxx_programs.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfparser_py.elf.dwarf import DwarfInfo, _gcc_numbers_lambdas_per_scope
from perfparser_py.elf.image import ElfImage
from tests.cxx_programs import INLINE_KINDS, INLINED, build, inline_reference_names
from tests.elf.test_dwarf import _Image, _sections


def _extent(exe: Path, function: str) -> range:
    nm = subprocess.run(["nm", "-S", "--defined-only", str(exe)], capture_output=True,
                        text=True, check=True).stdout
    start, size = next((int(p[0], 16), int(p[1], 16)) for p in map(str.split, nm.splitlines())
                       if len(p) == 4 and p[3] == function)
    return range(start, start + size)


def _inlined_names(exe: Path, function: str) -> set[str]:
    dwarf = DwarfInfo.decode(ElfImage.open(str(exe)))
    names = set()
    for x in _extent(exe, function):
        scopes = dwarf.scopes_at(x)
        if scopes is not None:
            names.update(s.name for s in scopes[1])
    return names


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_inlined_scopes_are_named_as_cxxfilt_prints_their_symbol(tmp_path: Path,
                                                                  compiler: str) -> None:
    exe = build(tmp_path, compiler, INLINED, "inlined", [])
    want = inline_reference_names(tmp_path, compiler)
    names = _inlined_names(exe, "_Z5outeri")
    assert names and None not in names
    assert sorted(n for n in names if n not in want) == []
    for kind in INLINE_KINDS[compiler]:
        assert any(kind in n for n in names), (kind, sorted(names))


def test_garbled_scopes_of_names_never_raise(tmp_path: Path) -> None:
    """The scopes, closures and parameter types a name is spelled from may be garbage or
    refer to each other: the lookup still answers (a name, a bare name or no scopes)."""
    exe = build(tmp_path, "g++", INLINED, "inlined", [])
    secs = _sections(exe)
    info = secs[".debug_info"]
    addrs = list(_extent(exe, "_Z5outeri"))[::5]
    for at in range(len(info) // 3, len(info), len(info) // 40):
        for garbage in (b"\xff\xff", bytes(info[at + 8:at + 12])):  # a bad value, a reference
            hostile = DwarfInfo.decode(_Image({**secs, ".debug_info":
                                               info[:at] + garbage + info[at + len(garbage):]}))
            if hostile is not None:
                for x in addrs:
                    hostile.scopes_at(x)


@pytest.mark.parametrize(("producer", "per_scope"), [
    ("GNU C++17 12.2.0 -mtune=generic -march=x86-64 -g -O2", True),
    ("GNU C++17 13.2.0 -mtune=generic -march=x86-64 -g -O2", False),
    ("GNU C++17 14.1.0 -g -O2 -fabi-version=17", True),
    ("GNU C++17 14.1.0 -g -O2 -fabi-version=0", False),
    ("Debian clang version 14.0.6", False),
])
def test_lambda_numbering_follows_the_producer(producer: str, per_scope: bool) -> None:
    """GCC numbered every lambda of a function until 13 (ABI 18); since, as the Itanium ABI
    says and clang does, only the lambdas with the same parameters."""
    assert _gcc_numbers_lambdas_per_scope(producer) is per_scope
