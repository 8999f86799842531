"""DWARF unwinder: the recorded 'dwarf' corpus case end to end, plus synthetic stacks for
x86 (32-bit), arm and aarch64, guessed frames, limits and hostile input."""

from __future__ import annotations

import re
import struct
import subprocess
from array import array
from pathlib import Path

import pytest

from perfparser_py.elf.cfi import (
    CFA_EXPR,
    CFA_REG,
    EXPR,
    OFFSET,
    RA_SIGN_STATE,
    REGISTER,
    SIGNED,
    UNDEF,
    VAL_OFFSET,
    Row,
)
from perfparser_py.elf.exidx import _row
from perfparser_py.elf.image import ElfImage
from perfparser_py.perfdata.events import packed_regs
from perfparser_py.unwind import dwarf
from perfparser_py.unwind.history import History
from perfparser_py.unwind.process import ModuleAt, Steps
from perfparser_py.unwind.registers import arch_family, table_for, table_for_machine
from perfparser_py.unwind.rules import cfi_for_image

from tests import aarch64_programs, arm_programs, plt_programs

from . import perfdata_mini


def unwind(arch: str, abi: int, regs, *args, **kwargs) -> tuple[list[int], int]:
    """dwarf.unwind with the registers given as values or packed (a decoded sample's), and its
    packed addresses as a list of ints, as these tests compare them."""
    if not isinstance(regs, bytes):
        regs = packed_regs(regs)
    packed, guessed = dwarf.unwind(arch, abi, regs, *args, **kwargs)
    assert type(packed) is bytes
    return list(array("Q", packed)), guessed


CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


class _Modules(ModuleAt):
    """unwind()'s module_at over a lookup function, knowing no span without modules."""

    __slots__ = ("find",)

    def __init__(self, find) -> None:
        self.find = find

    def module(self, addr: int):
        return self.find(addr)


_NOWHERE = _Modules(lambda addr: None)


def _address_space(case: str, binary: str, mmaps):
    local = {m.filename: CORPUS / "sysroot" / m.filename.lstrip("/") for m in mmaps}
    mods = {}
    for m in mmaps:
        if not m.filename.startswith("/usr/") and not m.filename.endswith("/" + binary):
            continue
        if m.filename in mods:
            continue
        path = CORPUS / "recorded" / case / binary if m.filename.endswith(binary) else local[m.filename]
        image = ElfImage.open(str(path))
        assert image is not None, path
        bias = image.load_bias(m.addr, m.pgoff)
        lo, hi = image.span()
        mods[m.filename] = (lo + bias, hi + bias, image, bias, cfi_for_image(image))

    def module_at(addr: int):
        for lo, hi, image, bias, cfi in mods.values():
            if lo <= addr < hi:
                return image, bias, cfi
        return None

    return _Modules(module_at)


def test_recorded_dwarf_case_unwinds_full_chain() -> None:
    mask, samples, mmaps = perfdata_mini.read(str(CORPUS / "recorded" / "dwarf" / "perf.data"))
    module_at = _address_space("dwarf", "hotloop", mmaps)

    def name(addr: int) -> str | None:
        mod = module_at.module(addr)
        sym = mod[0].symbol_at(addr - mod[1]) if mod else None
        return sym[0] if sym else None

    prefix = ["work::spin_inner(int)", "work::level2(int)", "level1(int)", "main"]
    history = History()
    selected = matching = 0
    for s in samples:
        frames, guessed = unwind("x86_64", s.abi, s.regs, mask, s.stack, module_at, history, 1024)
        assert 0 <= guessed <= len(frames)
        assert frames and frames[0] == s.ip
        names = [name(a) for a in frames]
        if names[0] != prefix[0]:
            continue
        selected += 1
        if names[:4] == prefix and names[-1] == "_start" and guessed == len(frames):
            matching += 1
    assert selected >= 150
    assert matching >= 0.95 * selected
    assert history  # stack words are remembered for later samples


def test_max_frames_limits_and_resets_guessed() -> None:
    mask, samples, mmaps = perfdata_mini.read(str(CORPUS / "recorded" / "dwarf" / "perf.data"))
    module_at = _address_space("dwarf", "hotloop", mmaps)
    s = samples[10]
    frames, guessed = unwind("x86_64", s.abi, s.regs, mask, s.stack, module_at, History(), 1)
    assert len(frames) == 2 and guessed == 2


# ---------------------------------------------------------------- synthetic stacks


