"""The ARM exception-handling index (.ARM.exidx, .ARM.extab) as CFI rows, for 32-bit Arm code
that has no DWARF CFI.

Arm's EHABI (IHI 0038, "Exception Handling ABI for the Arm Architecture", §6-§10) replaces
.eh_frame on 32-bit Arm: C++ code's tables, those of C code built with `-funwind-tables`
(armhf glibc), and all a stripped armhf program or library has. Each index entry names a
function's start and either "cannot unwind" (no information) or a short program of unwinding
instructions (stack pointer adjustments and pops of saved registers) describing the function
after its prologue, inline or in .ARM.extab. `ArmExidx.row(vaddr)` gives that program as a
Row, the form DWARF CFI takes (elf.cfi): the caller's stack pointer (the CFA) is the stack
pointer (or the register the program moves into it, a frame pointer) plus what the pops and
adjustments move it by, each popped register saved at its offset from there, the return
address in the popped pc or else in lr; a register context popped whole, sp among it, is a
signal frame (`_context_row`). An index entry describes no prologue or epilogue; at a
function's first instruction, though, nothing has run yet: there the caller is lr and the
CFA is sp (AAPCS). Rows are made once per function; malformed entries give no row, never
raise.
"""

from __future__ import annotations

import struct
from bisect import bisect_right

from .cfi import CFA_EXPR, CFA_REG, EXPR, OFFSET, Row

_SP, _LR, _PC = 13, 14, 15
_CANTUNWIND = 1


