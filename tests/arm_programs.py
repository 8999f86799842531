"""32-bit Arm (armhf) programs built here for the tests that read their unwinding index and
PLTs: clang compiles for it, GNU ld (binutils-arm-linux-gnueabihf) and lld link."""

from __future__ import annotations

import re
import struct
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


C_PROGRAM = r"""
#include <alloca.h>
extern int ext(int);
__attribute__((noinline)) int leaf(int x) { return ext(x) * 3; }
__attribute__((noinline)) int vla(int n) {
    int *p = alloca(n * 4); for (int i = 0; i < n; i++) p[i] = ext(i); return ext(p[n / 2]); }
__attribute__((noinline)) int big(int x) {
    volatile int a[70000]; for (int i = 0; i < 70000; i += 1000) a[i] = ext(i + x);
    return a[x] + ext(x); }
__attribute__((noinline)) double fl(double d, int x) {
    double v = d; for (int i = 0; i < x; i++) v = v * d + ext(i); return v + leaf(x); }
__attribute__((noinline)) int many(int a, int b, int c, int d) {
    int r = ext(a) + ext(b); double z = ext(c) * 1.5 + d; return r + (int)(z * d) + ext(d); }
int top(int x) { return (int)fl(1.5, x) + vla(x) + big(x) + many(x, x + 1, x + 2, x + 3); }
"""
CXX_PROGRAM = r"""
extern "C" int ext(int);
struct Guard { ~Guard(); };
__attribute__((noinline)) int guarded(int x) { Guard g; return ext(x) + ext(x + 1); }
int top(int x) { try { return guarded(x) + ext(2); } catch (...) { return -1; } }
"""
# compilers for 32-bit Arm and their flags: ARM and Thumb code, with and without a frame
# pointer; C++ has unwind tables for its exceptions, C gets them asked for (armhf glibc is
# built so). GCC's armhf output gave the same results when tried by hand; Debian 12's
# gcc-arm-linux-gnueabihf conflicts with gcc-multilib, so the tests have clang only
COMPILERS = {"clang": ["clang", "--target=armv7-linux-gnueabihf", "-funwind-tables"]}
VARIANTS = {"arm-O2": ["-O2", "-marm"], "thumb-O2": ["-O2", "-mthumb"],
            "thumb-O0": ["-O0", "-mthumb"], "arm-Os": ["-Os", "-marm"],
            "thumb-fp": ["-O2", "-mthumb", "-fno-omit-frame-pointer"],
            "arm-fp": ["-O2", "-marm", "-fno-omit-frame-pointer"]}


def build(tmp: Path, compiler: str, variant: str, cxx: bool) -> Path:
    """libp.so of C_PROGRAM (or CXX_PROGRAM) by `compiler` with VARIANTS[variant], `-g`."""
    src = tmp / ("p.cc" if cxx else "p.c")
    src.write_text(CXX_PROGRAM if cxx else C_PROGRAM)
    cc = COMPILERS[compiler]
    if cxx:
        cc = [cc[0] + "++", *cc[1:]]
    obj = tmp / "p.o"
    subprocess.run([*cc, *VARIANTS[variant], "-g", "-fPIC", "-c", str(src), "-o", str(obj)],
                   check=True, capture_output=True)
    lib = tmp / "libp.so"
    subprocess.run(["ld.lld", "-shared", str(obj), "-o", str(lib)], check=True)
    return lib


def returns(lib: Path) -> list[int]:
    """The return address of every call (bl, blx) in `lib`'s code."""
    lines = [ln for ln in subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", str(lib)],
                                         capture_output=True, text=True, check=True
                                         ).stdout.splitlines()
             if re.match(r"\s*[0-9a-f]+:", ln)]
    return [int(lines[k + 1].split(":")[0], 16) for k, ln in enumerate(lines[:-1])
            if re.match(r"\s*[0-9a-f]+:\s+blx?\s", ln)]


def walkable_stack(calls: list[int], thumb: bool, sp: int, base: int = 0
                   ) -> tuple[bytes, list[int]]:
    """A stack copy at `sp` and r0-r15 to walk it from: its words at 4 mod 8 (where an
    8-byte aligned frame keeps lr, below its CFA) are the return addresses `calls` (+ `base`,
    the Thumb bit set for `thumb` code) in turn, the others addresses a little up the stack
    (where a frame keeps its frame pointer, below lr); the pc is in the first call's
    function, lr the second call's return address. A row that reads another word than the
    right one, or takes its CFA from another register, walks elsewhere."""
    bit = 1 if thumb else 0
    words = struct.pack("<1024I", *(
        base + calls[k // 2 % len(calls)] | bit if k % 2 else sp + 4 * k + 16
        for k in range(1024)))
    regs = [0x0100_0000 * k + 1 for k in range(16)]
    regs[7] = regs[11] = sp + 8
    regs[13], regs[14], regs[15] = sp, base + calls[1] | bit, base + calls[0] - 2
    return words, regs