class _Cfi:
    """CFI stand-in: one row per [lo, hi) range."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def row(self, vaddr: int):
        for r in self.rows:
            if r.lo <= vaddr < r.hi:
                return r
        return None


class _Image:
    def __init__(self, base: int = 0, data: bytes = b"") -> None:
        self.base, self.data = base, data

    def read(self, vaddr: int, size: int):
        off = vaddr - self.base
        if 0 <= off and off + size <= len(self.data):
            return self.data[off:off + size]
        return None

    def in_code(self, vaddr: int) -> bool:
        return True  # every module of these tests is code throughout


def _space(rows: list[Row], lo: int = 0x1000, hi: int = 0x9000, image=None):
    cfi = _Cfi(rows)
    image = image or _Image()

    def module_at(addr: int):
        return (image, 0, cfi) if lo <= addr < hi else None

    return _Modules(module_at)


def _words(fmt: str, *values: int) -> memoryview:
    return memoryview(struct.pack(f"<{len(values)}{fmt}", *values))


def test_aarch64_leaf_uses_lr_then_saved_frame() -> None:
    # leaf (0x1000-0x1100): frameless, caller in LR. mid (0x2000-0x2100): CFA = sp+16,
    # x29 at cfa-16, x30 at cfa-8. outer (0x3000-0x3100): return address undefined.
    rows = [
        Row((CFA_REG, 31, 0), {}, 30, False, 0x1000, 0x1100),
        Row((CFA_REG, 31, 16), {29: (OFFSET, -16), 30: (OFFSET, -8)}, 30, False, 0x2000, 0x2100),
        Row((CFA_REG, 31, 0), {30: (UNDEF, 0)}, 30, False, 0x3000, 0x3100),
    ]
    sp = 0x7000_0000
    regs = [0] * 33
    regs[29], regs[30], regs[31], regs[32] = 0x55, 0x2010, sp, 0x1004
    stack = _words("Q", 0x66, 0x3020)
    frames, guessed = unwind("aarch64", 2, tuple(regs), (1 << 33) - 1, stack, _space(rows),
                             History(), -1)
    assert frames == [0x1004, 0x200F, 0x301F]
    assert guessed == 3


def _pac(addr: int, va_bits: int) -> int:
    """`addr` with a pointer authentication code: bits va_bits to 54 and 56 to 63."""
    return addr | (0x5A5A5A5A5A5A5A5A & ~((1 << va_bits) - 1) & ~(1 << 55))


@pytest.mark.parametrize("va_bits", [48, 39])
@pytest.mark.parametrize("block", [True, False], ids=["in-copy", "dict-path"])
def test_aarch64_signed_return_addresses_lose_their_code(va_bits: int, block: bool) -> None:
    """pac-ret (-mbranch-protection=standard): rows whose RA_SIGN_STATE is set give return
    addresses whose bits above the virtual address size are a code, whatever that size
    (48 bits on most distributions, 39 on many embedded kernels); a row that does not say
    so keeps the address as it is, and the walk ends at it."""
    signed = {RA_SIGN_STATE: (SIGNED, 0)}
    extra = {} if block else {19: (VAL_OFFSET, 0)}  # a value rule: no C block step
    rows = [
        Row((CFA_REG, 31, 16), {29: (OFFSET, -16), 30: (OFFSET, -8), **signed, **extra}, 30,
            False, 0x1000, 0x1100),
        Row((CFA_REG, 31, 16), {29: (OFFSET, -16), 30: (OFFSET, -8), **signed}, 30, False,
            0x2000, 0x2100),
        Row((CFA_REG, 31, 16), {29: (OFFSET, -16), 30: (OFFSET, -8)}, 30, False,
            0x3000, 0x3100),
    ]
    sp = 0x7000_0000
    regs = [0] * 33
    regs[29], regs[30], regs[31], regs[32] = sp, 0, sp, 0x1004
    stack = _words("Q", sp + 16, _pac(0x2010, va_bits), sp + 32, _pac(0x3020, va_bits),
                   0, _pac(0x4030, va_bits))
    frames, _ = unwind("aarch64", 2, tuple(regs), (1 << 33) - 1, stack, _space(rows),
                       History(), -1)
    # the third row is not signed: its return address stays as read, in no module
    assert frames[:4] == [0x1004, 0x200F, 0x301F, _pac(0x4030, va_bits) - 1]


def test_aarch64_a_signed_row_without_a_code_keeps_its_address() -> None:
    """A CPU without pointer authentication runs paciasp as a no-op: the signed row's
    return address has no code, and is the caller's as it is."""
    rows = [Row((CFA_REG, 31, 16), {29: (OFFSET, -16), 30: (OFFSET, -8),
                                    RA_SIGN_STATE: (SIGNED, 0)}, 30, False, 0x1000, 0x1100),
            Row((CFA_REG, 31, 0), {30: (UNDEF, 0)}, 30, False, 0x2000, 0x2100)]
    sp = 0x7000_0000
    regs = [0] * 33
    regs[29], regs[31], regs[32] = sp, sp, 0x1004
    frames, _ = unwind("aarch64", 2, tuple(regs), (1 << 33) - 1, _words("Q", 0, 0x2010),
                       _space(rows), History(), -1)
    assert frames == [0x1004, 0x200F]


PAC_PROGRAM = """
int leaf(int x) { return x ^ 5; }
int f(int x) { return leaf(x) * 3 + 1; }
int top(int x) { return f(x) + f(x + 1); }
"""


def test_aarch64_pac_ret_code_from_clang_unwinds(tmp_path: Path) -> None:
    """clang's -mbranch-protection=standard output: the CFI of a function that signs its
    return address (paciasp, .cfi_negate_ra_state) gives its caller with the code taken
    off, frame after frame."""
    (tmp_path / "pac.c").write_text(PAC_PROGRAM)
    subprocess.run(["clang", "--target=aarch64-linux-gnu", "-O2", "-fno-inline",
                    "-fvisibility=hidden", "-mbranch-protection=standard",
                    "-fasynchronous-unwind-tables", "-c", "pac.c"], cwd=tmp_path, check=True)
    subprocess.run(["ld.lld", "-shared", "pac.o", "-o", "libpac.so"], cwd=tmp_path, check=True)
    image = ElfImage.open(str(tmp_path / "libpac.so"))
    cfi = cfi_for_image(image)
    nm = subprocess.run(["nm", str(tmp_path / "libpac.so")], capture_output=True, text=True,
                        check=True).stdout
    addr = {line.split()[2]: int(line.split()[0], 16) for line in nm.splitlines()
            if line.split()[-1] in ("leaf", "f", "top")}
    assert RA_SIGN_STATE not in cfi.row(addr["f"]).regs  # paciasp not run yet
    assert RA_SIGN_STATE in cfi.row(addr["f"] + 8).regs
    text_lo, text = image.section(".text")

    def after_first_call(function: int) -> int:
        at = function
        while struct.unpack_from("<I", text, at - text_lo)[0] >> 26 != 0b100101:  # BL
            at += 4
        return at + 4

    into_f, into_top = after_first_call(addr["f"]), after_first_call(addr["top"])
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    sp = 0x7000_0000
    regs = [0] * 33
    # in leaf (no frame, returns to f through x30); f's frame at sp: top's x29 and the
    # signed return address into top; top's frame above: the outermost
    regs[29], regs[30], regs[31], regs[32] = sp, into_f, sp, addr["leaf"] + 4
    stack = _words("Q", sp + 16, _pac(into_top, 48), 0, 0)
    frames, _ = unwind("aarch64", 2, tuple(regs), (1 << 33) - 1, stack, space, History(), -1)
    assert frames == [addr["leaf"] + 4, into_f - 1, into_top - 1]