class ArmExidx:
    """The index of one ELF image's functions and their unwinding instructions."""

    def __init__(self, starts: list[int], entries: list[tuple[int, int]], end: int,
                 word) -> None:
        self._starts = starts  # function start addresses, ascending
        self._entries = entries  # per function: (address of its entry, its second word)
        self._end = end  # end of the last function's range
        self._word = word  # vaddr -> 32-bit word of the image, None where it has none
        self._rows: dict[int, Row | None] = {}  # per function index

    @staticmethod
    def for_image(image) -> ArmExidx | None:
        """The index of `image` (an ELF image of 32-bit Arm code), None if it has none."""
        sec = image.section(".ARM.exidx")
        if sec is None or len(sec[1]) < 8:
            return None
        base, data = sec
        fmt = "<I" if image.little_endian else ">I"
        n = len(data) // 8
        table = struct.unpack_from(f"{fmt[0]}{2 * n}I", data)
        pairs = sorted((_prel31(table[2 * i], base + 8 * i) & ~1, base + 8 * i, table[2 * i + 1])
                       for i in range(n))

        def word(vaddr: int) -> int | None:  # of .ARM.extab, which the index points into
            raw = image.read(vaddr, 4)
            return None if raw is None else struct.unpack(fmt, raw)[0]

        return ArmExidx([p[0] for p in pairs], [(p[1], p[2]) for p in pairs],
                        image.span()[1], word)

    def function_at(self, vaddr: int) -> tuple[int, int] | None:
        """[start, end) of the function whose index entry covers `vaddr`: from its start up to
        the next entry's. None for no entry, or one that says it cannot unwind: linkers put
        those after code without unwinding tables, any number of functions of it. (Linkers
        also fold an entry into the one before it when both say the same: such functions
        share their first one's range.)"""
        i = bisect_right(self._starts, vaddr) - 1
        if i < 0 or self._entries[i][1] == _CANTUNWIND:
            return None
        end = self._end_of(i)
        return (self._starts[i], end) if vaddr < end else None

    def _end_of(self, i: int) -> int:
        """Where function i's range ends: the next entry's start, the last one's at `_end`."""
        return self._starts[i + 1] if i + 1 < len(self._starts) else self._end

    def row(self, vaddr: int) -> Row | None:
        """The row of the function containing `vaddr`, None if the index has no entry for it
        or one this cannot read."""
        i = bisect_right(self._starts, vaddr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        if vaddr == start:  # the prologue has not run: the caller is lr, the CFA sp
            return Row((CFA_REG, _SP, 0), {}, _LR, False, start, start + 1)
        try:
            return self._rows[i]
        except KeyError:
            pass
        # bisect_right took the last of equal starts: only the image's end can be at `start`
        hi = max(self._end_of(i), start + 2)
        entry, second = self._entries[i]
        # EXIDX_CANTUNWIND: no information (linkers put it after code without unwind tables,
        # assembly functions' too), as where no FDE covers an address in DWARF CFI
        ops = None if second == _CANTUNWIND else self._instructions(entry, second)
        row = self._rows[i] = None if ops is None else _row(ops, start + 1, hi)
        return row

    def _instructions(self, entry: int, second: int) -> bytes | None:
        """The unwinding instruction bytes of an index entry whose second word is `second`:
        inline (bit 31 set: personality routine 0, three bytes), or in the .ARM.extab entry
        it points to, of Arm's compact model (routine 0: three bytes; 1 and 2: two bytes and
        as many more words as its bits 16-23 say) or of the generic model with GCC's
        personality routine's data (a count of further words in the top byte, three bytes)."""
        if second & 0x80000000:
            return second.to_bytes(4, "big")[1:] if second >> 24 == 0x80 else None
        at = _prel31(second, entry + 4)
        first = self._word(at)
        if first is None:
            return None
        if first & 0x80000000:
            index = first >> 24 & 0x0F
            if index == 0:
                return first.to_bytes(4, "big")[1:]
            if index not in (1, 2):
                return None
            head, more = first.to_bytes(4, "big")[2:], first >> 16 & 0xFF
        else:  # a personality routine's address, then its data
            at += 4
            data = self._word(at)
            if data is None:
                return None
            head, more = data.to_bytes(4, "big")[1:], data >> 24
        words = [self._word(at + 4 * (k + 1)) for k in range(more)]  # at most 255
        if None in words:
            return None
        return head + b"".join(w.to_bytes(4, "big") for w in words)


def _prel31(word: int, place: int) -> int:
    """The address a 31-bit place-relative offset at `place` points to."""
    off = word & 0x7FFFFFFF
    return (place + (off - 0x80000000 if off & 0x40000000 else off)) & 0xFFFFFFFF


def _row(ops: bytes, lo: int, hi: int) -> Row | None:
    """The Row of unwinding instructions `ops` (EHABI §10.3) for [lo, hi); None where they
    refuse to unwind, say something a Row cannot (the stack pointer taken from a register
    after pops, anything after sp is popped), or are reserved or spare."""
    base, vsp = _SP, 0  # the stack pointer as it unwinds: register `base` plus vsp
    saved: dict[int, int] = {}  # register -> where it was popped, as such a vsp
    sp_at = None  # where sp itself was popped
    i, n = 0, len(ops)

    def pop(mask: int, first: int) -> None:
        nonlocal vsp, sp_at
        for k in range(16 - first):
            if mask >> k & 1:
                if first + k == _SP:
                    sp_at = vsp
                else:
                    saved[first + k] = vsp
                vsp += 4

    while i < n:
        op = ops[i]
        i += 1
        nxt = ops[i] if i < n else None
        if op < 0x40:
            vsp += (op << 2) + 4
        elif op < 0x80:
            vsp -= ((op & 0x3F) << 2) + 4
        elif op < 0x90:
            if nxt is None:
                return None
            i += 1
            mask = (op & 0x0F) << 8 | nxt
            if mask == 0:  # refuse to unwind
                return None
            pop(mask, 4)
            if sp_at is not None:  # a whole register context: nothing may follow it
                return _context_row(base, saved, sp_at, lo, hi) \
                    if ops[i:i + 1] in (b"", b"\xb0") else None
        elif op < 0xA0:
            reg = op & 0x0F
            if reg in (_SP, _PC) or saved:
                return None  # reserved, or pops relative to a stack pointer left behind
            base, vsp = reg, 0
        elif op < 0xB0:
            pop(((1 << ((op & 7) + 1)) - 1) | (1 << 10 if op & 8 else 0), 4)
        elif op == 0xB0:  # finish
            break
        elif op == 0xB1:
            if nxt is None or nxt == 0 or nxt & 0xF0:
                return None
            i += 1
            pop(nxt, 0)
        elif op == 0xB2:  # vsp += 0x204 + (ULEB128 << 2)
            value, shift = 0, 0
            while True:
                if i >= n or shift > 28:
                    return None
                b = ops[i]
                i += 1
                value |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            vsp += 0x204 + (value << 2)
        elif op in (0xB3, 0xC6, 0xC8, 0xC9):  # VFP (0xB3: FSTMFDX's extra word) or iWMMXt
            if nxt is None:
                return None
            i += 1
            vsp += ((nxt & 0x0F) + 1) * 8 + (4 if op == 0xB3 else 0)
        elif 0xB8 <= op <= 0xBF:  # VFP d8-d(8+n), FSTMFDX
            vsp += ((op & 7) + 1) * 8 + 4
        elif 0xC0 <= op <= 0xC5 or 0xD0 <= op <= 0xD7:  # iWMMXt wR10-, VFP d8- (VPUSH)
            vsp += ((op & 7) + 1) * 8
        elif op == 0xC7:  # iWMMXt wCGR registers under a mask
            if nxt is None or nxt == 0 or nxt & 0xF0:
                return None
            i += 1
            vsp += 4 * bin(nxt).count("1")
        else:
            return None  # spare
    ra = _PC if _PC in saved else _LR
    return Row((CFA_REG, base, vsp), {reg: (OFFSET, at - vsp) for reg, at in saved.items()},
               ra, False, lo, hi)


def _context_row(base: int, saved: dict[int, int], sp_at: int, lo: int, hi: int) -> Row:
    """The row of a register context popped whole, sp among it: glibc's signal return
    trampolines (`__default_sa_restorer`, `.save {r0-r15}` over the signal frame's
    sigcontext) describe the interrupted code's registers so. The caller's sp (the CFA) is
    the word saved for it and every other register its word, each at `base` plus its offset
    (DWARF expressions: they lie at the old stack pointer, not the CFA); the frame is a
    signal frame, whose caller's pc is where it was interrupted, not a return address."""

    def at(off: int) -> bytes:  # DW_OP_breg<base> off (SLEB128)
        out = bytearray([0x70 + base])
        while True:
            byte, off = off & 0x7F, off >> 7
            if (off == 0 and not byte & 0x40) or (off == -1 and byte & 0x40):
                return bytes(out + bytes([byte]))
            out.append(byte | 0x80)

    return Row((CFA_EXPR, at(sp_at) + b"\x06", 0),  # DW_OP_deref
               {reg: (EXPR, at(off)) for reg, off in saved.items()},
               _PC if _PC in saved else _LR, True, lo, hi)
