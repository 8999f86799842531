"""aarch64 programs built here for the tests that read their ELF files (names, PLTs, CFI):
clang compiles for aarch64 and either linker links, no aarch64 libc needed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

CALLS = "extern int ext1(int), ext2(int), ext3(int);\n" \
        "int f(int x) { return ext1(x) + ext2(x) * ext3(x); }\n"
EXTERNALS = "int ext1(int x) { return x; }\nint ext2(int x) { return x; }\n" \
            "int ext3(int x) { return x; }\n"
# the linkers and the PLT layouts they make: 16-byte entries, 24 with `bti c` or pointer
# authentication (and a `bti c` header)
LINKERS = {"lld": ["ld.lld"], "lld-bti": ["ld.lld", "-z", "force-bti"],
           "gnu": ["aarch64-linux-gnu-ld"],
           "gnu-pac": ["aarch64-linux-gnu-ld", "-z", "pac-plt"],
           "gnu-bti-pac": ["aarch64-linux-gnu-ld", "-z", "force-bti", "-z", "pac-plt"]}


def compile_object(tmp: Path, name: str, source: str) -> Path:
    (tmp / f"{name}.c").write_text(source)
    subprocess.run(["clang", "--target=aarch64-linux-gnu", "-O2", "-fPIC", "-c",
                    f"{name}.c"], cwd=tmp, check=True)
    return tmp / f"{name}.o"


def calls_through_plt(tmp: Path, linker: str, output: str) -> Path:
    """`f` calling three functions of another library through its PLT, linked by `linker`
    (LINKERS) as a shared library or (`pie`) an executable."""
    calls = compile_object(tmp, "calls", CALLS)
    link = [*LINKERS[linker], "-o"]
    if output == "shared":
        out = tmp / "libcalls.so"
        subprocess.run([*link, str(out), "-shared", str(calls)], check=True,
                       capture_output=True)
        return out
    lib = tmp / "libext.so"
    subprocess.run([*link, str(lib), "-shared", str(compile_object(tmp, "ext", EXTERNALS))],
                   check=True, capture_output=True)
    out = tmp / "calls"
    subprocess.run([*link, str(out), "-pie", "-e", "f", str(calls), str(lib)], check=True,
                   capture_output=True)
    return out


def plt_labels(path: Path) -> dict[int, str]:
    """Address -> `name@plt` of each PLT entry as llvm-objdump labels it (GNU objdump
    assumes 16-byte entries)."""
    dump = subprocess.run(["llvm-objdump", "-d", "--section=.plt", str(path)],
                          capture_output=True, text=True, check=True).stdout
    return {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(\S+@plt)>:$", dump, re.M)}
