"""Names for addresses no ELF symbol covers (SEMANTICS §10.8): `name@plt` for a PLT entry, by
the GOT slot its jump reads or by its index, else `<.section+hex>`."""

from __future__ import annotations

import struct
from bisect import bisect_right

from ..demangle import demangle
from ..tuples import named_tuple
from .constants import (
    DT_NULL,
    DT_PLTGOT,
    EM_386,
    EM_AARCH64,
    EM_ARM,
    EM_RISCV,
    EM_X86_64,
    R_386_IRELATIVE,
    R_AARCH64_IRELATIVE,
    R_ARM_IRELATIVE,
    R_X86_64_IRELATIVE,
    SHT_DYNSYM,
    SHT_NOBITS,
    SHT_REL,
    SHT_RELA,
)

# the x86 sections of PLT entries (x86-64, x32, i386), each a jump through a GOT slot
_X86_PLTS = frozenset({".plt", ".iplt", ".plt.sec", ".plt.got"})
# the relocation filling a GOT slot from an IFUNC resolver's answer, per machine; its
# resolver is a RELA relocation's addend, or (REL: i386, Arm) the slot's content in the file
_IRELATIVE = {EM_X86_64: R_X86_64_IRELATIVE, EM_AARCH64: R_AARCH64_IRELATIVE,
              EM_386: R_386_IRELATIVE, EM_ARM: R_ARM_IRELATIVE}
# aarch64 instructions of a PLT entry: `bti c`, and the masks and values of `adrp x16, page`
# and `ldr x17, [x16, #off]` (64-bit, unsigned offset)
_BTI_C = 0xD503245F
_STP_X16_X30 = 0xA9BF7BF0  # stp x16, x30, [sp, #-16]!: the lazy header's first store
_ADRP_X16 = (0x9F00001F, 0x90000010)
_LDR_X17_X16 = (0xFFC003FF, 0xF9400211)
# 32-bit Arm PLT instructions (ARM state; the masks leave their immediates out): `add ip, pc,
# #imm` and `add ip, ip, #imm` find the GOT slot `ldr pc, [ip, #off]!` loads (GNU ld's 12- and
# 16-byte entries, lld's); lld's long entries load an offset instead, `ldr ip, [pc, #4]; add
# ip, ip, pc; ldr pc, [ip]`; the lazy header first stores lr, `str lr, [sp, #-4]!`
_ARM_ADD_IP_PC, _ARM_ADD_IP_IP, _ARM_IMM12 = 0xE28FC000, 0xE28CC000, 0xFFFFF000
_ARM_LDR_PC_IP_UP, _ARM_LDR_PC_IP_DOWN = 0xE5BCF000, 0xE53CF000
_ARM_LONG = (0xE59FC004, 0xE08CC00F, 0xE59CF000)
_ARM_STR_LR = 0xE52DE004
# a PLT section decoded at most: a real one holds a few thousand entries (~100 KiB)
_MAX_PLT_BYTES = 1 << 24


