"""DWARF (CFI) stack unwinding of one sample's user stack copy (SEMANTICS §11.3).

`unwind()` walks the frames of a sample from its user registers and stack copy, using the CFI
of the modules the caller's address space maps, with elfutils' semantics: lookup addresses are
pc for the first frame and for signal-frame activations, pc - 1 for callers; stack words
outside the copy may come from module files or, as "guessed" data, from words remembered from
earlier samples of the same process. It never raises and always terminates.
"""

from __future__ import annotations

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
           kernel_range: tuple[int, int] = (0, 0)) -> tuple[list[int], int]:
    """Returns (lookup addresses leaf first, first_guessed_index); see the module docstring.

    `regs` holds the sample's user registers packed in the order of the set bits of
    `regs_mask`; `module_at(addr)` -> (image, bias, cfi) | None for a runtime address
    (runtime = vaddr + bias); `history` maps stack addresses to words seen in earlier samples
    and is updated with every word read from this stack copy.
    """
    table = table_for(arch, abi)
    if table is None:
        return [], 0
    try:
        return _Unwinder(table, regs, regs_mask, stack, module_at, history,
                         kernel_range).run(max_frames)
    except Exception:  # noqa: BLE001 - hostile input must never escape as a traceback
        return [], 0


class _Unwinder:
    __slots__ = ("t", "regs", "stack", "lo", "hi", "module_at", "history", "klo", "khi",
                 "mask", "fmt", "frames", "guessed")

    def __init__(self, t: RegTable, regs: tuple[int, ...], regs_mask: int, stack: memoryview,
                 module_at: ModuleAt, history: dict[int, int],
                 kernel_range: tuple[int, int]) -> None:
        self.t = t
        self.mask = (1 << (8 * t.word)) - 1
        self.fmt = "<Q" if t.word == 8 else "<I"
        perf: dict[int, int] = {}
        i = 0
        bit = 0
        m = regs_mask
        while m and i < len(regs):
            if m & 1:
                perf[bit] = regs[i] & self.mask
                i += 1
            m >>= 1
            bit += 1
        dw = {d: perf[p] for d, p in enumerate(t.dwarf_from_perf) if p in perf}
        for r in t.zero_dwarf:
            dw[r] = 0
        self.regs = dw
        self.stack = stack
        sp = perf.get(t.sp_perf)
        self.lo = sp if sp is not None else 1
        self.hi = sp + len(stack) if sp is not None else 0
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
            v = struct.unpack_from(self.fmt, self.stack, addr - self.lo)[0]
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

    def run(self, max_frames: int) -> tuple[list[int], int]:
        t = self.t
        frames = self.frames
        limit = max_frames if max_frames >= 0 else _HARD_MAX_FRAMES
        regs = self.regs
        initial = True
        callee_signal = False
        seen: set[tuple[int, int]] = set()
        is_x86 = t.ip_dwarf in (8, 16) and t.sp_dwarf in (4, 7)
        while True:
            pc = regs.get(t.ip_dwarf)
            if pc is None:
                break
            if pc == 0 or len(frames) > limit:
                self.guessed = len(frames)
                break
            exact = initial or callee_signal
            adj = pc if exact else pc - 1
            mod = self.module_at(adj)
            row = None
            if mod is not None and mod[2] is not None:
                row = mod[2].row(adj - mod[1])
            frames.append(pc if exact or (row is not None and row.signal) else pc - 1)
            new = self._step_cfi(regs, row, mod[1] if mod else 0) if row is not None else None
            if new is None:
                new = self._step_fallback(regs)
                if new is None:
                    break
                signal = False
            else:
                signal = row.signal
            if new is _END:
                break
            sp = regs.get(t.sp_dwarf)
            cfa = new.get(t.sp_dwarf)
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

    def _step_cfi(self, regs: dict[int, int], row, bias: int):
        """Caller registers from a CFI row; None if the rules cannot be evaluated,
        _END if the return address is undefined (outermost frame)."""
        t = self.t
        mask = self.mask
        rule = row.cfa
        if rule[0] == CFA_REG:
            base = regs.get(rule[1])
            if base is None:
                return None
            cfa = (base + rule[2]) & mask
        else:
            cfa = self.eval(rule[1], regs, None)
            if cfa is None:
                return None
        new = dict(regs)
        new[t.sp_dwarf] = cfa
        for reg, (kind, arg) in row.regs.items():
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
                if reg == row.ra:
                    return _END
                v = None
            else:
                v = None
            if v is None:
                new.pop(reg, None)
            else:
                new[reg] = v
        ra = new.get(row.ra)
        if ra is None:
            return None
        if t.name == "arm":
            ra &= ~1  # Thumb bit is not part of the address
        new[t.ip_dwarf] = ra
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

