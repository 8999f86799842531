"""Call frame information (.eh_frame_hdr, .eh_frame, .debug_frame; 32-bit Arm's .ARM.exidx,
elf.exidx, where they have no row), decoded lazily per row.

`Cfi.for_image(image)` indexes the unwind tables of one ELF image; `Cfi.row(vaddr)` gives the
rule row (CFA rule + register rules) valid at an ELF virtual address. Only the program of the
FDE covering an asked-for address runs, and only up to the row covering it; the CIEs' initial
rules and each FDE's rows are kept. Addresses are not: the walk keeps its steps per process
and address (unwind.process.Steps), and a second copy here held ~6 MB of a 100k-sample g++
recording's unwinding process for no speed. Malformed tables never raise: the affected
address simply has no row.
"""

from __future__ import annotations

import struct
from bisect import bisect_right

from .constants import EM_AARCH64
from .leb128 import sleb, uint_at, uleb

# Register rule kinds: Row.regs maps DWARF register -> (kind, argument).
UNDEF, SAME, OFFSET, VAL_OFFSET, REGISTER, EXPR, VAL_EXPR = range(7)
# AArch64's RA_SIGN_STATE pseudo-register (AADWARF64 §4.1): present in Row.regs as (SIGNED, 0)
# where the return address is signed (pointer authentication, pac-ret), absent where not
RA_SIGN_STATE = 34
SIGNED = 7
# CFA rule kinds: Row.cfa is (CFA_REG, register, offset) or (CFA_EXPR, expression bytes, 0).
CFA_REG, CFA_EXPR = 0, 1

# DW_EH_PE value formats of a fixed size: their sizes (0x08 set: signed); absptr and the
# LEB128s aside
_FIXED_ENCODINGS = {0x02: 2, 0x03: 4, 0x04: 8,  # udata2/4/8
                    0x0A: 2, 0x0B: 4, 0x0C: 8}  # sdata2/4/8

# Rows repeat their rules: cc1plus's 16 k rows found hold ~80 k, and the steps compiled from
# them (unwind.rules) ~100 k, of a few hundred distinct ones. Both hold one tuple (the steps
# also bytes) for each distinct rule (`shared`), up to _MAX_SHARED of them: hostile CFI may
# make every one distinct.
_SHARED: dict[tuple | bytes, tuple | bytes] = {}
_MAX_SHARED = 1 << 14

# Bounds against hostile input.
_MAX_STATE_STACK = 64
_MAX_ROWS = 100_000  # advances of one program
_MASK64 = 0xFFFFFFFFFFFFFFFF


class CfiError(Exception):
    """Internal: malformed CFI (never leaves this module)."""


class Row:
    """The unwind rules valid for the addresses [lo, hi) of one FDE."""

    __slots__ = ("cfa", "regs", "ra", "signal", "lo", "hi", "compiled")

    def __init__(self, cfa: tuple, regs: dict[int, tuple], ra: int, signal: bool,
                 lo: int, hi: int) -> None:
        self.cfa = cfa
        self.regs = regs
        self.ra = ra
        self.signal = signal
        self.lo = lo
        self.hi = hi
        # the unwinder's form of the row (unwind.rules.compile_step), made once: a real
        # program's samples hit several addresses of a row (cc1plus: 5 per row)
        self.compiled: tuple | None = None

    def __repr__(self) -> str:
        return (f"Row({self.lo:#x}-{self.hi:#x} cfa={self.cfa} regs={self.regs} "
                f"ra={self.ra} signal={self.signal})")


class _Cie:
    __slots__ = ("code_align", "data_align", "ra", "fde_enc", "signal", "aug_z",
                 "init", "addr_size", "seg_size", "initial")

    def __init__(self) -> None:
        self.initial: tuple | None = None  # (cfa, regs) after the initial instructions


