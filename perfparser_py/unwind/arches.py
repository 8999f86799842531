"""The DWARF walk per architecture (SEMANTICS §11.3, §11.5): its constants and choices from
the architecture's register table (unwind.registers: perf's numbering of the sample
registers, the DWARF numbers, word size, what a call does), and the code of its own, a class
per architecture that has some (x86_64, aarch64). CFI itself is decoded for every
architecture alike (elf.cfi)."""

from __future__ import annotations

from . import registers
from .memory import Memory
from .registers import RegTable, table_for

# Bound of the per-architecture cache of register layouts: its keys come from the input.
_MAX_SLOTS = 1024


class Arch:
    """The walk's constants and choices for one architecture/ABI, from its register table
    `t` (its `thumb` and `cfa_above_sp` among them); a subclass per architecture with a
    frame-pointer step where no CFI covers pc (`fallback`). `slots` caches `slots_for`."""

    __slots__ = ("t", "word", "ip", "sp", "zero", "thumb", "cfa_above_sp", "slots")

    def __init__(self, t: RegTable) -> None:
        self.t = t
        self.word = t.word
        self.ip, self.sp = t.ip_dwarf, t.sp_dwarf
        self.zero = t.zero_dwarf
        self.thumb, self.cfa_above_sp = t.thumb, t.cfa_above_sp
        self.slots: dict[tuple[int, int], tuple] = {}

    def slots_for(self, regs_mask: int, nregs: int) -> tuple[tuple, tuple, int, int]:
        """(DWARF registers, the index of each one's value in the packed sample registers,
        index of the stack pointer or -1, index of the instruction pointer or -1) for one
        sample register mask."""
        key = (regs_mask, nregs)
        found = self.slots.get(key)
        if found is None:
            t = self.t
            perf: dict[int, int] = {}
            i = bit = 0
            m = regs_mask
            while m and i < nregs:
                if m & 1:
                    perf[bit] = i
                    i += 1
                m >>= 1
                bit += 1
            pairs = [(d, perf[p]) for d, p in enumerate(t.dwarf_from_perf) if p in perf]
            found = (tuple([d for d, _i in pairs]), tuple([i for _d, i in pairs]),
                     perf.get(t.sp_perf, -1), perf.get(t.ip_perf, -1))
            if len(self.slots) >= _MAX_SLOTS:
                self.slots.clear()
            self.slots[key] = found
        return found

    def fallback(self, mem: Memory, regs: dict[int, int]) -> dict[int, int] | None:
        """The caller's registers where no CFI covers pc, from the frame's `regs` and words
        read from `mem`; None: the walk ends there."""
        return None


class X86_64(Arch):
    """x86_64: elfutils' frame-pointer step without CFI."""

    __slots__ = ()

    def fallback(self, mem: Memory, regs: dict[int, int]) -> dict[int, int] | None:
        """%rbp (6) chains the frames: the caller's %rbp at [%rbp], its return address
        above, its stack pointer (7) past both."""
        fp = regs.get(6)
        if not fp:
            return None
        sp = regs.get(7) or 0
        ret = mem.read_word(fp + 8)
        if ret is None:
            return None
        prev = mem.read_word(fp)
        new_sp = fp + 16
        if new_sp <= sp:
            return None
        return {6: prev or 0, 7: new_sp, 16: ret}


class AArch64(Arch):
    """aarch64: elfutils' frame-pointer step without CFI."""

    __slots__ = ()

    def fallback(self, mem: Memory, regs: dict[int, int]) -> dict[int, int] | None:
        """The leaf returns to the link register (30); x29 chains the frames: the caller's
        x29 and link register at [x29], its stack pointer (31) past both."""
        lr = regs.get(30)
        fp = regs.get(29) or 0
        sp = regs.get(31) or 0
        new_lr = mem.read_word(fp + 8) or 0
        new_fp = mem.read_word(fp) or 0
        new_sp = fp + 16
        if not lr or (fp != 0 and new_sp <= sp):
            return None
        return {29: new_fp, 30: new_lr, 31: new_sp, 32: lr}


# the architectures with code of their own; the others are an Arch of their table
_CLASSES = {registers.X86_64: X86_64, registers.AARCH64: AArch64}


def arch_for(arch: str, abi: int) -> Arch | None:
    """The walk's Arch for an architecture (family or raw name) and perf sample ABI; None
    where DWARF unwinding is not supported."""
    t = table_for(arch, abi)
    return None if t is None else _CLASSES.get(t, Arch)(t)