class FallbackNames:
    """ElfImage's `fallback_name`: mixed into it, it reads the image's sections, dynamic symbol
    table, relocations and code, and keeps the PLT map in `_plt` (built on first use)."""

    def fallback_name(self, vaddr: int) -> str | None:
        """Name for an address without ELF symbol: `name@plt` or `<.section+hex>` (§10.8)."""
        sec = self._section_containing(vaddr)
        if sec is None or sec.name == ".text":
            return None
        name = None
        decode = self._plt_decoder()
        if self.e_machine in (EM_X86_64, EM_386) and sec.name in _X86_PLTS:
            header, _, size, _ = self._x86_plt_shape(sec)
            off = vaddr - sec.addr
            if off >= header:  # the lazy header's jump reads the resolver's reserved slot
                name = self._jump_slot_name(vaddr - (off - header) % size, size)
        elif decode is not None and sec.name in (".plt", ".iplt"):
            name = self._decoded_plt_name(vaddr, sec)
        # by index where entries are not found one by one (IBT: no jump to a slot)
        if name is None and sec.entsize > 0 and sec.name == ".plt" and decode is None:
            slot = (vaddr - sec.addr) // sec.entsize
            if slot > 0:
                name = self._plt_name(slot)
        if name is not None:
            return name
        return f"<{sec.name}+{vaddr:x}>"

    def unnamed_function(self, vaddr: int) -> tuple[str, int, int] | None:
        """(name, start, size) of the function around `vaddr` where no ELF symbol covers it
        and fallback_name() gives no name (the .text of a stripped program, which keeps only
        its dynamic symbols): the code the unwind table's FDE covering it describes (32-bit
        Arm's: its index entry), named `<section+start>` after its start's ELF address, as
        fallback_name() names an address. Its frames then group by function, not all under
        one nameless symbol of the binary. None where no entry covers `vaddr`."""
        if self._fde_functions is None:
            # imports here: only such programs need them
            from .cfi import Cfi
            from .exidx import ArmExidx

            exidx = ArmExidx.for_image(self) if self.e_machine == EM_ARM else None
            self._fde_functions = Cfi.for_image(self, exidx=exidx) or False
        if self._fde_functions is False:
            return None
        found = self._fde_functions.function_at(vaddr)
        if found is None:
            return None
        start, end = found
        sec = self._section_containing(start)
        if sec is None:
            return None
        # within its section (Arm's last index entry runs on to the image's end) and between
        # the functions symbols name (an index entry GNU ld folded into an exported
        # function's takes in the functions after it)
        start, end = self._between_symbols(vaddr, start, min(end, sec.addr + sec.size))
        if not start <= vaddr < end:
            return None
        return f"<{sec.name}+{start:x}>", start, end - start

    def _between_symbols(self, vaddr: int, start: int, end: int) -> tuple[int, int]:
        """[start, end) narrowed to what no sized symbol covers around `vaddr` (which none
        covers): from the end of the last one below it, up to the start of the next."""
        values, sizes, _, _ = self._syms or self.load_symbols()
        i = bisect_right(values, vaddr)
        j = i
        while j < len(values) and values[j] < end:
            if sizes[j]:
                end = values[j]
                break
            j += 1
        j = i - 1
        while j >= 0 and values[j] + sizes[j] > start:
            if sizes[j]:
                start = values[j] + sizes[j]
                break
            j -= 1
        return start, end

    def plt_layouts(self) -> list[tuple[int, int, int, tuple, int, tuple]]:
        """What unwinding needs of the PLT sections, for where no CFI describes them (lld
        emits none for its PLTs, GNU ld none on aarch64 and Arm): per section (start, end,
        header size, header steps, entry size, entry steps), a step being (offset in the
        header or an entry; from there on, bytes from the stack pointer up to the caller's
        stack pointer, and where the return address is: that many bytes from the caller's
        stack pointer, 0 for its register). x86's lazy entry is `jmp *slot; push $index; jmp
        header` (IBT: `endbr64; push $index; bnd jmp header`) in both linkers, its header
        `push GOT+8; jmp *GOT+16`, a call having pushed the return address; `.plt.sec`,
        `.plt.got` and 8-byte entries push nothing; mold's and lld's retpoline PLTs are
        other kinds (_X86_PLT_HEADERS, _X86_PLT_ENTRIES). aarch64's entries leave the stack alone
        (the return address stays in x30), its header pushes x16 and x30 first (`stp x16,
        x30, [sp, #-16]!`); 32-bit Arm's too (lr), its header stores lr first (`str lr,
        [sp, #-4]!`) and then loads it; RISC-V's PLT never touches the stack or ra (`auipc;
        ld; jalr t1`)."""
        if self.e_machine in (EM_X86_64, EM_386):
            return self._x86_plt_layouts()
        if self._plt_decoder() is not None:  # aarch64, Arm
            return self._link_register_plt_layouts()
        if self.e_machine == EM_RISCV:  # header and entries leave the stack and ra alone
            return [(sec.addr, sec.addr + sec.size, 0, (), 16, ((0, 0, 0),))
                    for sec in self._sections if sec.name == ".plt" and sec.size]
        return []

    def _x86_plt_layouts(self) -> list[tuple[int, int, int, tuple, int, tuple]]:
        word = 8 if self.is_64 else 4

        def in_bytes(steps: tuple) -> tuple:
            # where a call pushed the return address: below the caller's stack pointer
            return tuple((at, n * word, -word) for at, n in steps)

        out = []
        for sec in self._sections:
            if sec.name in _X86_PLTS and sec.size:
                header, header_steps, size, steps = self._x86_plt_shape(sec)
                out.append((sec.addr, sec.addr + sec.size, header, in_bytes(header_steps), size,
                            in_bytes(steps)))
        return out

    def _x86_plt_shape(self, sec) -> tuple[int, tuple, int, tuple]:
        """(header size, header steps, entry size, entry steps; steps in words) of an x86
        PLT section: the header and entry kinds of _X86_PLT_HEADERS and _X86_PLT_ENTRIES;
        an entry of another kind pushes nothing."""
        # GNU ld gives i386's .plt an entry size of 4, not its entries'
        size = sec.entsize if sec.entsize >= 8 else self._x86_plt_entry_size(sec)
        code = self.read(sec.addr, min(sec.size, max(2 * size, 64))) or b""
        header, header_steps = next(((h.size, h.steps) for h in _X86_PLT_HEADERS
                                     if _starts_with(code, h.parts)), (0, ()))
        entry = _x86_plt_entry(code[header:], self.e_machine == EM_X86_64)
        return (header, header_steps, *((entry.size, entry.steps) if entry is not None
                                        else (size, ((0, 1),))))

    def _link_register_plt_layouts(self) -> list[tuple[int, int, int, tuple, int, tuple]]:
        """aarch64's and 32-bit Arm's: a lazy header stores the link register (aarch64: with
        x16, `stp x16, x30, [sp, #-16]!` after a `bti c` or not, 32 bytes; Arm: `str lr, [sp,
        #-4]!`, up to the first entry: GNU ld's 20 bytes, lld's 32) and Arm's then reloads
        it; the entries leave both alone."""
        aarch64 = self.e_machine == EM_AARCH64
        out = []
        for name in (".plt", ".iplt"):
            sec = self._by_name.get(name)
            if sec is None or not sec.size:
                continue
            code = self.read(sec.addr, 8) or b""
            if aarch64:
                stp = code.find(struct.pack(self._e + "I", _STP_X16_X30))
                header = 32 if stp in (0, 4) else 0
                steps = ((0, 0, 0), (stp + 4, 16, 0))
            else:
                starts = self._plt_entries_of(sec)[0]
                lazy = code[:4] == struct.pack(self._e + "I", _ARM_STR_LR)
                header = starts[0] - sec.addr if lazy and starts else 0
                steps = ((0, 0, 0), (4, 4, -4))  # lr below the caller's sp once stored
            out.append((sec.addr, sec.addr + sec.size, header, steps, 16 if aarch64 else 4,
                        ((0, 0, 0),)))
        return out

    def _x86_plt_entry_size(self, sec) -> int:
        """Entry size of an x86 PLT whose header gives none (lld's `.plt` and `.iplt`, GNU
        ld's `.plt` of a static executable, i386's `.plt`): 16, the lazy entry of both
        linkers, unless the section starts with two `jmp *slot` 8 bytes apart, GNU ld's
        8-byte entries (`jmp *slot(%rip); xchg %ax,%ax`) of IFUNC slots in a static
        executable."""
        code = self.read(sec.addr, 10)
        if code is not None and code[:2] == code[8:10] == b"\xff\x25":
            return 8
        return 16

    def _jump_slot_name(self, entry: int, size: int) -> str | None:
        """`name@plt` for an x86 PLT entry (`.plt`, `.iplt`; `.plt.sec` with IBT:
        `endbr64; bnd jmp *slot(%rip)`; `.plt.got`) by the GOT slot its jump reads, as
        objdump labels it and perf ≥ 6.3 names it; none for a lazy PLT's header, whose jump
        reads the resolver's reserved slot. Upstream names `.plt` entries by their index
        (SEMANTICS §10.8), not the others; perf 6.1 names those after the sizeless `_init`
        before them. x86-64's (and x32's) jump is `jmp *disp32(%rip)`; i386's is
        `jmp *disp32(%ebx)` in position-independent code, %ebx holding DT_PLTGOT (the psABI's
        `_GLOBAL_OFFSET_TABLE_`), else `jmp *abs32`; lld's retpoline entries load the slot
        so instead (_X86_PLT_ENTRIES)."""
        code = self.read(entry, size)
        if code is None:
            return None
        kind = _x86_plt_entry(code, self.e_machine == EM_X86_64)
        if kind is not None and kind.slot is not None:
            at, base = kind.slot
        elif self.e_machine == EM_386 and b"\xff\xa3" in code:  # jmp *disp32(%ebx)
            at, base = code.find(b"\xff\xa3") + 2, _GOT
        else:  # jmp *disp32(%rip) / jmp *abs32
            at = code.find(b"\xff\x25") + 2
            base = _ABSOLUTE if self.e_machine == EM_386 else _RIP
        if at < 2 or at + 4 > len(code):
            return None
        operand = struct.unpack_from("<I" if base == _ABSOLUTE else "<i", code, at)[0]
        if base == _RIP:
            return self._plt_name_at(entry + at + 4 + operand)
        if base == _ABSOLUTE:
            return self._plt_name_at(operand)
        got = self._plt_table()[0]
        return None if not got else self._plt_name_at((got + operand) & 0xFFFFFFFF)

    def _decoded_plt_name(self, vaddr: int, sec) -> str | None:
        """`name@plt` for an aarch64 or 32-bit Arm PLT entry by the GOT slot it loads, as
        objdump labels it. aarch64's entry is `adrp x16, page; ldr x17, [x16, #off]`: 16
        bytes, 24 or more with `bti c` before it or pointer authentication (`-z force-bti`,
        `-z pac-plt`), and neither linker gives `.plt` an entry size: an entry is found by
        its load, from its `bti c` if it has one up to the next entry. Arm's (ARM state) adds
        to pc in ip and loads pc from there: GNU ld's 12-byte entries (16 with `--long-plt`;
        its `.plt` says 4 bytes an entry) and lld's 16-byte ones. A lazy header loads the
        resolver's reserved slot: no name."""
        starts, slots = self._plt_entries_of(sec)
        i = bisect_right(starts, vaddr) - 1
        return None if i < 0 else self._plt_name_at(slots[i])

    def _plt_entries_of(self, sec) -> tuple[list[int], list[int]]:
        """(entry starts, the GOT slot each loads) of an aarch64 or Arm PLT section."""
        entries = self._plt_entries.get(sec.name)
        if entries is not None:
            return entries
        decode = self._plt_decoder()
        code = (self.read(sec.addr, sec.size) if decode and sec.size <= _MAX_PLT_BYTES
                else None) or b""
        insns = struct.unpack(self._e + f"{len(code) // 4}I", code[:len(code) & ~3])
        entries = self._plt_entries[sec.name] = decode(sec.addr, insns) if decode else ([], [])
        return entries

    def _plt_decoder(self):
        """The function finding this image's PLT entries one by one by the slot each loads
        (`_aarch64_plt_entries`, `_arm_plt_entries`), None for a machine whose entries are
        found otherwise (x86: by their jump; the rest: by index)."""
        if self.e_machine == EM_ARM:
            return _arm_plt_entries
        return _aarch64_plt_entries if self.e_machine == EM_AARCH64 and self.is_64 else None

    def _plt_table(self) -> tuple[int, dict[int, str | tuple[int, int] | int], bytes]:
        """_build_plt's, built on first use."""
        if self._plt is None:
            self._plt = self._build_plt()
        return self._plt

    def _plt_name(self, slot: int) -> str | None:
        got = self._plt_table()[0]
        if not got:  # no DT_PLTGOT
            return None
        return self._plt_name_at(got + (slot + 2) * (8 if self.is_64 else 4))

    def _plt_name_at(self, slot_addr: int) -> str | None:
        """`name@plt` of the dynamic symbol whose relocation fills GOT slot `slot_addr`, or of
        the symbol at the IFUNC resolver an IRELATIVE one fills it from."""
        _got_addr, names, strs = self._plt_table()
        name = names.get(slot_addr)
        if type(name) is tuple:  # demangled on first use: a file has thousands, few are hit
            start, end = name
            name = names[slot_addr] = (
                demangle(strs[start:end].decode("utf-8", "surrogateescape")) + "@plt")
        elif type(name) is int:  # an IFUNC's slot: its resolver's symbol names it, without
            # the version a .symtab name can carry (glibc's `memcpy@@GLIBC_2.14`), as the
            # .dynsym names of the other slots are
            hit = self.symbol_at(name)
            name = names[slot_addr] = (hit[0].partition("@")[0] + "@plt"
                                       if hit and hit[1] == name else None)
        return name

    def _build_plt(self) -> tuple[int, dict[int, str | tuple[int, int] | int], bytes]:
        """(address of the GOT section holding DT_PLTGOT or 0, GOT slot address -> `name@plt`,
        the (start, end) of its mangled name in the dynamic string table, or the IFUNC
        resolver address an IRELATIVE relocation fills it from; that string table).
        IRELATIVE slots are what a static executable's PLT jumps through (its relocations
        are linked to no symbol table) and libc's own calls of its IFUNCs (`memcpy`)."""
        out: dict[int, str | tuple[int, int] | int] = {}
        fmt = self._e + ("qQ" if self.is_64 else "iI")
        step = struct.calcsize(fmt)
        dyn = self._by_name.get(".dynamic")
        raw = b"" if dyn is None or dyn.type == SHT_NOBITS else self._raw_section(dyn)
        pltgot = None
        for off in range(0, len(raw) - step + 1, step):
            tag, val = struct.unpack_from(fmt, raw, off)
            if tag == DT_NULL:
                break
            if tag == DT_PLTGOT:
                pltgot = val
        got = None if pltgot is None else self._section_containing(pltgot)
        syms, strs = self._table(SHT_DYNSYM) or (b"", b"")
        sym_size = struct.calcsize(self._e + ("IBBHQQ" if self.is_64 else "IIIBBH"))
        name_at = struct.Struct(self._e + "I").unpack_from  # st_name leads both layouts
        strs_b = bytes(strs)
        type_mask = 0xFFFFFFFF if self.is_64 else 0xFF
        for s in self._sections:
            if s.type not in (SHT_REL, SHT_RELA):
                continue
            linked = (syms and 0 < s.link < len(self._sections)
                      and self._sections[s.link].type == SHT_DYNSYM)
            irelative = _IRELATIVE.get(self.e_machine)
            ifuncs = irelative is not None
            if not (linked or ifuncs):
                continue
            if self.is_64:
                rfmt = self._e + ("QQq" if s.type == SHT_RELA else "QQ")
            else:
                rfmt = self._e + ("IIi" if s.type == SHT_RELA else "II")
            rsize = struct.calcsize(rfmt)
            rraw = self._raw_section(s)
            for rel in struct.iter_unpack(rfmt, rraw[:len(rraw) - len(rraw) % rsize]):
                r_offset, r_info = rel[0], rel[1]
                if r_offset in out:
                    continue
                if ifuncs and r_info & type_mask == irelative:
                    if s.type == SHT_RELA:
                        out[r_offset] = rel[2]
                    else:
                        slot = self.read(r_offset, 8 if self.is_64 else 4)
                        if slot is not None:
                            out[r_offset] = int.from_bytes(slot, "big" if self._e == ">"
                                                           else "little")
                    continue
                symi = r_info >> 32 if self.is_64 else r_info >> 8
                if not linked or symi == 0 or (symi + 1) * sym_size > len(syms):
                    continue
                name_off = name_at(syms, symi * sym_size)[0]
                end = strs_b.find(b"\0", name_off)
                if end > name_off:
                    out[r_offset] = (name_off, end)
        return (0 if got is None else got.addr, out, strs_b)


