"""32-bit Arm's exception-handling index (.ARM.exidx, .ARM.extab) as CFI rows (elf.exidx):
checked against the DWARF CFI (.debug_frame) the same compilers emit beside it, and opcode
by opcode against Arm's EHABI."""

from __future__ import annotations

import shutil
import struct
import subprocess
from array import array
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from perfparser_py.elf.cfi import CFA_EXPR, CFA_REG, EXPR, OFFSET, Cfi
from perfparser_py.elf.exidx import ArmExidx, _row
from perfparser_py.elf.image import ElfImage
from perfparser_py.perfdata.events import packed_regs
from perfparser_py.unwind import dwarf
from perfparser_py.unwind.history import History
from perfparser_py.unwind.process import ModuleAt
from perfparser_py.unwind.rules import cfi_for_image
from tests import arm_programs

EM_ARM = 40

def _rules(row) -> tuple:
    """What a row says of the caller's core registers: the CFA and where each was saved."""
    return row.cfa, {r: rule for r, rule in row.regs.items() if r < 16}


@pytest.mark.parametrize("cxx", [False, True], ids=["c", "c++"])
@pytest.mark.parametrize("variant", list(arm_programs.VARIANTS))
@pytest.mark.parametrize("compiler", list(arm_programs.COMPILERS))
def test_index_rows_agree_with_debug_frame_at_every_call(tmp_path: Path, compiler: str,
                                                         variant: str, cxx: bool) -> None:
    """At every call's return address (where a caller's frame stands during the call) the
    index entry's row saves the same core registers at the same places and gives the same
    CFA as the compiler's own .debug_frame: alloca (the stack pointer from a frame
    pointer), a 280 KB frame, VFP registers, C++'s personality routine's .ARM.extab entries."""
    lib = arm_programs.build(tmp_path, compiler, variant, cxx)
    image = ElfImage.open(str(lib))
    dwarf, index = Cfi.for_image(image), ArmExidx.for_image(image)
    returns = arm_programs.returns(lib)
    assert len(returns) >= (3 if cxx else 12)
    for ra in returns:
        expected = dwarf.row(ra - 1)
        assert expected is not None
        assert _rules(index.row(ra - 1)) == _rules(expected), hex(ra)


class _Space(ModuleAt):
    def __init__(self, image, cfi) -> None:
        self.lo, self.hi = image.span()
        self.mod = (image, 0, cfi)

    def module(self, addr: int):
        return self.mod if self.lo <= addr < self.hi else None


@pytest.mark.parametrize("variant", ["arm-O2", "thumb-O2", "thumb-fp"])
def test_a_stripped_arm_library_unwinds_as_with_its_debug_frame(tmp_path: Path,
                                                                variant: str) -> None:
    """A library without DWARF CFI (stripped, as a distribution's armhf one is) unwinds
    frame after frame from its index: the same walk as with its .debug_frame, over a stack
    of return addresses and frame pointers (arm_programs.walkable_stack)."""
    lib = arm_programs.build(tmp_path, "clang", variant, False)
    stripped = tmp_path / "stripped.so"
    subprocess.run(["llvm-objcopy", "--strip-debug", str(lib), str(stripped)], check=True)
    full = cfi_for_image(ElfImage.open(str(lib)))
    # calls from frames that fit the stack copy (not the 280 KB one)
    calls = [ra for ra in arm_programs.returns(lib) if full.row(ra - 1).cfa[2] < 256]
    words, regs = arm_programs.walkable_stack(calls, "thumb" in variant, 0x7000_0000)
    walks = []
    for path in (lib, stripped):
        image = ElfImage.open(str(path))
        cfi = cfi_for_image(image)
        assert (cfi._debug is None) == (path == stripped)
        packed, _ = dwarf.unwind("arm", 1, packed_regs(regs), (1 << 16) - 1, memoryview(words),
                                 _Space(image, cfi), History(), 24)
        walks.append(list(array("Q", packed)))
    assert len(walks[0]) >= 10
    assert walks[1] == walks[0]