PLT_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) { printf("%zu %d\n", strlen(argv[0]), abs(argc - 3)); return 0; }
"""


_PLT_WORDS = (0x1111, 0x2222, 0x3333, 0x4444, 0x5555)  # _plt_callers' stack, from its top


def _plt_callers(exe: Path) -> dict[tuple[str, int], int | None]:
    """(PLT section, offset in it) -> the caller a DWARF walk finds from each address of the
    image's PLT sections, the stack holding distinct words: which one was the return address
    says where the walk took the CFA."""
    image = ElfImage.open(str(exe))
    cfi = cfi_for_image(image)
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    arch, abi, fmt = ("x86_64", 2, "Q") if image.is_64 else ("x86", 1, "I")
    sp = 0x7000_0000
    words = _words(fmt, *_PLT_WORDS, 0)
    out = {}
    for name in (".plt", ".iplt", ".plt.sec", ".plt.got"):
        sec = image.section(name)
        if sec is None:
            continue
        for off in range(len(sec[1])):
            # the stack pointer and the instruction pointer: perf's sample registers 7 and 8
            frames, _ = unwind(arch, abi, (sp, sec[0] + off), (1 << 7) | (1 << 8), words,
                               space, History(), 2)
            out[(name, off)] = frames[1] if len(frames) > 1 else None
    return out


@pytest.mark.parametrize("flags", [["-Wl,-z,lazy"], ["-Wl,-z,now"],
                                   ["-fcf-protection", "-Wl,-z,ibtplt"], ["-m32"]],
                         ids=["lazy", "now", "ibt", "i386"])
def test_plt_code_without_cfi_unwinds_as_gnu_lds_cfi_says(tmp_path: Path, flags) -> None:
    """lld emits no CFI for its PLTs; GNU ld does, unless told not to. The same program linked
    by GNU ld with and without its PLT CFI: every address of every PLT section finds the same
    caller, from the CFI or from the PLT's layout (the header's and the lazy entries'
    pushes)."""
    (tmp_path / "p.c").write_text(PLT_PROGRAM)
    built = {}
    for cfi in (True, False):
        exe = tmp_path / f"p{int(cfi)}"
        subprocess.run(["gcc", "-O2", "-fno-builtin", *flags,
                        *([] if cfi else ["-Wl,--no-ld-generated-unwind-info"]),
                        "-o", str(exe), "p.c"], cwd=tmp_path, check=True)
        built[cfi] = _plt_callers(exe)
    assert built[True].keys() == built[False].keys()
    assert len(set(built[True].values())) >= 2  # the lazy PLT's pushes: more than one depth
    assert built[True] == built[False]


@pytest.mark.parametrize("build", [*plt_programs.RETPOLINE, *plt_programs.MOLD])
def test_plt_code_of_lld_retpolines_and_mold_unwinds_as_it_runs(tmp_path: Path,
                                                                 build: str) -> None:
    """lld's retpoline PLTs (`-z retpolineplt`) and mold's have no CFI. A retpoline entry
    calls a thunk in the header (i386: after saving %eax) that returns into the function;
    mold's lazy header pushes the register its entries put the index in, then the GOT word.
    A lazy entry's first run goes through the header on to the resolver. At every PLT
    address the program executes, single-stepped by gdb, the walk takes the caller's return
    address from as deep in the stack as the program had pushed there (where two depths are
    seen, the retpoline entries' thunk, the one of every call after the first)."""
    exe = plt_programs.build(tmp_path, build)
    depths = plt_programs.stepped_depths(exe)
    sections = plt_programs.sections(exe)
    callers = {sections[name][0] + off: caller
               for (name, off), caller in _plt_callers(exe).items()}
    assert len(set(depths.values())) >= 2 and len(depths) >= 6
    for pc, depth in depths.items():
        assert callers[pc] == _PLT_WORDS[depth - 1] - 1, (hex(pc), depth)


@pytest.mark.parametrize("linker", list(aarch64_programs.LINKERS))
def test_aarch64_plt_code_returns_to_the_link_register(tmp_path: Path, linker: str) -> None:
    """Neither linker describes an aarch64 PLT in CFI: its entries leave the stack alone
    and return through x30, and the header stores x16 and x30 below the stack pointer first;
    from every PLT address the caller is x30's."""
    out = aarch64_programs.calls_through_plt(tmp_path, linker, "shared")
    image = ElfImage.open(str(out))
    cfi = cfi_for_image(image)
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    plt, code = image.section(".plt")
    caller = image.section(".text")[0] + 8  # in f
    sp = 0x7000_0000
    for addr in range(plt, plt + len(code), 4):
        assert cfi.row(addr) is not None
        regs = [0] * 33
        regs[29], regs[30], regs[31], regs[32] = sp + 32, caller, sp, addr
        frames, _ = unwind("aarch64", 2, tuple(regs), (1 << 33) - 1, _words("Q", 0, 0, 0, 0),
                           space, History(), 1)
        assert frames == [addr, caller - 1]


@pytest.mark.parametrize("linker", list(arm_programs.LINKERS))
def test_arm_plt_code_returns_to_lr(tmp_path: Path, linker: str) -> None:
    """No linker describes a 32-bit Arm PLT in CFI or its index (lld's index ends with a
    "cannot unwind" entry over it): its entries leave sp and lr alone, and the lazy header
    stores lr below sp first, then loads lr with the GOT's address. From every PLT address
    the caller is lr's, the header's from the stack once stored."""
    out = arm_programs.calls_through_plt(tmp_path, linker)
    image = ElfImage.open(str(out))
    cfi = cfi_for_image(image)
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    plt, code = image.section(".plt")
    header = min(arm_programs.plt_entries(out)) - plt
    caller = image.section(".text")[0] + 8  # in f
    sp = 0x7000_0000
    for addr in range(plt, plt + len(code), 4):
        regs = [0x0100_0000 * k + 1 for k in range(16)]
        # past the header's first instruction, lr holds the GOT's address, [sp] the caller
        stored = plt + 4 <= addr < plt + header
        regs[13], regs[14], regs[15] = sp, 0x5555 if stored else caller, addr
        frames, _ = unwind("arm", 1, tuple(regs), (1 << 16) - 1,
                           _words("I", caller if stored else 0x6666, 0, 0, 0),
                           space, History(), 1)
        assert frames == [addr, caller - 1], hex(addr)


def test_riscv64_code_from_clang_unwinds(tmp_path: Path) -> None:
    """RISC-V (64-bit): perf's register 0 is the pc, the others x1-x31, and DWARF has no
    number for the pc; clang's CFI (ra saved at the CFA less 8) gives each caller, from a
    leaf that returns through ra."""
    (tmp_path / "p.c").write_text(PAC_PROGRAM)
    subprocess.run(["clang", "--target=riscv64-linux-gnu", "-O2", "-fno-inline",
                    "-fvisibility=hidden", "-fasynchronous-unwind-tables", "-c", "p.c"],
                   cwd=tmp_path, check=True)
    subprocess.run(["ld.lld", "-shared", "p.o", "-o", "libp.so"], cwd=tmp_path, check=True)
    dump = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", "libp.so"], cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout
    after_call = {}  # function -> the address after its first call (jalr), and its start
    function = None
    lines = dump.splitlines()
    for i, line in enumerate(lines):
        head = re.match(r"^([0-9a-f]+) <(\w+)>:$", line)
        if head:
            function = head.group(2)
            after_call.setdefault(function, [int(head.group(1), 16), None])
        elif function and "\tjalr\t" in line and after_call[function][1] is None:
            after_call[function][1] = int(lines[i + 1].split(":")[0], 16)
    image = ElfImage.open(str(tmp_path / "libp.so"))
    cfi = cfi_for_image(image)
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    into_f, into_top = after_call["f"][1], after_call["top"][1]
    row = cfi.row(into_f - 1)  # f's frame: the return address into top at CFA + ra's offset
    assert row.cfa[:2] == (CFA_REG, 2) and row.regs[1][0] == OFFSET
    sp = 0x7000_0000
    words = [0] * 16
    words[(row.cfa[2] + row.regs[1][1]) // 8] = into_top
    regs = [0] * 32
    regs[0], regs[1], regs[2] = after_call["leaf"][0] + 2, into_f, sp  # perf's pc, ra, sp
    frames, _ = unwind("riscv64", 2, tuple(regs), (1 << 32) - 1, _words("Q", *words), space,
                       History(), -1)
    assert frames[:3] == [after_call["leaf"][0] + 2, into_f - 1, into_top - 1]


def test_riscv64_plt_code_returns_to_ra(tmp_path: Path) -> None:
    """lld describes no RISC-V PLT in CFI, and its code never touches the stack or ra: from
    every PLT address the caller is ra's."""
    (tmp_path / "c.c").write_text(aarch64_programs.CALLS)
    subprocess.run(["clang", "--target=riscv64-linux-gnu", "-O2", "-fPIC",
                    "-fasynchronous-unwind-tables", "-c", "c.c"], cwd=tmp_path, check=True)
    subprocess.run(["ld.lld", "-shared", "c.o", "-o", "libc.so"], cwd=tmp_path, check=True)
    image = ElfImage.open(str(tmp_path / "libc.so"))
    cfi = cfi_for_image(image)
    lo, hi = image.span()
    space = _Modules(lambda a: (image, 0, cfi) if lo <= a < hi else None)
    plt, code = image.section(".plt")
    caller = image.section(".text")[0] + 8
    for addr in range(plt, plt + len(code), 2):
        regs = [0] * 32
        regs[0], regs[1], regs[2] = addr, caller, 0x7000_0000
        frames, _ = unwind("riscv64", 2, tuple(regs), (1 << 32) - 1, _words("Q", 0, 0), space,
                           History(), 1)
        assert frames == [addr, caller - 1]


def test_aarch64_cfa_expressions_read_the_sve_vector_length() -> None:
    """A frame that saves SVE registers has a CFA of its stack pointer plus a multiple of
    VG (DWARF 46, `DW_OP_bregx 46`), which perf records as its sample register 46 on CPUs
    with SVE: the walk reads it there."""
    vg = 4  # 256-bit vectors
    # CFA = sp + 16 + 8 * VG (two 16-byte slots of z8 below a frame record): bregx 46 0;
    # lit8; mul; breg31 16; plus
    expr = bytes([0x92, 46, 0, 0x38, 0x1E, 0x8F, 16, 0x22])
    rows = [Row((CFA_EXPR, expr, 0), {29: (OFFSET, -16), 30: (OFFSET, -8)}, 30, False,
                0x1000, 0x1100),
            Row((CFA_REG, 31, 0), {30: (UNDEF, 0)}, 30, False, 0x2000, 0x2100)]
    sp = 0x7000_0000
    cfa = sp + 16 + 8 * vg
    words = [0] * ((cfa - sp) // 8)
    words[-2:] = [0, 0x2010]
    mask = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32) | (1 << 46)
    frames, _ = unwind("aarch64", 2, (sp, 0, sp, 0x1004, vg), mask, _words("Q", *words),
                       _space(rows), History(), -1)
    assert frames == [0x1004, 0x200F]


def test_arm_clears_thumb_bit_and_uses_lr() -> None:
    rows = [
        Row((CFA_REG, 13, 8), {14: (OFFSET, -4), 11: (OFFSET, -8)}, 14, False, 0x1000, 0x1100),
        Row((CFA_REG, 13, 0), {14: (UNDEF, 0)}, 14, False, 0x2000, 0x2100),
    ]
    sp = 0x8000
    regs = list(range(16))
    regs[13], regs[14], regs[15] = sp, 0x9999, 0x1010
    stack = _words("I", 0x77, 0x2021)  # saved r11, saved lr (Thumb)
    frames, _ = unwind("armv7l", 1, tuple(regs), 0xFFFF, stack, _space(rows), History(), -1)
    assert frames == [0x1010, 0x201F]


def test_arm_signal_return_trampoline_restores_the_interrupted_context() -> None:
    """glibc's armhf signal trampoline describes the signal frame's sigcontext in its index
    entry (`.save {r0-r15}`, `.pad #32`, one nop before the entry point so that the
    handler's return address less one is inside it): a handler's caller is the trampoline,
    whose caller is the interrupted code at its exact pc with its sp and registers."""
    restorer = _row(bytes([0x07, 0xB1, 0x0F, 0x8F, 0xFF, 0xB0]), 0x2000, 0x2100)
    rows = [
        Row((CFA_REG, 13, 8), {14: (OFFSET, -4), 11: (OFFSET, -8)}, 14, False, 0x1000, 0x1100),
        restorer,  # the nop at 0x2000, the entry point at 0x2004
        Row((CFA_REG, 13, 16), {14: (OFFSET, -4)}, 14, False, 0x3000, 0x3100),
        Row((CFA_REG, 13, 0), {14: (UNDEF, 0)}, 14, False, 0x4000, 0x4100),
    ]
    sp = 0x8000
    regs = list(range(16))
    regs[13], regs[14], regs[15] = sp, 0x2004, 0x1010  # in the handler, called by the kernel
    words = [0] * 160
    words[0:2] = [0x70, 0x2004]  # the handler's frame: r11, lr
    # the signal frame above it: 32 bytes, then the interrupted r0-r12, sp, lr, pc
    words[10:26] = [*range(100, 113), sp + 0x200, 0x4021, 0x3010]
    words[0x200 // 4 + 3] = 0x4041  # the interrupted function's frame: its lr below its CFA
    frames, _ = unwind("armv7l", 1, tuple(regs), 0xFFFF, _words("I", *words), _space(rows),
                       History(), -1)
    # the trampoline at its own address (a signal frame), then the interrupted pc exactly,
    # then its caller (lr from its frame, the Thumb bit cleared)
    assert frames == [0x1010, 0x2004, 0x3010, 0x403F]


def test_i386_frames_and_module_memory_reads() -> None:
    # f1: CFA = esp+4, eip at cfa-4. f2: CFA = ebp+8, ebp at cfa-8, eip at cfa-4.
    # f3: eip read from module memory (DW_OP_drop; DW_OP_addr 0x5004). f4: outermost.
    from_module = bytes([0x13, 0x03]) + struct.pack("<I", 0x5004)
    rows = [
        Row((CFA_REG, 4, 4), {8: (OFFSET, -4)}, 8, False, 0x1000, 0x1100),
        Row((CFA_REG, 5, 8), {5: (OFFSET, -8), 8: (OFFSET, -4)}, 8, False, 0x2000, 0x2100),
        Row((CFA_REG, 4, 4), {8: (EXPR, from_module)}, 8, False, 0x3000, 0x3050),
        Row((CFA_REG, 4, 4), {8: (UNDEF, 0)}, 8, False, 0x3050, 0x3100),
    ]
    sp = 0xBF00_0000
    # perf order: ax bx cx dx si di bp sp ip
    regs = (1, 2, 3, 4, 5, 6, sp + 4, sp, 0x1020)
    stack = _words("I", 0x2030, 0x1234, 0x3040)
    image = _Image(0x5000, struct.pack("<II", 0, 0x3060))
    frames, guessed = unwind("i686", 1, regs, 0x1FF, stack, _space(rows, image=image), History(), 16)
    assert frames == [0x1020, 0x202F, 0x303F, 0x305F]
    assert guessed == 4


def test_guessed_frames_from_history() -> None:
    rows = [Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x4000)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)  # perf SP and IP only
    # Stack copy holds only the first return address; the next word comes from history.
    stack = _words("Q", 0x2000)
    history = History()
    history[sp + 8] = 0x3000
    history[sp + 16] = 0
    frames, guessed = unwind("x86_64", 2, (sp, 0x1000), mask, stack, _space(rows),
                             history, -1)
    assert frames == [0x1000, 0x1FFF, 0x2FFF]
    assert history[sp] == 0x2000
    # pc == 0 ended the unwinding, which resets the guessed marker to the end
    assert guessed == 3
    # without the terminating zero, frames after the history read count as guessed
    history = History()
    history[sp + 8] = 0x3000
    frames, guessed = unwind("x86_64", 2, (sp, 0x1000), mask, stack, _space(rows), history, -1)
    assert frames == [0x1000, 0x1FFF, 0x2FFF]
    assert guessed == 2


def test_a_slot_below_sp_was_popped_already() -> None:
    """A leaf sampled in its epilogue after `pop %rbp` still has the rule `rbp at CFA-16`
    (compilers emit no DW_CFA_restore after a pop), a slot below SP and outside the stack
    copy: the caller's rbp is the register's value, not a word another sample left there,
    and no frame is guessed. The caller's CFA is rbp-based, so a stale rbp would misplace it."""
    rows = [
        Row((CFA_REG, 7, 8), {6: (OFFSET, -16), 16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 6, 16), {6: (OFFSET, -16), 16: (OFFSET, -8)}, 16, False, 0x2000, 0x2100),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 6) | (1 << 7) | (1 << 8)  # rbp, rsp, rip
    # [sp]: the leaf's return address; the caller's frame: its saved rbp and return address
    stack = _words("Q", 0x2040, 0xAA, 0xBB, 0x3040)
    history = History()
    history[sp - 8] = sp + 0x100  # a stale word where the leaf's rbp was pushed
    frames, guessed = unwind("x86_64", 2, (sp + 16, sp, 0x1010), mask, stack, _space(rows),
                             history, -1)
    assert frames == [0x1010, 0x203F, 0x303F] and guessed == len(frames)


def test_a_remembered_return_address_in_no_module_ends_the_walk() -> None:
    """A word from another sample that is no code address ([heap] data, a stale stack slot)
    is not a caller: the walk stops before it rather than adding a junk frame."""
    rows = [Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x4000)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    stack = _words("Q", 0x2000)
    history = History()
    history[sp + 8] = 0x5555_0000  # in no module
    frames, guessed = unwind("x86_64", 2, (sp, 0x1000), mask, stack, _space(rows),
                             history, -1)
    assert frames == [0x1000, 0x1FFF] and guessed == 2
    # the same word read from the sample's own stack copy is still a frame (unresolved)
    stack = _words("Q", 0x2000, 0x5555_0000)
    frames, _ = unwind("x86_64", 2, (sp, 0x1000), mask, stack, _space(rows), History(), -1)
    assert frames[:3] == [0x1000, 0x1FFF, 0x5555_0000 - 1]


def test_a_remembered_return_address_outside_its_modules_code_ends_the_walk() -> None:
    """A word from another sample that points into a module's read-only data (ld.so's
    .gnu.hash: a pointer its symbol lookup left on the stack before main ran) is no return
    address either; one into the module's code still is, guessed."""
    rows = [Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x4000)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)

    class _Data(_Image):  # code at [0x1000, 0x5000), read-only data at [0x5000, 0x9000)
        def in_code(self, vaddr: int) -> bool:
            return vaddr < 0x5000

    for word, expected in ((0x5510, [0x1000, 0x1FFF]), (0x4510, [0x1000, 0x1FFF, 0x450F])):
        history = History()
        history[sp + 8] = word
        frames, guessed = unwind("x86_64", 2, (sp, 0x1000), mask, _words("Q", 0x2000),
                                 _space(rows, image=_Data()), history, -1)
        assert frames == expected and guessed == 2


def test_a_register_one_walk_restored_has_no_value_in_the_next_ones() -> None:
    """The walker is reused sample after sample: %rbp, restored from the stack by one walk,
    has no value in the next one, whose sample has none, however many walks ran between
    (a walk marks its registers with a generation number of a byte that wraps)."""
    rows = [
        Row((CFA_REG, 7, 16), {6: (OFFSET, -16), 16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 6, 16), {16: (OFFSET, -8)}, 16, False, 0x2000, 0x2100),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)  # rsp, rip: no %rbp
    # the leaf's saved %rbp (the caller's frame, at sp + 16) and return address, then the
    # caller's return address
    stack = _words("Q", sp + 16, 0x2040, 0, 0x3040)
    space = _space(rows)
    frames, _ = unwind("x86_64", 2, (sp, 0x1010), mask, stack, space, History(), -1)
    assert frames == [0x1010, 0x203F, 0x303F]
    for _ in range(600):
        # the caller's row needs %rbp, which this sample does not have
        frames, _ = unwind("x86_64", 2, (sp, 0x2010), mask, stack, space, History(), -1)
        assert frames == [0x2010]


def test_the_frame_pointer_step_is_only_for_code_without_cfi() -> None:
    """elfutils steps by %rbp only where no CFI row covers pc: a row whose return address
    cannot be read (its frame reaches past the stack copy) ends the walk, though %rbp, a
    callee-saved register like any other under CFI, points at two words that look like a
    frame."""
    sp = 0x7FFF_0000
    mask = (1 << 6) | (1 << 7) | (1 << 8)
    stack = _words("Q", 0, 0x3000)  # at sp: a "caller's %rbp" 0 and a "return address"
    regs = (sp, sp, 0x1000)  # %rbp, %rsp, %rip
    big = [Row((CFA_REG, 7, 0x10000), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x2000)]
    frames, _ = unwind("x86_64", 2, regs, mask, stack, _space(big), History(), -1)
    assert frames == [0x1000]
    # where no row covers pc, the same words are the caller
    frames, _ = unwind("x86_64", 2, regs, mask, stack, _space([]), History(), -1)
    assert frames == [0x1000, 0x2FFF]


def test_a_walk_deeper_than_the_output_array_keeps_every_frame() -> None:
    """The walk's frame array starts small and grows: 300 callers all come back, in order."""
    rows = [Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x4000)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    returns = [0x2000 + 4 * k for k in range(300)]
    stack = _words("Q", *returns, 0)
    frames, guessed = unwind("x86_64", 2, (sp, 0x1000), mask, stack, _space(rows), History(), -1)
    assert frames == [0x1000] + [r - 1 for r in returns] and guessed == len(frames)


def test_words_off_the_copy_s_8_byte_grid_are_read_bytewise() -> None:
    """The copy's 8-byte words are read as whole words where aligned; a CFA off that grid
    (sp + 12) and a copy whose length is no multiple of 8 still give every byte its place."""
    rows = [Row((CFA_REG, 7, 12), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
            Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x2000, 0x2100)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    stack = memoryview(b"\xee" * 4 + struct.pack("<Q", 0x2041) + b"\xff" * 3)  # 15 bytes
    frames, guessed = unwind("x86_64", 2, (sp, 0x1010), mask, stack, _space(rows), History(), -1)
    assert frames == [0x1010, 0x2040] and guessed == len(frames)


def test_x86_64_plt_cfa_expression() -> None:
    # glibc PLT: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0)
    expr = bytes([0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B, 0x2A, 0x33, 0x24, 0x22])
    rows = [
        Row((CFA_EXPR, expr, 0), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x2000, 0x2100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    stack = _words("Q", 0x2040, 0x2050)
    frames, _ = unwind("x86_64", 2, (sp, 0x100B), mask, stack, _space(rows), History(), -1)
    assert frames == [0x100B, 0x204F]  # (0x100B & 15) >= 11: CFA = rsp + 16
    frames, _ = unwind("x86_64", 2, (sp, 0x1006), mask, stack, _space(rows), History(), -1)
    assert frames == [0x1006, 0x203F]


def test_signal_frame_lookup_is_exact() -> None:
    rows = [
        Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        # trampoline: 'S' augmentation, CFA from a val_offset-style saved context
        Row((CFA_REG, 7, 16), {16: (OFFSET, -8), 6: (VAL_OFFSET, 0)}, 16, True, 0x1FFF, 0x2010),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    stack = _words("Q", 0x2000, 0xBB, 0x3000)
    frames, _ = unwind("x86_64", 2, (sp, 0x1010), mask, stack, _space(rows), History(), -1)
    # the trampoline and the interrupted frame are activations: their pcs are not decremented
    assert frames == [0x1010, 0x2000, 0x3000]


def test_a_return_address_in_a_register_may_keep_the_cfa_at_sp() -> None:
    # glibc's __vfork pops its return address into %rdi before the syscall (CFI: CFA = rsp,
    # DW_CFA_register rip, rdi): the caller's SP is this frame's, and the walk goes on, as
    # perf's does. The same CFA with the return address read from the stack still ends it.
    rows = [
        Row((CFA_REG, 7, 0), {16: (REGISTER, 5)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x2000, 0x2100),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 5) | (1 << 7) | (1 << 8)  # rdi, rsp, rip
    stack = _words("Q", 0x3040)
    frames, _ = unwind("x86_64", 2, (0x2040, sp, 0x1010), mask, stack, _space(rows), History(),
                       -1)
    assert frames == [0x1010, 0x203F, 0x303F]
    rows[0] = Row((CFA_REG, 7, 0), {16: (OFFSET, 0)}, 16, False, 0x1000, 0x1100)
    frames, _ = unwind("x86_64", 2, (0x2040, sp, 0x1010), mask, stack, _space(rows), History(),
                       -1)
    assert frames == [0x1010]


@pytest.mark.parametrize("rows", [
    [Row((CFA_REG, 7, 0), {16: (OFFSET, 0)}, 16, False, 0x1000, 0x1100)],  # CFA not increasing
    [Row((CFA_REG, 7, 8), {16: (OFFSET, -8), 7: (VAL_OFFSET, -8)}, 16, False, 0x1000, 0x1100)],
    [Row((CFA_EXPR, bytes([0x2F, 0xFD, 0xFF]), 0), {}, 16, False, 0x1000, 0x1100)],  # skip loop
    [Row((CFA_REG, 99, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100)],  # unknown register
])
def test_hostile_rows_terminate(rows: list[Row]) -> None:
    sp = 0x7FFF_0000
    stack = _words("Q", *([0x1010] * 8))
    frames, guessed = unwind("x86_64", 2, (sp, 0x1010), (1 << 7) | (1 << 8), stack,
                             _space(rows), History(), -1)
    assert 1 <= len(frames) <= 3
    assert guessed <= len(frames)


def test_unsupported_arch_and_garbage_input() -> None:
    assert unwind("ppc64le", 2, (1, 2), 3, memoryview(b""), _NOWHERE, History(), -1) == ([], 0)
    assert unwind("x86_64", 2, (), 0, memoryview(b""), _NOWHERE, History(), -1) == ([], 0)
    frames, _ = unwind("x86_64", 2, (0x10, 0x1234), 0x180, memoryview(b"\1\2\3"),
                       _NOWHERE, History(), -1)
    assert frames == [0x1234]


def test_register_tables() -> None:
    assert arch_family("arm64") == "aarch64" and arch_family("armv7l") == "arm"
    assert arch_family("i686") == "x86" and arch_family("riscv64") == "riscv"
    assert table_for("riscv64", 2).ip_perf == 0 and table_for("riscv32", 1) is None
    assert table_for("x86", 2).dwarf_from_perf[:8] == (0, 3, 2, 1, 4, 5, 6, 7)
    assert table_for("x86", 1).dwarf_from_perf == (0, 2, 3, 1, 7, 6, 4, 5, 8)
    assert table_for("aarch64", 2).sp_perf == 31 and table_for("arm", 1).ip_perf == 15
    assert table_for("aarch64", 1) is table_for("arm", 1)  # AArch32 on an arm64 kernel
    assert table_for("mips", 2) is None
    # an image's machine picks its table: x86-64's and i386's code, x32's none
    assert table_for_machine(62, True) is table_for("x86", 2)
    assert table_for_machine(3, False) is table_for("x86", 1)
    assert table_for_machine(183, True) is table_for("aarch64", 2)
    assert table_for_machine(243, True) is table_for("riscv", 2)
    assert table_for_machine(62, False) is None and table_for_machine(243, False) is None


# ---------------------------------------------------------------- state across walks


def test_a_shared_step_cache_walks_as_a_fresh_one() -> None:
    # the per-process cache of compiled steps must give what compiling every row afresh
    # gives, history included
    mask, samples, mmaps = perfdata_mini.read(str(CORPUS / "recorded" / "dwarf" / "perf.data"))
    module_at = _address_space("dwarf", "hotloop", mmaps)
    shared = Steps()
    history_shared = History()
    history_fresh = History()
    for s in samples:
        assert (unwind("x86_64", s.abi, s.regs, mask, s.stack, module_at, history_shared, 1024,
                       steps=shared)
                == unwind("x86_64", s.abi, s.regs, mask, s.stack, module_at, history_fresh,
                          1024))
    assert len(shared) and dict(history_shared.items()) == dict(history_fresh.items())


def test_a_cached_step_follows_changed_stack_words() -> None:
    # leaf (0x1000): CFA = rsp+8. mid (0x2000): CFA = rsp+24, rbx at cfa-16, ra at cfa-8.
    # outer (0x3000-0x3100): outermost.
    rows = [
        Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 7, 24), {3: (OFFSET, -16), 16: (OFFSET, -8)}, 16, False, 0x2000, 0x2100),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    steps = Steps()
    history = History()
    space = _space(rows)

    def walk(*words: int) -> list[int]:
        frames, _ = unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", *words), space,
                           history, -1, steps=steps)
        return frames

    assert walk(0x2010, 0, 0xAA, 0x3010) == [0x1010, 0x200F, 0x300F]
    assert walk(0x2010, 0, 0xBB, 0x3010) == [0x1010, 0x200F, 0x300F]
    assert history[sp + 16] == 0xBB  # the word as this sample has it
    assert walk(0x2010, 0, 0xBB, 0x3020) == [0x1010, 0x200F, 0x301F]  # return address moved
    assert walk(0x2010, 0, 0xBB, 0x1050) == [0x1010, 0x200F, 0x104F]  # and into the leaf


def test_a_word_read_from_history_is_the_last_one_written() -> None:
    # Leaf (0x1000) returns into A (0x2000: rbx at cfa-16, ra at cfa-8) or B (0x2200: ra at
    # cfa-8), both into the outermost frame (0x3000). A's rbx slot is B's return address slot
    # (sp + 16): a walk that reads it from history gets what the last sample had there.
    rows = [
        Row((CFA_REG, 7, 8), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100),
        Row((CFA_REG, 7, 24), {3: (OFFSET, -16), 16: (OFFSET, -8)}, 16, False, 0x2000, 0x2100),
        Row((CFA_REG, 7, 16), {16: (OFFSET, -8)}, 16, False, 0x2200, 0x2300),
        Row((CFA_REG, 7, 8), {16: (UNDEF, 0)}, 16, False, 0x3000, 0x3100),
    ]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    space = _space(rows)
    history = History()
    steps = Steps()

    def walk(*words: int) -> tuple[list[int], int]:
        return unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", *words), space, history,
                      -1, steps=steps)

    def via_a(rbx: int) -> tuple[list[int], int]:
        return walk(0x2010, 0, rbx, 0x3010)

    def via_b() -> tuple[list[int], int]:
        return walk(0x2210, 0, 0x3010)

    def read() -> tuple[list[int], int]:
        return walk(0x2210)  # B's return address is outside this copy: history has it

    got = [via_a(0x3020), via_a(0x3030), via_b(), read(), via_a(0x3040), read(),
           via_b(), read(), via_a(0x3050), via_a(0x3060), read()]
    assert [got[i] for i in (3, 5, 7, 10)] == [
        ([0x1010, 0x220F, 0x300F], 2),
        ([0x1010, 0x220F, 0x303F], 2),
        ([0x1010, 0x220F, 0x300F], 2),
        ([0x1010, 0x220F, 0x305F], 2),
    ]
    assert history[sp + 16] == 0x3060


def test_history_keeps_every_address_across_growth() -> None:
    # the table doubles as it fills: every word written stays readable, the last write wins
    h = History()
    addrs = [0x7FFF_0000_0000 + 8 * i for i in range(5000)] + [0, (1 << 64) - 8]
    for k, addr in enumerate(addrs):
        h[addr] = k
    for k, addr in enumerate(addrs[::7]):
        h[addr] = (1 << 64) - 1 - k
    expected = {addr: k for k, addr in enumerate(addrs)}
    expected.update({addr: (1 << 64) - 1 - k for k, addr in enumerate(addrs[::7])})
    assert len(h) == len(addrs) and dict(h.items()) == expected
    assert h.word(0x10) is None and h.word(addrs[-1]) == expected[addrs[-1]]
    with pytest.raises(KeyError):
        h[0x18]


@pytest.mark.parametrize("back_to", [20, 90])
def test_a_frame_pointer_cycle_ends_the_walk(back_to: int) -> None:
    # aarch64 frames of one function (CFA = x29+16, x29 at cfa-16, x30 at cfa-8) chained by
    # their frame pointers, the 100th pointing back to frame `back_to`'s: the walk stops on
    # the first (pc, CFA) seen before, whether that is 80 frames back (past the keys the walk
    # keeps in C arrays) or 10
    rows = [Row((CFA_REG, 29, 16), {29: (OFFSET, -16), 30: (OFFSET, -8)}, 30, False,
                0x1000, 0x1100)]
    sp = 0x7000_0000
    words = []
    for i in range(100):
        nxt = sp + 16 * (i + 1) if i < 99 else sp + 16 * back_to
        words += [nxt, 0x1010]  # frame i at sp + 16 i: the caller's x29, the return address
    regs = [0] * 33
    regs[29], regs[30], regs[31], regs[32] = sp, 0x1010, sp, 0x1010
    mask = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32)
    frames, guessed = unwind("aarch64", 2, (sp, 0x1010, sp, 0x1010), mask,
                             _words("Q", *words), _space(rows), History(), -1)
    # frame k's CFA is frame k's x29 + 16; frame 100 has frame back_to's again
    assert len(frames) == 101 and guessed == 101
    assert frames[0] == 0x1010 and set(frames[1:]) == {0x100F}


def test_words_outside_the_copy_ask_for_their_module_once_per_span() -> None:
    # ten frames (CFA = rsp+16, ra at cfa-8) whose return addresses all lie past the stack
    # copy, in history: a module_at that can name the span without modules around the first
    # such word (unwind.process.ModuleLookup) is asked about stack words once; the frames are
    # those of one that cannot
    rows = [Row((CFA_REG, 7, 16), {16: (OFFSET, -8)}, 16, False, 0x1000, 0x1100)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    code = _space(rows)
    asked: list[int] = []

    class Spans(ModuleAt):
        def module(self, addr: int):
            if addr >= sp:
                asked.append(addr)
            return code.module(addr)

        def no_image_span(self, addr: int):
            return (sp, sp + 0x10000) if sp <= addr < sp + 0x10000 else None

    history = History()
    for i in range(10):
        history[sp + 16 * i + 8] = 0x1010
    history[sp + 16 * 10 + 8] = 0
    walks = [unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", 0), module_at, history, -1)
             for module_at in (code, Spans())]
    assert walks[0] == walks[1] and len(walks[0][0]) == 11
    assert asked == [sp + 8]
    # the process's next walks (its steps) start from the span: asked about none; once its
    # steps are cleared (the module lookups may answer anew), asked again
    steps = Steps()
    spans = Spans()
    asked.clear()
    for _ in range(3):
        assert unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", 0), spans, history, -1,
                      steps=steps) == walks[0]
    assert asked == [sp + 8]
    steps.clear()
    assert unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", 0), spans, history, -1,
                  steps=steps) == walks[0]
    assert asked == [sp + 8, sp + 8]


def test_a_row_saving_registers_exabytes_apart_is_walked_by_rules() -> None:
    # hostile CFI: two saves 2**63 bytes apart; the block path, whose span is a C integer,
    # must not take the row (it raised, and the sample lost its every frame)
    far = (1 << 62) - 1
    rows = [Row((CFA_REG, 7, 16), {3: (OFFSET, -far), 16: (OFFSET, far)}, 16, False,
                0x1000, 0x1100)]
    sp = 0x7FFF_0000
    mask = (1 << 7) | (1 << 8)
    frames, _ = unwind("x86_64", 2, (sp, 0x1010), mask, _words("Q", 0, 0), _space(rows),
                       History(), -1)
    assert frames[:1] == [0x1010]
