"""Per-architecture register tables for DWARF unwinding (SEMANTICS §11.3, §11.5).

A `RegTable` maps perf's user-register numbering (the order of `sample_regs_user` bits) to
DWARF register numbers and names the stack pointer, instruction pointer, return-address
column and word size of one architecture/ABI, and what its calls do to them (the walk's
code of its own per architecture is in unwind.arches).
"""

from __future__ import annotations

from ..elf.constants import EM_386, EM_AARCH64, EM_ARM, EM_RISCV, EM_X86_64
from ..tuples import named_tuple


@named_tuple
class RegTable:
    name: str
    dwarf_from_perf: tuple[int, ...]  # DWARF register i <- perf register dwarf_from_perf[i]
    sp_perf: int
    ip_perf: int
    sp_dwarf: int
    ip_dwarf: int
    ra_dwarf: int  # return-address column CIEs of this arch normally use
    word: int  # bytes per stack word
    zero_dwarf: tuple[int, ...] = ()  # DWARF registers preset to 0
    # a call pushes the return address: a caller's CFA is above its callee's stack pointer,
    # unless the frame says otherwise (a signal frame, a return address kept in a register)
    cfa_above_sp: bool = False
    thumb: bool = False  # bit 0 of a return address selects Thumb code, not part of the address


X86 = RegTable("x86", (0, 2, 3, 1, 7, 6, 4, 5, 8), 7, 8, 4, 8, 8, 4, cfa_above_sp=True)
X86_64 = RegTable("x86_64", (0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8),
                  7, 8, 7, 16, 16, 8, cfa_above_sp=True)
ARM = RegTable("arm", tuple(range(16)), 13, 15, 13, 15, 14, 4, thumb=True)
# aarch64: x0-x30, sp, pc, and VG (the SVE vector length in 64-bit granules, perf's 46 where
# the CPU has SVE), which the CFA expressions of frames holding SVE registers read
AARCH64 = RegTable("aarch64", (*range(33), *(-1,) * 13, 46), 31, 32, 31, 32, 30, 8,
                   tuple(range(72, 80)))
# RISC-V (64-bit): perf's register i is x_i but for 0, the pc; DWARF numbers x0-x31 0-31 and
# has none for the pc: it is 65, a number the psABI reserves (no CFI rule names it). x0 is 0.
RISCV64 = RegTable("riscv64", (-1, *range(1, 32), *(-1,) * 33, 0), 2, 0, 2, 65, 1, 8, (0,))


def arch_family(name: str) -> str | None:
    """Architecture family for an `--arch` / perf header arch string, None if unsupported."""
    if name in ("aarch64", "arm64"):
        return "aarch64"
    if name.startswith("riscv"):
        return "riscv"
    if name.startswith("arm"):
        return "arm"
    for prefix in ("powerpc", "s390", "sh", "sparc", "mips"):
        if name.startswith(prefix):
            return prefix
    if name.startswith("x86") or name in ("i386", "i486", "i586", "i686", "i786", "amd64"):
        return "x86"
    return None


def table_for(arch: str, abi: int) -> RegTable | None:
    """Register table for an architecture family (or raw arch name) and perf sample ABI
    (1 = 32-bit, 2 = 64-bit); None where DWARF unwinding is not supported."""
    family = arch_family(arch)
    if family == "x86":
        return X86_64 if abi == 2 else X86 if abi == 1 else None
    if family == "arm":
        return ARM
    if family == "aarch64":
        # a 32-bit (AArch32) process on an arm64 kernel (Raspberry Pi OS's 32-bit userland
        # on its arm64 kernel): its samples' ABI is 32-bit, and the kernel gives a 32-bit
        # consumer its r0-r15 as perf registers 0-15, the pc at 15 (perf_regs.c of arm64)
        return ARM if abi == 1 else AARCH64
    if family == "riscv":
        return RISCV64 if abi == 2 else None
    return None


# (ELF machine, ELFCLASS64) -> the table of its code; x32 (EM_X86_64, ELFCLASS32) has none
_BY_MACHINE = {(EM_X86_64, True): X86_64, (EM_386, False): X86, (EM_ARM, False): ARM,
               (EM_AARCH64, True): AARCH64, (EM_RISCV, True): RISCV64}


def table_for_machine(e_machine: int, is_64: bool) -> RegTable | None:
    """Register table of the code of an ELF image for machine `e_machine` (ELFCLASS64 if
    `is_64`), None where DWARF unwinding knows none."""
    return _BY_MACHINE.get((e_machine, is_64))


def unwinds(arch: str) -> bool:
    """Whether DWARF unwinding knows `arch` (a family or raw name) for some sample ABI."""
    return any(table_for(arch, abi) is not None for abi in (1, 2))
