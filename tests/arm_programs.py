"""32-bit Arm (armhf) programs built here for the tests that read their PLTs: clang compiles
for it, GNU ld (binutils-arm-linux-gnueabihf) and lld link."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.aarch64_programs import CALLS

# the linkers and their PLTs: GNU ld's 20-byte header and 12-byte entries (16 with
# --long-plt), lld's 32-byte header and 16-byte entries
LINKERS = {"gnu": ["arm-linux-gnueabihf-ld"], "gnu-long": ["arm-linux-gnueabihf-ld", "--long-plt"],
           "lld": ["ld.lld"]}


def calls_through_plt(tmp: Path, linker: str) -> Path:
    """A shared library whose `f` calls three functions of another through its PLT, with an
    unwinding index (`-funwind-tables`), linked by `linker` (LINKERS)."""
    (tmp / "calls.c").write_text(CALLS)
    subprocess.run(["clang", "--target=armv7-linux-gnueabihf", "-marm", "-O2", "-fPIC",
                    "-funwind-tables", "-c", "calls.c"], cwd=tmp, check=True)
    out = tmp / "libcalls.so"
    subprocess.run([*LINKERS[linker], "-shared", "-o", str(out), str(tmp / "calls.o")],
                   check=True, capture_output=True)
    return out


def plt_entries(path: Path) -> dict[int, str]:
    """Address -> `name@plt` of each PLT entry: as GNU objdump labels them (it decodes GNU
    ld's entries), else (lld's, which it does not label) by lld's layout: 16-byte entries
    after a 32-byte header, in the order of `.rel.plt`."""
    dump = subprocess.run(["arm-linux-gnueabihf-objdump", "-d", "-j", ".plt", str(path)],
                          capture_output=True, text=True, check=True).stdout
    labels = {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(\S+@plt)>:$", dump, re.M)}
    if labels:
        return labels
    sections = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True,
                              check=True).stdout
    plt = int(re.search(r"\s\.plt\s+\S+\s+([0-9a-f]+)", sections).group(1), 16)
    relocs = subprocess.run(["readelf", "-rW", str(path)], capture_output=True, text=True,
                            check=True).stdout.split("'.rel.plt'")[1]
    names = re.findall(r"R_ARM_JUMP_SLOT\s+[0-9a-f]+\s+(\w+)", relocs)
    return {plt + 32 + 16 * i: f"{name}@plt" for i, name in enumerate(names)}
