"""The DWARF expression evaluator of CFI rules (DWARF 5 §2.5): a CFA expression
(DW_CFA_def_cfa_expression) and a register's (DW_CFA_expression, DW_CFA_val_expression), with
the stack operations, arithmetic and memory reads CFI uses. It runs on the dict path of the
walk (unwind.dwarf), in Python ints masked to the address size."""

from __future__ import annotations

import struct

from ..elf.leb128 import sleb as _sleb
from ..elf.leb128 import uleb as _uleb
from .memory import Memory

_MAX_EXPR_STEPS = 1000


def evaluate(mem: Memory, expr: bytes, regs: dict[int, int], push: int | None) -> int | None:
    """The value of DWARF expression `expr` as CFI uses it (`push`: the CFA, pushed first
    for a register rule's expression), reading registers from `regs` and memory from `mem`;
    None if it cannot be evaluated."""
    mask = mem.mask
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
                stack.append(struct.unpack_from("<Q" if mem.word == 8 else "<I", expr, pos)[0])
                pos += mem.word
            elif op == 0x06:  # deref
                v = mem.read_word(stack.pop())
                if v is None:
                    return None
                stack.append(v)
            elif op == 0x94:  # deref_size
                size = expr[pos]
                pos += 1
                v = mem.read_word(stack.pop())
                if v is None:
                    return None
                stack.append(v & ((1 << (8 * size)) - 1) if size < mem.word else v)
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

