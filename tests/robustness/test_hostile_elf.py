"""Hostile ELF/DWARF files found via --app: each is rejected or degraded for that file only;
the rest of the profile is still produced (same samples, clean exit).

The inputs are the corpus `fp` and `inline` binaries with the damage applied by the recipes
below (small and deterministic, so the damaged files need not be checked in)."""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from perfparser_py import protocol as P
from tests.robustness.cli_run import FP, assert_clean, env, options, parser_cmd
from tests.robustness.fuzzer import CORPUS

INLINE = CORPUS / "recorded" / "inline"
TIMEOUT = 60


def _section(elf: bytes, name: str) -> tuple[int, int, int]:
    """(offset, size, index) of a section."""
    import io

    f = ELFFile(io.BytesIO(elf))
    for i, s in enumerate(f.iter_sections()):
        if s.name == name:
            return s["sh_offset"], s["sh_size"], i
    raise KeyError(name)


def _shdr(elf: bytes, index: int) -> int:
    return struct.unpack_from("<Q", elf, 0x28)[0] + 64 * index


def shoff_beyond_eof(elf: bytearray) -> None:
    struct.pack_into("<Q", elf, 0x28, len(elf) + 4096)


def huge_section_count(elf: bytearray) -> None:
    struct.pack_into("<H", elf, 0x3C, 0xFFFF)


def symtab_huge_size(elf: bytearray) -> None:
    _, _, i = _section(bytes(elf), ".symtab")
    struct.pack_into("<Q", elf, _shdr(bytes(elf), i) + 32, 1 << 40)


def eh_frame_hdr_huge_fde_count(elf: bytearray) -> None:
    off, _, _ = _section(bytes(elf), ".eh_frame_hdr")
    struct.pack_into("<I", elf, off + 8, 0x7FFFFFFF)  # fde_count of a udata4 table


def debug_info_noise(elf: bytearray) -> None:
    for name in (".debug_info", ".debug_abbrev", ".debug_line"):
        off, size, _ = _section(bytes(elf), name)
        for k in range(off + 11, off + size, 7):
            elf[k] ^= 0x5A


def debug_info_self_references(elf: bytearray) -> None:
    """Every aligned u32 after the first CU header points at that CU's first DIE: the
    DW_FORM_ref4 attributes among them make abstract_origin/specification cycles."""
    off, size, _ = _section(bytes(elf), ".debug_info")
    for k in range(off + 12, off + min(size, 4096), 4):
        struct.pack_into("<I", elf, k, 0x0C)


def strtab_not_utf8(elf: bytearray) -> None:
    """Fuzz finding (seed 2, #379): a mangled name that is not UTF-8 crashed the demangler."""
    off, size, _ = _section(bytes(elf), ".strtab")
    pos = off
    while (pos := elf.find(b"_Z", pos, off + size)) >= 0:
        elf[pos + 5] = 0x8A
        pos += 2


def _run(case_dir: Path, perf: str, app: Path) -> tuple[subprocess.CompletedProcess, int]:
    res = subprocess.run([*parser_cmd(), *options(app), "--input", str(case_dir / perf)],
                         capture_output=True, timeout=TIMEOUT, env=env())
    assert_clean(res.returncode, res.stderr, res.stdout)
    samples = sum(isinstance(m, P.Sample) for m in P.read_stream(res.stdout).messages)
    return res, samples


_BASELINE: dict[str, int] = {}

DAMAGE: list[tuple[Callable[[bytearray], None], Path, str, str]] = [
    (shoff_beyond_eof, FP, "perf.data", "hotloop"),
    (huge_section_count, FP, "perf.data", "hotloop"),
    (symtab_huge_size, FP, "perf.data", "hotloop"),
    (eh_frame_hdr_huge_fde_count, INLINE, "perf.data", "inline"),
    (debug_info_noise, INLINE, "perf.data", "inline"),
    (debug_info_self_references, INLINE, "perf.data", "inline"),
    (strtab_not_utf8, FP, "perf.data", "hotloop"),
]


@pytest.mark.parametrize("damage,case_dir,perf,binary", DAMAGE,
                         ids=[d[0].__name__ for d in DAMAGE])
def test_hostile_elf_costs_only_that_file(damage, case_dir, perf, binary, tmp_path):
    key = str(case_dir)
    if key not in _BASELINE:
        res, _BASELINE[key] = _run(case_dir, perf, case_dir)
        assert res.returncode == 0
    elf = bytearray((case_dir / binary).read_bytes())
    damage(elf)
    (tmp_path / binary).write_bytes(elf)
    res, samples = _run(case_dir, perf, tmp_path)
    assert res.returncode == 0, res.stderr.decode()
    assert samples == _BASELINE[key]