def test_a_32_bit_process_on_an_arm64_kernel_unwinds_as_on_arm(tmp_path: Path) -> None:
    """An AArch32 process recorded on an arm64 kernel (`perf record` there names the machine
    aarch64): its samples' register ABI is 32-bit, the mask aarch64's 33 registers, r0-r15 the
    first 16 (sp, lr and the pc also at 31, 30 and 32). Its walk is a 32-bit Arm one: the
    same frames as from an arm kernel's sample."""
    lib = arm_programs.build(tmp_path, "clang", "thumb-O2", False)
    image = ElfImage.open(str(lib))
    cfi = cfi_for_image(image)
    calls = [ra for ra in arm_programs.returns(lib) if cfi.row(ra - 1).cfa[2] < 256]
    words, arm = arm_programs.walkable_stack(calls, True, 0x7000_0000)
    compat = [*arm, *(0xDEAD0000 + k for k in range(16, 30)), arm[14], arm[13], arm[15]]
    walks = []
    for arch, regs in (("arm", arm), ("aarch64", compat)):
        packed, _ = dwarf.unwind(arch, 1, packed_regs(regs), (1 << len(regs)) - 1, memoryview(words),
                                 _Space(image, cfi), History(), 24)
        walks.append(list(array("Q", packed)))
    assert len(walks[0]) >= 10
    assert walks[1] == walks[0]


STATIC_FUNCTIONS = r"""
extern int ext(int);
static __attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
static __attribute__((noinline)) int calls(int x) { return ext(x) + ext(x + 1) * 2; }
static __attribute__((noinline)) int frame(int x) {
    volatile int a[64]; for (int i = 0; i < 64; i++) a[i] = ext(i); return a[x & 63]; }
int top(int x) { return leaf(x) + calls(x) + frame(x); }
"""