class _Frames:
    """One .eh_frame or .debug_frame section."""

    def __init__(self, vaddr: int, data: memoryview, is_eh: bool, little: bool,
                 addr_size: int, aarch64: bool = False) -> None:
        self.vaddr = vaddr
        self.aarch64 = aarch64  # opcodes 0x2c and 0x2d are AArch64's (AADWARF64 §4.4)
        self.data = data
        self.buf = data  # a C array when compiled
        self.is_eh = is_eh
        self.little = little
        self.addr_size = addr_size
        self.mask = (1 << (8 * addr_size)) - 1
        self.cies: dict[int, _Cie] = {}
        self.fdes: dict[int, tuple] = {}  # the FDEs asked for, by offset
        # their rows found so far: (row starts, Rows, _run's state after each row or None),
        # sorted; the rows of one FDE never overlap (its locations only grow)
        self.rows: dict[int, tuple[list[int], list[Row], list[tuple | None]]] = {}
        self.starts: list[int] | None = None  # sorted FDE pc_begin, built on demand
        self.ends: list[int] = []
        self.offsets: list[int] = []

    # ----------------------------------------------------------- primitives

    def _uint(self, pos: int, size: int) -> int:
        """The unsigned number of `size` bytes at `pos`."""
        if pos < 0 or pos + size > len(self.buf):
            raise CfiError("truncated")
        return uint_at(self.buf, pos, size, self.little)

    def read_enc(self, pos: int, enc: int) -> tuple[int | None, int]:
        """Decode a DW_EH_PE-encoded pointer at `pos` (section offset)."""
        if enc == 0xFF:
            return None, pos
        fmt = enc & 0x0F
        app = enc & 0x70
        if app == 0x50:  # aligned
            pos = (pos + self.addr_size - 1) & ~(self.addr_size - 1)
        start = pos
        if fmt == 0x00:  # absptr: the target's address size
            value = self._uint(pos, self.addr_size)
            pos += self.addr_size
        elif fmt == 0x01:
            value, pos = uleb(self.data, pos)
        elif fmt == 0x09:
            value, pos = sleb(self.data, pos)
        else:
            size = _FIXED_ENCODINGS.get(fmt)
            if size is None:
                raise CfiError(f"pointer encoding {enc:#x}")
            value = self._uint(pos, size)
            if fmt & 0x08 and value >> (8 * size - 1):
                value -= 1 << (8 * size)
            pos += size
        if app == 0x10:  # pcrel
            value += self.vaddr + start
        return value & self.mask, pos

    def _header(self, off: int) -> tuple[int, int, int, int]:
        """(id value, position after id, end of entry, id size) of the entry at `off`."""
        length = self._uint(off, 4)
        pos = off + 4
        idsize = 4
        if length == 0xFFFFFFFF:
            length = self._uint(pos, 8)
            pos += 8
            idsize = 8
        end = pos + length
        if length == 0 or end > len(self.data):
            raise CfiError("bad entry length")
        cid = self._uint(pos, idsize)
        return cid, pos, end, idsize

    def _is_cie(self, cid: int, idsize: int) -> bool:
        if self.is_eh:
            return cid == 0
        return cid == (0xFFFFFFFF if idsize == 4 else 0xFFFFFFFFFFFFFFFF)

    def _cie_offset(self, cid: int, idpos: int) -> int:
        return idpos - cid if self.is_eh else cid

    # -------------------------------------------------------------- entries

    def cie(self, off: int) -> _Cie:
        c = self.cies.get(off)
        if c is not None:
            return c
        cid, pos, end, idsize = self._header(off)
        if not self._is_cie(cid, idsize):
            raise CfiError("CIE pointer does not point at a CIE")
        d = self.data
        pos += idsize
        version = d[pos]
        pos += 1
        aug_end = bytes(d[pos:end]).find(b"\0")
        if aug_end < 0:
            raise CfiError("unterminated augmentation")
        aug = bytes(d[pos:pos + aug_end])
        pos += aug_end + 1
        c = _Cie()
        c.addr_size = self.addr_size
        c.seg_size = 0
        if aug.startswith(b"eh"):
            pos += self.addr_size
        if version >= 4:
            c.addr_size = d[pos]
            c.seg_size = d[pos + 1]
            pos += 2
            if c.addr_size not in (4, 8):
                raise CfiError("bad address size")
        c.code_align, pos = uleb(d, pos)
        c.data_align, pos = sleb(d, pos)
        if version == 1:
            c.ra = d[pos]
            pos += 1
        else:
            c.ra, pos = uleb(d, pos)
        c.fde_enc = 0x00 if self.is_eh else -1
        c.signal = False
        c.aug_z = aug.startswith(b"z")
        if c.aug_z:
            alen, pos = uleb(d, pos)
            aend = pos + alen
            for ch in aug[1:]:
                if ch == 0x52:  # 'R'
                    c.fde_enc = d[pos]
                    pos += 1
                elif ch == 0x4C:  # 'L'
                    pos += 1
                elif ch == 0x50:  # 'P'
                    _, pos = self.read_enc(pos + 1, d[pos] & 0x7F)
                elif ch == 0x53:  # 'S'
                    c.signal = True
                elif ch not in (0x42, 0x47):  # 'B' (aarch64 BTI), 'G' (MTE) carry no data
                    break
            pos = aend
        c.init = (pos, end)
        self.cies[off] = c
        return c

    def fde(self, off: int) -> tuple[_Cie, int, int, int, int]:
        """(cie, pc_begin, pc_end, instructions start, end) of the FDE at `off`; kept for the
        next address it covers."""
        found = self.fdes.get(off)
        if found is not None:
            return found
        cid, pos, end, idsize = self._header(off)
        if self._is_cie(cid, idsize):
            raise CfiError("not an FDE")
        c = self.cie(self._cie_offset(cid, pos))
        pos += idsize
        if self.is_eh:
            begin, pos = self.read_enc(pos, c.fde_enc)
            size, pos = self.read_enc(pos, c.fde_enc & 0x0F)
        else:
            pos += c.seg_size
            begin = self._uint(pos, c.addr_size)
            size = self._uint(pos + c.addr_size, c.addr_size)
            pos += 2 * c.addr_size
        if c.aug_z:
            alen, pos = uleb(self.data, pos)
            pos += alen
        if begin is None or size is None:
            raise CfiError("omitted FDE address")
        found = self.fdes[off] = (c, begin, begin + size, pos, end)
        return found

    def build_index(self) -> None:
        """Scan every entry once: sorted (pc_begin, pc_end, FDE offset) lists."""
        entries = []
        off = 0
        n = len(self.data)
        try:
            while off + 4 <= n:
                if self._uint(off, 4) == 0:
                    if self.is_eh:
                        break  # terminator
                    off += 4
                    continue
                cid, pos, end, idsize = self._header(off)
                if not self._is_cie(cid, idsize):
                    try:
                        _, begin, stop, _, _ = self.fde(off)
                    except (CfiError, IndexError):
                        pass
                    else:
                        if stop > begin:
                            entries.append((begin, stop, off))
                off = end
        except (CfiError, IndexError):
            pass  # keep what was indexed before the damage
        entries.sort()
        self.starts = [e[0] for e in entries]
        self.ends = [e[1] for e in entries]
        self.offsets = [e[2] for e in entries]

    def find(self, pc: int) -> int | None:
        """FDE offset covering `pc` via the scanned index."""
        if self.starts is None:
            self.build_index()
        i = bisect_right(self.starts, pc) - 1
        # Overlapping FDEs are rare; look back a little for one that covers pc.
        for j in range(i, max(i - 4, -1), -1):
            if pc < self.ends[j]:
                return self.offsets[j]
        return None