@named_tuple
class _Header:
    parts: tuple  # its first bytes, None for any 4-byte operand
    size: int
    steps: tuple  # (offset, words pushed on the caller's stack pointer from there on)


@named_tuple
class _Entry:
    x86_64: bool  # of x86-64 (and x32), else of i386
    parts: tuple
    size: int
    steps: tuple
    slot: tuple | None  # (where the 4-byte operand naming its GOT slot is, relative to what)


_RIP, _GOT, _ABSOLUTE = range(3)  # the next instruction, the GOT %ebx holds, nothing

# Lazy x86 PLT headers, tried in order. GNU ld's and lld's `push GOT+8; jmp *GOT+16` run
# after an entry's `push $index`; mold's entries pass the index in a register (%r11, %ecx)
# that the header pushes first. lld's retpoline PLTs (`-z retpolineplt`) jump through no
# slot, so that no indirect branch is predicted: an entry loads its GOT slot into a
# register and calls (x86-64 with -z now: jumps to) a thunk in the header that puts it
# over the return address and returns there (lld's X86_64.cpp, X86.cpp): the thunk is one
# word deeper than the entry (two on i386, which saves %eax first); the lazy header's own
# call leads only to a speculation trap (`pause; lfence; jmp`) that never retires.
_X86_PLT_HEADERS = (
    # lld retpoline, x86-64: push GOT+8(%rip); mov GOT+16(%rip), %r11; call thunk
    _Header((b"\xff\x35", None, b"\x4c\x8b\x1d"), 48, ((0, 2), (6, 3), (0x12, 4), (0x20, 2))),
    # lld retpoline, x86-64, -z now: call thunk
    _Header((b"\xe8\x0b\x00\x00\x00\xf3\x90",), 32, ((0, 1), (5, 2))),
    # lld retpoline, i386, position-independent: push 4(%ebx); push %eax; mov 8(%ebx),
    # %eax; call thunk; the thunk restores %eax and %ecx (pop) before its return
    _Header((b"\xff\xb3", None, b"\x50\x8b\x83"), 48,
            ((0, 2), (6, 3), (7, 4), (0x12, 5), (0x20, 3), (0x2e, 2))),
    # lld retpoline, i386: push GOT+4; push %eax; mov GOT+8, %eax; call thunk
    _Header((b"\xff\x35", None, b"\x50\xa1"), 48,
            ((0, 2), (6, 3), (7, 4), (0x11, 5), (0x20, 3), (0x2e, 2))),
    # GNU ld, lld: push GOT+8(%rip) / GOT+4 / 4(%ebx); jmp *GOT+16 / ...
    _Header((b"\xff\x35",), 16, ((0, 2), (6, 3))),
    _Header((b"\xff\xb3",), 16, ((0, 2), (6, 3))),
    # mold, x86-64: endbr64; push %r11; push GOT+8(%rip); jmp *GOT+16(%rip)
    _Header((b"\xf3\x0f\x1e\xfa\x41\x53\xff\x35",), 32, ((0, 1), (6, 2), (0xC, 3))),
    # mold, i386: endbr32; push %ecx; lea GOT(%ebx), %ecx / mov $GOT, %ecx; push (%ecx);
    # jmp *4(%ecx)
    _Header((b"\xf3\x0f\x1e\xfb\x51\x8d\x8b", None, b"\xff\x31"), 16,
            ((0, 1), (5, 2), (0xD, 3))),
    _Header((b"\xf3\x0f\x1e\xfb\x51\xb9", None, b"\xff\x31"), 16, ((0, 1), (5, 2), (0xC, 3))),
)
# x86 PLT entries that push (an entry of another kind pushes nothing), tried in order. GNU
# ld's and lld's lazy entries push the index once their jump through the slot has not been
# taken (the slot first holds the address of the `push`), IBT's (`-z ibtplt`) at once,
# before jumping to the header (their `.plt.sec` entry holds the jump through the slot).
# lld's retpoline ones load their slot; a lazy one's slot first holds the address of its
# `push $index`, which then jumps to the header.
_X86_PLT_ENTRIES = (
    # jmp *slot(%rip) / *slot(%ebx) / *slot; push $index; jmp header
    _Entry(True, (b"\xff\x25", None, b"\x68"), 16, ((0, 1), (11, 2)), (2, _RIP)),
    _Entry(False, (b"\xff\xa3", None, b"\x68"), 16, ((0, 1), (11, 2)), (2, _GOT)),
    _Entry(False, (b"\xff\x25", None, b"\x68"), 16, ((0, 1), (11, 2)), (2, _ABSOLUTE)),
    # endbr64 / endbr32; push $index; bnd jmp header
    _Entry(True, (b"\xf3\x0f\x1e\xfa\x68",), 16, ((0, 1), (9, 2)), None),
    _Entry(False, (b"\xf3\x0f\x1e\xfb\x68",), 16, ((0, 1), (9, 2)), None),
    # lld retpoline: mov slot(%rip), %r11; call thunk / jmp header (-z now)
    _Entry(True, (b"\x4c\x8b\x1d", None, b"\xe8"), 32, ((0, 1), (0x16, 2)), (3, _RIP)),
    _Entry(True, (b"\x4c\x8b\x1d", None, b"\xe9"), 16, ((0, 1),), (3, _RIP)),
    # lld retpoline, i386: push %eax; mov slot(%ebx), %eax / mov slot, %eax; call thunk
    _Entry(False, (b"\x50\x8b\x83",), 32, ((0, 1), (1, 2), (0x11, 1), (0x16, 2)), (3, _GOT)),
    _Entry(False, (b"\x50\xa1",), 32, ((0, 1), (1, 2), (0x10, 1), (0x15, 2)), (2, _ABSOLUTE)),
)