@pytest.mark.parametrize("variant", ["arm-O2", "thumb-O2"])
def test_a_stripped_arm_librarys_functions_are_its_index_entries(tmp_path: Path,
                                                                variant: str) -> None:
    """A stripped armhf library keeps only its exported symbols; each of its other
    functions is still the code from its index entry's start up to the next entry, named
    after that start: the function its symbol was before the strip, with its padding."""
    (tmp_path / "s.c").write_text(STATIC_FUNCTIONS)
    subprocess.run([*arm_programs.COMPILERS["clang"], *arm_programs.VARIANTS[variant], "-fPIC",
                    "-c", "s.c"], cwd=tmp_path, check=True)
    lib, stripped = tmp_path / "libs.so", tmp_path / "stripped.so"
    subprocess.run(["ld.lld", "-shared", "-o", str(lib), str(tmp_path / "s.o")], check=True)
    subprocess.run(["llvm-objcopy", "--strip-all", str(lib), str(stripped)], check=True)
    image = ElfImage.open(str(stripped))
    with open(lib, "rb") as f:  # Thumb functions' values have bit 0 set
        functions = {sym.name: (sym["st_value"] & ~1, sym["st_size"])
                     for sym in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                     if sym["st_info"]["type"] == "STT_FUNC"}
    for name in ("leaf", "calls", "frame"):
        start, size = functions[name]
        assert size > 0, name
        for vaddr in (start, start + size // 2, start + size - 1):
            assert image.symbol_at(vaddr) is None
            found = image.unnamed_function(vaddr)
            assert found is not None, (name, hex(vaddr))
            assert found[:2] == (f"<.text+{start:x}>", start)
            assert start + size <= start + found[2] < start + size + 16  # then padding
    assert image.symbol_at(functions["top"][0]) is not None  # exported: .dynsym names it


def test_functions_gnu_ld_folded_into_an_exported_ones_entry_start_after_it(tmp_path: Path
                                                                          ) -> None:
    """GNU ld folds neighbouring index entries that say the same into one: here an exported
    function's and the two static ones after it. Those two are named from where the exported
    one's symbol ends, not after its start, and no range reaches into it."""
    (tmp_path / "m.c").write_text(r"""
extern int ext(int);
static __attribute__((noinline)) int a(int x) { return ext(x) + ext(x + 1) * 2; }
static __attribute__((noinline)) int b(int x) { return ext(x) * 3 + ext(x + 2); }
int top(int x) { return a(x) + b(x); }
""")
    subprocess.run([*arm_programs.COMPILERS["clang"], "-O2", "-marm", "-fPIC", "-c", "m.c"],
                   cwd=tmp_path, check=True)
    lib, stripped = tmp_path / "libm.so", tmp_path / "stripped.so"
    subprocess.run(["arm-linux-gnueabihf-ld", "-shared", "-o", str(lib), str(tmp_path / "m.o")],
                   check=True)
    subprocess.run(["llvm-objcopy", "--strip-all", str(lib), str(stripped)], check=True)
    with open(lib, "rb") as f:
        functions = {sym.name: (sym["st_value"], sym["st_size"])
                     for sym in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                     if sym["st_info"]["type"] == "STT_FUNC"}
    image = ElfImage.open(str(stripped))
    index = ArmExidx.for_image(image)
    top, a, b = functions["top"], functions["a"], functions["b"]
    assert index.function_at(a[0]) == index.function_at(top[0])  # folded: one entry
    after_top = top[0] + top[1]
    for vaddr in (a[0], b[0] + b[1] - 1):
        name, start, size = image.unnamed_function(vaddr)
        assert (name, start) == (f"<.text+{after_top:x}>", after_top)
        assert start + size >= b[0] + b[1]
    assert image.symbol_at(top[0] + 4)[0] == "top"


# ---------------------------------------------------------------- opcode by opcode

def _regs(row) -> dict[int, int]:
    return {r: arg for r, (kind, arg) in row.regs.items() if kind == OFFSET}


def test_stack_pointer_adjustments_and_pops() -> None:
    row = _row(bytes([0x01, 0xAA, 0xB0, 0x3F]), 0, 4)  # vsp += 8; pop r4-r6, lr; finish
    assert row.cfa == (CFA_REG, 13, 24) and row.ra == 14
    assert _regs(row) == {4: -16, 5: -12, 6: -8, 14: -4}
    row = _row(bytes([0x7F, 0x84, 0x81, 0xB1, 0x05]), 0, 4)  # vsp -= 256; pop r4, r11, lr
    assert row.cfa == (CFA_REG, 13, -256 + 12 + 8)      # pop r0, r2
    assert _regs(row) == {4: -20, 11: -16, 14: -12, 0: -8, 2: -4}
    assert _row(bytes([0xB2, 0x81, 0x01]), 0, 4).cfa == (CFA_REG, 13, 0x204 + (129 << 2))
    # VFP and iWMMXt registers move the stack pointer, are no core register
    for ops, moved in ((b"\xb3\x12", 3 * 8 + 4), (b"\xbb", 4 * 8 + 4), (b"\xc2", 3 * 8),
                       (b"\xc6\x21", 2 * 8), (b"\xc7\x0b", 3 * 4), (b"\xc8\x03", 4 * 8),
                       (b"\xc9\x80", 8), (b"\xd1", 2 * 8)):
        row = _row(ops + b"\xa8", 0, 4)  # then pop r4, lr
        assert row.cfa == (CFA_REG, 13, moved + 8) and _regs(row) == {4: -8, 14: -4}, ops


def test_the_stack_pointer_from_a_frame_pointer() -> None:
    row = _row(bytes([0x97, 0x41, 0xAB]), 0, 4)  # vsp = r7; vsp -= 8; pop r4-r7, lr
    assert row.cfa == (CFA_REG, 7, 12) and _regs(row)[14] == -4 and _regs(row)[4] == -20
    # once a register is popped relative to sp, a new base cannot be expressed
    assert _row(bytes([0xA8, 0x9B]), 0, 4) is None


def test_a_popped_register_context_is_a_signal_frame() -> None:
    """glibc's armhf signal trampolines: `.pad #32`, `.save {r0-r15}` (vsp += 32; pop r0-r3;
    pop r4-r15): the caller's sp is the word saved for it, the others their words, all
    below the old sp (DWARF expressions), and the caller's pc is no return address."""
    row = _row(bytes([0x07, 0xB1, 0x0F, 0x8F, 0xFF, 0xB0]), 0, 4)
    assert row.signal and row.ra == 15
    assert row.cfa == (CFA_EXPR, bytes([0x7D, 0xD4, 0x00, 0x06]), 0)  # [sp + 84]
    assert row.regs[0] == (EXPR, bytes([0x7D, 32])) and 13 not in row.regs
    assert row.regs[15] == (EXPR, bytes([0x7D, 0xDC, 0x00]))  # sp + 92


def test_a_popped_pc_is_the_return_address() -> None:
    row = _row(bytes([0x88, 0x01]), 0, 4)  # pop r4, pc
    assert row.ra == 15 and _regs(row) == {4: -8, 15: -4}


def test_what_a_row_cannot_say_gives_none() -> None:
    # refuse to unwind; an op after sp's pop; reserved; spare; cut short
    for ops in (b"\x80\x00", b"\x82\x00\x01", b"\x9d", b"\x9f", b"\xb1\x00", b"\xb1\x10", b"\xb4",
                b"\xc7\x00", b"\xca", b"\xd8", b"\xe0", b"\xff",
                b"\x84", b"\xb1", b"\xb2\x80", b"\xb3", b"\xc9"):
        assert _row(ops, 0, 4) is None, ops


class _ArmImage:
    """An ElfImage stand-in: .ARM.exidx at 0x100, .ARM.extab's words at 0x200, code up to
    0x2000."""

    def __init__(self, exidx: list[tuple[int, int]], extab: list[int]) -> None:
        self.e_machine, self.is_64, self.little_endian, self.debug = EM_ARM, False, True, None
        words = []
        for k, (fn, second) in enumerate(exidx):
            words += [(fn - (0x100 + 8 * k)) & 0x7FFFFFFF, second]
        self.exidx = struct.pack(f"<{len(words)}I", *words)
        self.extab = struct.pack(f"<{len(extab)}I", *extab)

    def section(self, name: str):
        return (0x100, memoryview(self.exidx)) if name == ".ARM.exidx" else None

    def read(self, vaddr: int, size: int) -> bytes | None:
        off = vaddr - 0x200
        return self.extab[off:off + size] if 0 <= off <= len(self.extab) - size else None

    def span(self) -> tuple[int, int]:
        return 0, 0x2000


def _to_extab(entry: int, word: int) -> int:
    return (0x200 + 4 * word - (0x100 + 8 * entry + 4)) & 0x7FFFFFFF


def test_index_entries_and_extab_models() -> None:
    """Inline entries, EXIDX_CANTUNWIND, and .ARM.extab entries of the compact model
    (routine 0: three bytes; 1: two and more words) and of the generic one (a routine's
    address, then a count of words and three bytes)."""
    extab = [0x80A8B000,              # 0: routine 0: pop r4, lr; finish
             0x8101A801, 0xB0B0B0B0,  # 1: routine 1, one more word: pop r4, lr; vsp += 8
             0x00000123, 0x01A801B0,  # 3: a routine, then one more word: pop r4, lr; vsp += 8
             0xB0B0B0B0,
             0x83000000]              # 6: routine 3: none this reads
    index = ArmExidx.for_image(_ArmImage(
        [(0x1000, 0x80A8B0B0), (0x1100, 1), (0x1200, _to_extab(2, 0)),
         (0x1300, _to_extab(3, 1)), (0x1400, _to_extab(4, 3)), (0x1500, _to_extab(5, 6)),
         (0x1600, 0x7FFFF000)], extab))  # an .ARM.extab address outside the file
    assert _regs(index.row(0x1010)) == {4: -8, 14: -4}
    assert index.row(0x1110) is None  # EXIDX_CANTUNWIND: no information
    assert _regs(index.row(0x1210)) == {4: -8, 14: -4}
    assert index.row(0x1310).cfa == (CFA_REG, 13, 16) and _regs(index.row(0x1310))[4] == -16
    assert index.row(0x1410).cfa == (CFA_REG, 13, 16) and _regs(index.row(0x1410))[14] == -12
    assert index.row(0x1510) is None and index.row(0x1610) is None
    assert index.row(0xFFF) is None
    # at a function's first instruction nothing has run: the caller is lr, the CFA sp
    entry = index.row(0x1000)
    assert entry.cfa == (CFA_REG, 13, 0) and entry.regs == {} and entry.ra == 14


def test_thumb_functions_start_at_their_even_address() -> None:
    index = ArmExidx.for_image(_ArmImage([(0x1001, 0x80A8B0B0)], []))
    assert index.row(0x1000).regs == {} and _regs(index.row(0x1002)) == {4: -8, 14: -4}


def test_toolchains_present() -> None:
    """The compilers the tests above need (CI installs them)."""
    for tool in ("clang", "ld.lld", "llvm-objdump", "arm-linux-gnueabihf-ld",
                 "arm-linux-gnueabihf-objdump"):
        assert shutil.which(tool), tool