class _HdrTable:
    """The binary-search table of .eh_frame_hdr, read in place (in C when compiled: a lookup
    is ~17 probes, once per new address a walk asks for)."""

    # table encodings: the low nibble gives the width of a field, 0x08 set a signed one
    _WIDTHS = {0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}

    def __init__(self, vaddr: int, data: memoryview, frames: _Frames) -> None:
        if len(data) < 4 or data[0] != 1:
            raise CfiError("unsupported .eh_frame_hdr")
        ptr_enc, count_enc, table_enc = data[1], data[2], data[3]
        hdr = _Frames(vaddr, data, True, frames.little, frames.addr_size)
        _, pos = hdr.read_enc(4, ptr_enc)
        count, pos = hdr.read_enc(pos, count_enc)
        width = self._WIDTHS.get(table_enc & 0x0F)
        if count is None or width is None or table_enc & 0x70 not in (0x00, 0x30):
            raise CfiError("unsupported table encoding")
        self.width = width
        self.little = frames.little
        # a signed field's sign bits above its width, OR-ed in: the sum with the base wraps
        # as Python's `& mask` of the signed value does
        self.sign = (_MASK64 ^ ((1 << (8 * width)) - 1)) if table_enc & 0x08 else 0
        self.entry = 2 * width
        self.pos = pos
        self.count = min(count, (len(data) - pos) // self.entry)
        self.base = vaddr if table_enc & 0x70 == 0x30 else 0
        self.data = data
        self.mask = frames.mask

    def _field(self, at: int) -> int:
        """The table's field at byte `at`, plus the base, as an address."""
        v = uint_at(self.data, at, self.width, self.little)
        if v >> (8 * self.width - 1) and self.sign:
            v |= self.sign
        return (v + self.base) & self.mask

    def find(self, pc: int) -> int | None:
        """Vaddr of the FDE whose initial location is the greatest one <= pc."""
        if pc < 0:
            return None
        # every entry is at most the mask: a larger pc finds what the highest one does
        at = min(pc, _MASK64)
        lo, hi = 0, self.count
        pos, size = self.pos, self.entry
        while lo < hi:
            mid = (lo + hi) // 2
            if self._field(pos + mid * size) <= at:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return None
        return self._field(pos + (lo - 1) * size + self.width)


class Cfi:
    """Unwind tables of one ELF image."""

    def __init__(self, eh: _Frames | None, hdr: _HdrTable | None, debug: _Frames | None,
                 plts: tuple = (), plt_regs: tuple = (), exidx=None) -> None:
        self._eh = eh
        self._hdr = hdr
        self._debug = debug
        self._exidx = exidx  # elf.exidx.ArmExidx: 32-bit Arm functions without an FDE
        # PLT sections (ElfImage.plt_layouts) and the machine's (stack pointer, return
        # address column): rows for their code where no FDE covers it
        self._plts = plts
        self._plt_regs = plt_regs

    @staticmethod
    def for_image(image, plt_regs: tuple = (), exidx=None) -> Cfi | None:
        """Index the unwind tables of `image`; None if it has none. `plt_regs`: the DWARF
        numbers of its machine's stack pointer and return address column
        (unwind.rules.cfi_for_image), for rows of PLT code no FDE covers; none without it.
        `exidx`: its 32-bit Arm index (elf.exidx), for functions no FDE covers."""
        little = image.little_endian
        asize = 8 if image.is_64 else 4
        aarch64 = image.e_machine == EM_AARCH64
        eh = hdr = debug = None
        try:
            sec = image.section(".eh_frame")
            if sec is not None and len(sec[1]):
                eh = _Frames(sec[0], sec[1], True, little, asize, aarch64)
                sec = image.section(".eh_frame_hdr")
                if sec is not None:
                    try:
                        hdr = _HdrTable(sec[0], sec[1], eh)
                    except (CfiError, IndexError):
                        hdr = None
            sec = image.section(".debug_frame")
            if sec is None and getattr(image, "debug", None) is not None:
                sec = image.debug.section(".debug_frame")
            if sec is not None and len(sec[1]):
                debug = _Frames(sec[0], sec[1], False, little, asize, aarch64)
        except (CfiError, IndexError, struct.error, ValueError):
            return None
        layouts = getattr(image, "plt_layouts", None)
        plts = () if layouts is None or not plt_regs else tuple(layouts())
        if eh is None and debug is None and exidx is None and not plts:
            return None
        return Cfi(eh, hdr, debug, plts, plt_regs, exidx)

    def row(self, vaddr: int) -> Row | None:
        """Rule row valid at `vaddr` (ELF virtual address), None if no FDE (or index entry)
        covers it."""
        row = None
        if self._eh is not None:
            row = self._lookup(0, self._eh, vaddr)
        if row is None and self._debug is not None:
            row = self._lookup(1, self._debug, vaddr)
        if row is None and self._plts:
            row = _plt_row(self._plts, self._plt_regs, vaddr)
        # after the PLTs: an index entry's range has no end but the next entry's start
        if row is None and self._exidx is not None:
            row = self._exidx.row(vaddr)
        return row

    def function_at(self, vaddr: int) -> tuple[int, int] | None:
        """[start, end) of the code the FDE covering `vaddr` describes (a compiler emits one
        for each function, and one for each of its cold parts), else the function 32-bit
        Arm's index says covers it (ArmExidx.function_at); None where neither does."""
        for which, frames in ((0, self._eh), (1, self._debug)):
            if frames is None:
                continue
            try:
                off = self._fde_offset(which, frames, vaddr)
                if off is None:
                    continue
                _, begin, stop, _, _ = frames.fde(off)
            except (CfiError, IndexError, OverflowError, ValueError):
                continue
            if begin <= vaddr < stop:
                return begin, stop
        return None if self._exidx is None else self._exidx.function_at(vaddr)

    def _fde_offset(self, which: int, frames: _Frames, pc: int) -> int | None:
        """Offset in `frames` of the FDE that may cover `pc` (by .eh_frame_hdr's table for
        .eh_frame, `which` 0, where there is one), None if none can."""
        if which == 0 and self._hdr is not None:
            fde_vaddr = self._hdr.find(pc)
            off = None if fde_vaddr is None else fde_vaddr - frames.vaddr
        else:
            off = frames.find(pc)
        return None if off is None or off < 0 else off

    def _lookup(self, which: int, frames: _Frames, pc: int) -> Row | None:
        try:
            off = self._fde_offset(which, frames, pc)
            if off is None:
                return None
            # the rows of this FDE found before (cc1plus's samples hit two addresses a row),
            # and where the program stood after the last one below pc
            known = frames.rows.get(off)
            resume = None
            if known is not None:
                i = bisect_right(known[0], pc) - 1
                if i >= 0:
                    if pc < known[1][i].hi:
                        return known[1][i]
                    resume = known[2][i]
            c, begin, stop, pos, end = frames.fde(off)
            if not begin <= pc < stop:
                return None
            if c.initial is None:
                ipos, iend = c.init
                c.initial = _run(frames, c, ipos, iend, 0, (CFA_REG, 0, 0), {}, None, None,
                                 [], 0)[:2]
            if resume is None:
                cfa, regs = c.initial
                regs, loc, stack, advances = dict(regs), begin, [], 0
            else:
                # the state after that row's end, as a run from the start has it there: a
                # big function's program (cc1plus: 6 k rows) runs once, not once per row
                cfa, regs = known[1][i].cfa, dict(known[1][i].regs)
                pos, loc, advances, saved = resume
                stack = list(saved)
            cfa, regs, lo, hi, pos, advances = _run(frames, c, pos, end, loc, cfa, regs,
                                                    c.initial[1], pc, stack, advances)
        except (CfiError, IndexError, OverflowError, ValueError):  # Overflow: a C position
            return None
        for reg, rule in regs.items():
            regs[reg] = shared(rule)
        row = Row(shared(cfa), regs, c.ra, c.signal, lo, stop if hi is None else min(hi, stop))
        after = None if hi is None else (pos, hi, advances, tuple(stack))
        if known is None:
            frames.rows[off] = ([lo], [row], [after])
        else:
            i = bisect_right(known[0], lo)
            known[0].insert(i, lo)
            known[1].insert(i, row)
            known[2].insert(i, after)
        return row


def _plt_row(plts: tuple, regs: tuple, vaddr: int) -> Row | None:
    """The row of PLT code at `vaddr` that no FDE covers, from the PLT's layout (ElfImage.
    plt_layouts): the CFA is the stack pointer plus what the code at `vaddr` has pushed
    (and the return address, where a call pushes it, as GNU ld's CFI for x86 PLTs has it);
    the return address is below the CFA where the layout says, else in its register."""
    sp, ra = regs
    for lo, hi, header, header_steps, size, entry_steps in plts:
        if lo <= vaddr < hi:
            off = vaddr - lo
            if off < header:
                start, steps, within = lo, header_steps, off
            else:
                within = (off - header) % size
                start, steps = vaddr - within, entry_steps
            cfa = saved = 0
            for at, above, ra_at in steps:
                if within >= at:
                    cfa, saved = above, ra_at
            return Row((CFA_REG, sp, cfa), {ra: (OFFSET, saved)} if saved else {}, ra, False,
                       start, start + (header if steps is header_steps else size))
    return None


def _run(frames: _Frames, c: _Cie, pos: int, end: int, loc: int, cfa: tuple,
         regs: dict[int, tuple], initial: dict[int, tuple] | None, pc: int | None,
         stack: list[tuple[int, object, int, dict]], advances: int
         ) -> tuple[tuple, dict, int, int | None, int, int]:
    """Execute CFA instructions [pos, end) from location `loc` up to the row covering `pc`:
    rows are produced in address order (DWARF 5 §6.4.1), so the first advance of the location
    past pc ends it, as in libgcc and elfutils; to the end when pc is None (the CIE's initial
    instructions, `initial` None). `stack` (the remembered states) and `advances` go on from
    where an earlier run stopped. Returns (cfa, regs, start of their row, the location the
    program advanced to past pc or None at the end of the program, the position after that
    advance, the advances so far)."""
    data = frames.data
    d = frames.buf  # the opcodes and one-byte operands read in C
    little = frames.little
    ca = c.code_align
    da = c.data_align
    # the CFA rule in locals, a tuple again at the end: most operations change its offset
    kind, creg, coff = cfa
    while pos < end:
        op = d[pos]
        pos += 1
        hi2 = op & 0xC0
        if hi2 == 0x40 or 0x01 <= op <= 0x04:  # an advance of the location
            if hi2 == 0x40:  # advance_loc
                new = loc + (op & 0x3F) * ca
            elif op == 0x01:  # set_loc
                if frames.is_eh:
                    new, pos = frames.read_enc(pos, c.fde_enc)
                else:
                    new = uint_at(d, pos, c.addr_size, little)
                    pos += c.addr_size
                if new is None or new < loc:  # "always greater than the current one"
                    raise CfiError("bad set_loc")
            elif op == 0x02:
                new = loc + d[pos] * ca
                pos += 1
            elif op == 0x03:
                new = loc + uint_at(d, pos, 2, little) * ca
                pos += 2
            else:
                new = loc + uint_at(d, pos, 4, little) * ca
                pos += 4
            advances += 1
            if advances > _MAX_ROWS:
                raise CfiError("too many rows")
            if pc is not None and new > pc:
                break
            loc = new
        elif hi2 == 0x80:  # offset
            b = d[pos]
            if b < 0x80:  # most offsets and CFA offsets fit a byte: no call, no tuple
                off = b
                pos += 1
            else:
                off, pos = uleb(data, pos)
            regs[op & 0x3F] = (OFFSET, off * da)
        elif hi2 == 0xC0:  # restore
            _restore(regs, initial, op & 0x3F)
        elif op == 0x00:  # nop
            pass
        elif op == 0x05 or op == 0x14:  # offset_extended, val_offset
            reg, pos = uleb(data, pos)
            off, pos = uleb(data, pos)
            regs[reg] = (OFFSET if op == 0x05 else VAL_OFFSET, off * da)
        elif op == 0x11 or op == 0x15:  # offset_extended_sf, val_offset_sf
            reg, pos = uleb(data, pos)
            off, pos = sleb(data, pos)
            regs[reg] = (OFFSET if op == 0x11 else VAL_OFFSET, off * da)
        elif op == 0x2F:  # GNU_negative_offset_extended
            reg, pos = uleb(data, pos)
            off, pos = uleb(data, pos)
            regs[reg] = (OFFSET, -off * da)
        elif op == 0x06:  # restore_extended
            reg, pos = uleb(data, pos)
            _restore(regs, initial, reg)
        elif op == 0x07:  # undefined
            reg, pos = uleb(data, pos)
            regs[reg] = (UNDEF, 0)
        elif op == 0x08:  # same_value
            reg, pos = uleb(data, pos)
            regs[reg] = (SAME, 0)
        elif op == 0x09:  # register
            reg, pos = uleb(data, pos)
            reg2, pos = uleb(data, pos)
            regs[reg] = (REGISTER, reg2)
        elif op == 0x0A:  # remember_state
            if len(stack) >= _MAX_STATE_STACK:
                raise CfiError("state stack overflow")
            stack.append((kind, creg, coff, dict(regs)))
        elif op == 0x0B:  # restore_state: CFA rule too, as libgcc and elfutils do
            if not stack:
                raise CfiError("state stack underflow")
            kind, creg, coff, saved = stack.pop()
            regs = dict(saved)  # a stack entry stays as it was: a later run resumes with it
        elif op == 0x0C:  # def_cfa
            creg, pos = uleb(data, pos)
            coff, pos = uleb(data, pos)
            kind = CFA_REG
        elif op == 0x12:  # def_cfa_sf
            creg, pos = uleb(data, pos)
            off, pos = sleb(data, pos)
            coff = off * da
            kind = CFA_REG
        elif op == 0x0D:  # def_cfa_register (an expression rule's offset is 0)
            creg, pos = uleb(data, pos)
            kind = CFA_REG
        elif op == 0x0E:  # def_cfa_offset
            b = d[pos]
            if b < 0x80:
                off = b
                pos += 1
            else:
                off, pos = uleb(data, pos)
            if kind != CFA_REG:
                kind, creg = CFA_REG, 0
            coff = off
        elif op == 0x13:  # def_cfa_offset_sf
            off, pos = sleb(data, pos)
            if kind != CFA_REG:
                kind, creg = CFA_REG, 0
            coff = off * da
        elif op == 0x0F:  # def_cfa_expression
            n, pos = uleb(data, pos)
            if pos + n > end:
                raise CfiError("truncated expression")
            kind, creg, coff = CFA_EXPR, bytes(data[pos:pos + n]), 0
            pos += n
        elif op == 0x10 or op == 0x16:  # expression, val_expression
            reg, pos = uleb(data, pos)
            n, pos = uleb(data, pos)
            if pos + n > end:
                raise CfiError("truncated expression")
            regs[reg] = (EXPR if op == 0x10 else VAL_EXPR, bytes(data[pos:pos + n]))
            pos += n
        elif op == 0x2E:  # GNU_args_size: no effect on the rules
            _, pos = uleb(data, pos)
        elif op == 0x2D or (op == 0x2C and frames.aarch64):
            # AArch64's negate_ra_state (and negate_ra_state_with_pc, FEAT_PAuthLR): the
            # return address's signing flips; elsewhere 0x2d is SPARC's window_save
            if frames.aarch64 and regs.pop(RA_SIGN_STATE, None) is None:
                regs[RA_SIGN_STATE] = (SIGNED, 0)
        else:
            raise CfiError(f"unknown CFA op {op:#x}")
    else:
        new = None
    if pos > end:
        raise CfiError("instruction overruns entry")
    return (kind, creg, coff), regs, loc, new, pos, advances


def shared(rule: tuple | bytes) -> tuple | bytes:
    """The one tuple (or bytes) equal to `rule` that rows and steps hold (`rule` itself the
    first time, and once _MAX_SHARED are)."""
    found = _SHARED.get(rule)
    if found is not None:
        return found
    if len(_SHARED) < _MAX_SHARED:
        _SHARED[rule] = rule
    return rule


def _restore(regs: dict[int, tuple], initial: dict[int, tuple] | None, reg: int) -> None:
    if initial is not None and reg in initial:
        regs[reg] = initial[reg]
    else:
        regs.pop(reg, None)