def _starts_with(code: bytes, parts: tuple) -> bool:
    """Whether `code` starts with `parts` (bytes, None for any 4-byte operand)."""
    at = 0
    for part in parts:
        if part is None:
            at += 4
        elif code[at:at + len(part)] != part:
            return False
        else:
            at += len(part)
    return at <= len(code)


def _x86_plt_entry(code: bytes, x86_64: bool) -> _Entry | None:
    """The _X86_PLT_ENTRIES kind of the entry `code` starts, None for another."""
    return next((e for e in _X86_PLT_ENTRIES if e.x86_64 == x86_64
                 and _starts_with(code, e.parts)), None)


def _aarch64_plt_entries(addr: int, insns: tuple) -> tuple[list[int], list[int]]:
    """(entry starts, the GOT slot each loads) of the aarch64 PLT at `addr`."""
    starts: list[int] = []
    slots: list[int] = []
    for i in range(len(insns) - 1):
        adrp, ldr = insns[i], insns[i + 1]
        if adrp & _ADRP_X16[0] != _ADRP_X16[1] or ldr & _LDR_X17_X16[0] != _LDR_X17_X16[1]:
            continue
        pc = addr + 4 * i
        page = ((adrp >> 5) & 0x7FFFF) << 2 | (adrp >> 29) & 3
        page -= (page & 1 << 20) << 1  # a signed 21-bit count of 4 KiB pages
        starts.append(pc - 4 if i and insns[i - 1] == _BTI_C else pc)
        slots.append(((pc & ~0xFFF) + (page << 12) + ((ldr >> 10) & 0xFFF) * 8)
                     & 0xFFFFFFFFFFFFFFFF)
    return starts, slots


