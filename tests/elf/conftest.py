"""Small ELF files built once per test session with gcc/objcopy, for the elf tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SOURCE = r"""
#include <stdio.h>
static int helper(int x) { return x * 3; }
int g(int x) { return helper(x) + 1; }
int table[64];
int main(int c, char **v) { puts("hi"); printf("%d\n", g(c)); return table[c]; }
"""

# Freestanding, so it links for i386 without a 32-bit libc installed.
FREESTANDING = r"""
static int helper(int x) { return x * 3; }
int g(int x) { return helper(x) + 1; }
void _start(void) { g(2); for (;;) {} }
"""


def _run(*cmd: str | Path) -> None:
    subprocess.run([str(c) for c in cmd], check=True, capture_output=True)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> path of binaries built from SOURCE with different link/debug layouts."""
    d = tmp_path_factory.mktemp("elfbuild")
    src = d / "p.c"
    src.write_text(SOURCE)
    out = {name: d / name for name in (
        "pie", "nosep", "exec", "md5", "short", "zlib", "zstd", "zgnu",
        "stripped", "debug", "mini", "i386", "i386pie",
    )}
    _run("gcc", "-g", "-O1", "-o", out["pie"], src)
    _run("gcc", "-g", "-O1", "-Wl,-z,noseparate-code", "-o", out["nosep"], src)
    _run("gcc", "-g", "-O1", "-no-pie", "-fno-pie", "-o", out["exec"], src)
    _run("gcc", "-O1", "-Wl,--build-id=md5", "-o", out["md5"], src)
    _run("gcc", "-O1", "-Wl,--build-id=0x0102030405060708", "-o", out["short"], src)
    _run("gcc", "-g", "-O1", "-gz=zlib", "-o", out["zlib"], src)
    _run("objcopy", "--compress-debug-sections=zstd", out["pie"], out["zstd"])
    _run("objcopy", "--compress-debug-sections=zlib-gnu", out["pie"], out["zgnu"])
    # Separate debug file with .gnu_debuglink, as distributions ship them.
    _run("objcopy", "--only-keep-debug", out["pie"], out["debug"])
    _run("objcopy", "--strip-all", out["pie"], out["stripped"])
    _run("objcopy", f"--add-gnu-debuglink={out['debug']}", out["stripped"])
    # MiniDebugInfo: a stripped file whose .gnu_debugdata holds an xz'd mini symtab.
    import lzma

    funcs = d / "funcs.txt"
    funcs.write_text("helper\ng\nmain\n")
    mini_elf = d / "mini.elf"
    _run("objcopy", "--only-keep-debug", f"--keep-symbols={funcs}", "--strip-debug",
         out["pie"], mini_elf)
    xz = d / "mini.xz"
    xz.write_bytes(lzma.compress(mini_elf.read_bytes(), format=lzma.FORMAT_XZ))
    _run("objcopy", "--strip-all", out["pie"], out["mini"])
    _run("objcopy", "--add-section", f".gnu_debugdata={xz}", out["mini"])
    free = d / "s.c"
    free.write_text(FREESTANDING)
    _run("gcc", "-m32", "-O1", "-nostdlib", "-static", "-fno-pie", "-no-pie", "-Wl,--build-id",
         "-o", out["i386"], free)
    _run("gcc", "-m32", "-O1", "-nostdlib", "-fpie", "-pie", "-Wl,--build-id",
         "-o", out["i386pie"], free)
    return out
