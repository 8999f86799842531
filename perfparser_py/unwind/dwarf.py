"""DWARF (CFI) stack unwinding of one sample's user stack copy (SEMANTICS §11.3).

`unwind()` walks the frames of a sample from its user registers and stack copy, using the CFI
of the modules the caller's address space maps, with elfutils' semantics: lookup addresses are
pc for the first frame and for signal-frame activations, pc - 1 for callers; stack words
outside the copy may come from module files or, as "guessed" data, from words remembered from
earlier samples of the same process. It never raises and always terminates.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable

from ..elf.leb128 import sleb as _sleb
from ..elf.leb128 import uleb as _uleb
from ..elf.cfi import (
    CFA_REG,
    EXPR,
    OFFSET,
    REGISTER,
    SAME,
    UNDEF,
    VAL_EXPR,
    VAL_OFFSET,
)
from .registers import RegTable, table_for

# Frame cap when max_frames is -1: a sanity bound, far beyond any real stack.
_HARD_MAX_FRAMES = 100_000
_MAX_EXPR_STEPS = 1000

ModuleAt = Callable[[int], "tuple[object, int, object] | None"]


def unwind(arch: str, abi: int, regs: tuple[int, ...], regs_mask: int, stack: memoryview,
           module_at: ModuleAt, history: dict[int, int], max_frames: int,
           kernel_range: tuple[int, int] = (0, 0),
           steps: dict[int, tuple] | None = None) -> tuple[list[int], int]:
    """Returns (lookup addresses leaf first, first_guessed_index); see the module docstring.

    `regs` holds the sample's user registers packed in the order of the set bits of
    `regs_mask`; `module_at(addr)` -> (image, bias, cfi) | None for a runtime address
    (runtime = vaddr + bias); `history` maps stack addresses to words seen in earlier samples
    and is updated with every word read from this stack copy. `steps` caches lookup address
    -> compiled CFI step across calls; the caller must clear it whenever `module_at` would
    answer differently (a mapping change).
    """
    table = table_for(arch, abi)
    if table is None:
        return [], 0
    try:
        return _Unwinder(table, regs, regs_mask, stack, module_at, history,
                         kernel_range).run(max_frames, {} if steps is None else steps)
    except Exception:  # noqa: BLE001 - hostile input must never escape as a traceback
        return [], 0


@functools.cache
def _reg_slots(t: RegTable, regs_mask: int, nregs: int) -> tuple[tuple, int]:
    """((DWARF register, index into the packed sample registers), ...) in DWARF order, and the
    index of the stack pointer (-1 if absent) for one sample register mask."""
    perf: dict[int, int] = {}
    i = bit = 0
    m = regs_mask
    while m and i < nregs:
        if m & 1:
            perf[bit] = i
            i += 1
        m >>= 1
        bit += 1
    pairs = tuple((d, perf[p]) for d, p in enumerate(t.dwarf_from_perf) if p in perf)
    return pairs, perf.get(t.sp_perf, -1)


def _compile(row, word: int) -> tuple:
    """A CFI row as the tuple the step evaluates:
    (cfa register or -1 for an expression, offset or expression, rules, ra, signal, block)
    where rules are (register, kind, argument) in row order and block, when not None, is
    (first offset, span, Struct.unpack_from, ((register, index), ...)) for a row whose rules
    are all saved-at-offset words on one word grid: one unpack_from reads them all."""
    rule = row.cfa
    cfa_reg, cfa_arg = (rule[1], rule[2]) if rule[0] == CFA_REG else (-1, rule[1])
    rules = tuple((reg, kind, arg) for reg, (kind, arg) in row.regs.items())
    block = None
    offs = [arg for _reg, kind, arg in rules if kind == OFFSET]
    if rules and len(offs) == len(rules):
        first = min(offs)
        if all((o - first) % word == 0 for o in offs):
            n = (max(offs) - first) // word + 1
            fmt = struct.Struct(f"<{n}{'Q' if word == 8 else 'I'}").unpack_from
            block = (first, n * word, fmt,
                     tuple((reg, (arg - first) // word) for reg, _kind, arg in rules))
    return cfa_reg, cfa_arg, rules, row.ra, row.signal, block


class _Unwinder:
    __slots__ = ("t", "regs", "stack", "lo", "hi", "module_at", "history", "klo", "khi",
                 "mask", "fmt", "unpack", "frames", "guessed")

    def __init__(self, t: RegTable, regs: tuple[int, ...], regs_mask: int, stack: memoryview,
                 module_at: ModuleAt, history: dict[int, int],
                 kernel_range: tuple[int, int]) -> None:
        self.t = t
        mask = self.mask = (1 << (8 * t.word)) - 1
        self.fmt = "<Q" if t.word == 8 else "<I"
        self.unpack = struct.Struct(self.fmt).unpack_from
        pairs, sp_index = _reg_slots(t, regs_mask, len(regs))
        dw = {d: regs[i] & mask for d, i in pairs}
        for r in t.zero_dwarf:
            dw[r] = 0
        self.regs = dw
        self.stack = stack
        if sp_index >= 0:
            sp = regs[sp_index] & mask
            self.lo = sp
            # words past the address space's end are unreadable: read() refuses them too
            self.hi = min(sp + len(stack), mask + 1)
        else:
            self.lo, self.hi = 1, 0
        self.module_at = module_at
        self.history = history
        self.klo, self.khi = kernel_range
        self.frames: list[int] = []
        self.guessed: int | None = None

    def read(self, addr: int) -> int | None:
        """One stack word, following the read order of SEMANTICS §11.3."""
        word = self.t.word
        if addr < 0 or addr + word > self.mask + 1:
            return None
        if self.lo <= addr and addr + word <= self.hi:
            v = self.unpack(self.stack, addr - self.lo)[0]
            self.history[addr] = v
            return v
        if self.klo <= addr < self.khi:
            return None
        mod = self.module_at(addr)
        if mod is not None:
            image, bias = mod[0], mod[1]
            data = image.read(addr - bias, word)
            if data is None or len(data) != word:
                return None
            return struct.unpack(self.fmt, data)[0]
        v = self.history.get(addr)
        if v is not None and self.guessed is None:
            self.guessed = len(self.frames)
        return v

    def run(self, max_frames: int, steps: dict[int, tuple]) -> tuple[list[int], int]:
        t = self.t
        frames = self.frames
        limit = max_frames if max_frames >= 0 else _HARD_MAX_FRAMES
        regs = self.regs
        ip_dwarf, sp_dwarf = t.ip_dwarf, t.sp_dwarf
        word = t.word
        module_at = self.module_at
        initial = True
        callee_signal = False
        seen: set[tuple[int, int]] = set()
        is_x86 = ip_dwarf in (8, 16) and sp_dwarf in (4, 7)
        # for the inlined common case of _step_cfi
        mask, lo, hi, stack, history = self.mask, self.lo, self.hi, self.stack, self.history
        arm = t.name == "arm"
        while True:
            pc = regs.get(ip_dwarf)
            if pc is None:
                break
            if pc == 0 or len(frames) > limit:
                self.guessed = len(frames)
                break
            exact = initial or callee_signal
            adj = pc if exact else pc - 1
            step = steps.get(adj, False)
            if step is False:
                mod = module_at(adj)
                row = None
                if mod is not None and mod[2] is not None:
                    row = mod[2].row(adj - mod[1])
                step = steps[adj] = None if row is None else _compile(row, word)
            if step is None:
                frames.append(pc if exact else pc - 1)
                new = None
            else:
                cfa_reg, cfa_arg, _rules, ra_reg, signal, block = step
                frames.append(pc if exact or signal else pc - 1)
                new = None
                base = regs.get(cfa_reg) if block is not None else None
                if base is not None:
                    # _step_cfi for a register CFA and a block of saved words inside the copy
                    cfa = (base + cfa_arg) & mask
                    first = cfa + block[0]
                    if lo <= first and first + block[1] <= hi:
                        new = dict(regs)
                        new[sp_dwarf] = cfa
                        values = block[2](stack, first - lo)
                        for reg, i in block[3]:
                            v = values[i]
                            history[first + i * word] = v
                            new[reg] = v
                        ra = new.get(ra_reg)
                        if ra is None:
                            new = None
                        else:
                            new[ip_dwarf] = ra & ~1 if arm else ra
                    else:
                        base = None
                if base is None:
                    new = self._step_cfi(regs, step)
            if new is None:
                new = self._step_fallback(regs)
                if new is None:
                    break
                signal = False
            if new is _END:
                break
            sp = regs.get(sp_dwarf)
            cfa = new.get(sp_dwarf)
            if cfa is None:
                cfa = -1
            key = (pc, cfa)
            if key in seen or (is_x86 and not signal and sp is not None and 0 <= cfa <= sp):
                break
            seen.add(key)
            regs = new
            initial = False
            callee_signal = signal
        first = self.guessed if self.guessed is not None else len(frames)
        return frames, min(first, len(frames))

    def _step_cfi(self, regs: dict[int, int], step: tuple):
        """Caller registers from a compiled CFI row; None if the rules cannot be evaluated,
        _END if the return address is undefined (outermost frame)."""
        mask = self.mask
        cfa_reg, cfa_arg, rules, ra_reg, _signal, block = step
        if cfa_reg >= 0:
            base = regs.get(cfa_reg)
            if base is None:
                return None
            cfa = (base + cfa_arg) & mask
        else:
            cfa = self.eval(cfa_arg, regs, None)
            if cfa is None:
                return None
        new = dict(regs)
        new[self.t.sp_dwarf] = cfa
        lo = self.lo
        if block is not None and lo <= cfa + block[0] and cfa + block[0] + block[1] <= self.hi:
            # every rule reads a word inside the stack copy
            first = cfa + block[0]
            values = block[2](self.stack, first - lo)
            history = self.history
            word = self.t.word
            for reg, i in block[3]:
                v = values[i]
                history[first + i * word] = v
                new[reg] = v
        else:
            for reg, kind, arg in rules:
                if kind == OFFSET:
                    v = self.read((cfa + arg) & mask)
                elif kind == VAL_OFFSET:
                    v = (cfa + arg) & mask
                elif kind == SAME:
                    v = regs.get(reg)
                elif kind == REGISTER:
                    v = regs.get(arg)
                elif kind == EXPR:
                    addr = self.eval(arg, regs, cfa)
                    v = None if addr is None else self.read(addr)
                elif kind == VAL_EXPR:
                    v = self.eval(arg, regs, cfa)
                elif kind == UNDEF:
                    if reg == ra_reg:
                        return _END
                    v = None
                else:
                    v = None
                if v is None:
                    new.pop(reg, None)
                else:
                    new[reg] = v
        ra = new.get(ra_reg)
        if ra is None:
            return None
        if self.t.name == "arm":
            ra &= ~1  # Thumb bit is not part of the address
        new[self.t.ip_dwarf] = ra
        return new

    def _step_fallback(self, regs: dict[int, int]):
        """Frame-pointer step where no CFI covers pc (elfutils' x86_64/aarch64 backends)."""
        t = self.t
        if t.name == "x86_64":
            fp = regs.get(6)
            if not fp:
                return None
            sp = regs.get(7) or 0
            ret = self.read(fp + 8)
            if ret is None:
                return None
            prev = self.read(fp)
            new_sp = fp + 16
            if new_sp <= sp:
                return None
            return {6: prev or 0, 7: new_sp, 16: ret}
        if t.name == "aarch64":
            lr = regs.get(30)
            fp = regs.get(29) or 0
            sp = regs.get(31) or 0
            new_lr = self.read(fp + 8) or 0
            new_fp = self.read(fp) or 0
            new_sp = fp + 16
            if not lr or (fp != 0 and new_sp <= sp):
                return None
            return {29: new_fp, 30: new_lr, 31: new_sp, 32: lr}
        return None

    def eval(self, expr: bytes, regs: dict[int, int], push: int | None) -> int | None:
        """Evaluate a DWARF expression as CFI uses it; None if it cannot be evaluated."""
        mask = self.mask
        stack: list[int] = [] if push is None else [push]
        pos = 0
        n = len(expr)
        steps = 0
        try:
            while pos < n:
                steps += 1
                if steps > _MAX_EXPR_STEPS:
                    return None
                op = expr[pos]
                pos += 1
                if 0x30 <= op <= 0x4F:  # lit0..lit31
                    stack.append(op - 0x30)
                elif 0x70 <= op <= 0x8F:  # breg0..breg31
                    off, pos = _sleb(expr, pos)
                    base = regs.get(op - 0x70)
                    if base is None:
                        return None
                    stack.append((base + off) & mask)
                elif 0x50 <= op <= 0x6F:  # reg0..reg31 (value of the register)
                    v = regs.get(op - 0x50)
                    if v is None:
                        return None
                    stack.append(v)
                elif op == 0x92:  # bregx
                    reg, pos = _uleb(expr, pos)
                    off, pos = _sleb(expr, pos)
                    base = regs.get(reg)
                    if base is None:
                        return None
                    stack.append((base + off) & mask)
                elif op == 0x90:  # regx
                    reg, pos = _uleb(expr, pos)
                    v = regs.get(reg)
                    if v is None:
                        return None
                    stack.append(v)
                elif op in _CONST:
                    fmt, size = _CONST[op]
                    stack.append(struct.unpack_from(fmt, expr, pos)[0] & mask)
                    pos += size
                elif op == 0x10:  # constu
                    v, pos = _uleb(expr, pos)
                    stack.append(v & mask)
                elif op == 0x11:  # consts
                    v, pos = _sleb(expr, pos)
                    stack.append(v & mask)
                elif op == 0x03:  # addr
                    stack.append(struct.unpack_from(self.fmt, expr, pos)[0])
                    pos += self.t.word
                elif op == 0x06:  # deref
                    v = self.read(stack.pop())
                    if v is None:
                        return None
                    stack.append(v)
                elif op == 0x94:  # deref_size
                    size = expr[pos]
                    pos += 1
                    v = self.read(stack.pop())
                    if v is None:
                        return None
                    stack.append(v & ((1 << (8 * size)) - 1) if size < self.t.word else v)
                elif op == 0x12:  # dup
                    stack.append(stack[-1])
                elif op == 0x13:  # drop
                    stack.pop()
                elif op == 0x14:  # over
                    stack.append(stack[-2])
                elif op == 0x15:  # pick
                    stack.append(stack[-1 - expr[pos]])
                    pos += 1
                elif op == 0x16:  # swap
                    stack[-1], stack[-2] = stack[-2], stack[-1]
                elif op == 0x17:  # rot
                    stack[-1], stack[-2], stack[-3] = stack[-2], stack[-3], stack[-1]
                elif op == 0x23:  # plus_uconst
                    v, pos = _uleb(expr, pos)
                    stack.append((stack.pop() + v) & mask)
                elif op in _BINARY:
                    b = stack.pop()
                    a = stack.pop()
                    r = _binary(op, a, b, mask)
                    if r is None:
                        return None
                    stack.append(r & mask)
                elif op == 0x19:  # abs
                    v = _signed(stack.pop(), mask)
                    stack.append(abs(v) & mask)
                elif op == 0x1F:  # neg
                    stack.append(-stack.pop() & mask)
                elif op == 0x20:  # not
                    stack.append(~stack.pop() & mask)
                elif op == 0x2F:  # skip
                    pos += 2 + struct.unpack_from("<h", expr, pos)[0]
                elif op == 0x28:  # bra
                    delta = struct.unpack_from("<h", expr, pos)[0]
                    pos += 2
                    if stack.pop() != 0:
                        pos += delta
                elif op == 0x96:  # nop
                    pass
                elif op == 0x9F:  # stack_value
                    break
                else:
                    return None
                if pos < 0:
                    return None
            return stack[-1] if stack else None
        except (IndexError, struct.error):
            return None


_END: dict[int, int] = {}

_CONST = {0x08: ("<B", 1), 0x09: ("<b", 1), 0x0A: ("<H", 2), 0x0B: ("<h", 2),
          0x0C: ("<I", 4), 0x0D: ("<i", 4), 0x0E: ("<Q", 8), 0x0F: ("<q", 8)}
_BINARY = frozenset((0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
                     0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E))


def _signed(v: int, mask: int) -> int:
    top = (mask + 1) >> 1
    return v - (mask + 1) if v & top else v


def _binary(op: int, a: int, b: int, mask: int) -> int | None:
    if op == 0x1A:
        return a & b
    if op == 0x1B:  # div (signed)
        sa, sb = _signed(a, mask), _signed(b, mask)
        if sb == 0:
            return None
        q = abs(sa) // abs(sb)
        return q if (sa < 0) == (sb < 0) else -q
    if op == 0x1C:
        return a - b
    if op == 0x1D:
        return None if b == 0 else a % b
    if op == 0x1E:
        return a * b
    if op == 0x21:
        return a | b
    if op == 0x22:
        return a + b
    if op == 0x24:
        return a << b if b < 64 else 0
    if op == 0x25:
        return a >> b
    if op == 0x26:
        return _signed(a, mask) >> min(b, 64)
    if op == 0x27:
        return a ^ b
    sa, sb = _signed(a, mask), _signed(b, mask)
    if op == 0x29:
        return int(sa == sb)
    if op == 0x2A:
        return int(sa >= sb)
    if op == 0x2B:
        return int(sa > sb)
    if op == 0x2C:
        return int(sa <= sb)
    if op == 0x2D:
        return int(sa < sb)
    return int(sa != sb)