def _arm_plt_entries(addr: int, insns: tuple) -> tuple[list[int], list[int]]:
    """(entry starts, the GOT slot each loads) of the 32-bit Arm PLT at `addr`: at each
    `ldr pc, [ip, #off]!`, the `add ip, pc, #imm` and `add ip, ip, #imm` before it (pc reads
    as its instruction's address + 8); at each of lld's long entries, the offset it loads."""
    starts: list[int] = []
    slots: list[int] = []
    for i, insn in enumerate(insns):
        if insns[i:i + 3] == _ARM_LONG and i + 3 < len(insns):
            starts.append(addr + 4 * i)
            slots.append((addr + 4 * i + 12 + insns[i + 3]) & 0xFFFFFFFF)
            continue
        masked = insn & _ARM_IMM12
        if masked not in (_ARM_LDR_PC_IP_UP, _ARM_LDR_PC_IP_DOWN):
            continue
        slot = insn & 0xFFF if masked == _ARM_LDR_PC_IP_UP else -(insn & 0xFFF)
        k = i - 1
        while k >= 0 and insns[k] & _ARM_IMM12 == _ARM_ADD_IP_IP:
            slot += _arm_immediate(insns[k])
            k -= 1
        if k < 0 or insns[k] & _ARM_IMM12 != _ARM_ADD_IP_PC:
            continue
        starts.append(addr + 4 * k)
        slots.append((addr + 4 * k + 8 + _arm_immediate(insns[k]) + slot) & 0xFFFFFFFF)
    return starts, slots


def _arm_immediate(insn: int) -> int:
    """The value of an ARM data-processing instruction's immediate: 8 bits rotated right by
    twice its 4-bit rotation."""
    rot, imm = (insn >> 8 & 0xF) * 2, insn & 0xFF
    return (imm >> rot | imm << (32 - rot)) & 0xFFFFFFFF
