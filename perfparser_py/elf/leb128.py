"""LEB128 and fixed-size number decoding shared by the CFI and DWARF readers.

uleb and sleb take a bytes-like buffer and a position and return (value, next position); the
others, for the compiled readers, return one number each. Reading past the end raises
IndexError, which the callers turn into "no data".
"""

from __future__ import annotations


def uleb(data, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 at `pos`."""
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = data[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + 1
        shift += 7


def sleb(data, pos: int) -> tuple[int, int]:
    """Signed LEB128 at `pos`."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if b & 0x40:
                value -= 1 << shift
            return value, pos


def uleb_end(data, pos: int) -> int:
    """Position after the LEB128 number at `pos` (skipped, not decoded)."""
    while data[pos] >= 0x80:
        pos += 1
    return pos + 1


def uleb_value(data, pos: int) -> int:
    """Unsigned LEB128 at `pos` for the compiled readers, saturated at 2**63 - 1: what no
    section can hold, so a reader seeing it fails as on the number itself."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        if shift < 63:
            value |= (b & 0x7F) << shift
            if value > 0x7FFFFFFFFFFFFFFF:
                value = 0x7FFFFFFFFFFFFFFF
        elif b & 0x7F:
            value = 0x7FFFFFFFFFFFFFFF
        if b < 0x80:
            return value
        pos += 1
        shift += 7


def sleb_value(data, pos: int) -> int:
    """Signed LEB128 at `pos` for the compiled readers, when it has 8 bytes at most (56
    bits); 2**63 - 1 for a longer one, what no reader accepts."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        if shift < 56:
            value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
        pos += 1
    if shift > 56:
        return 0x7FFFFFFFFFFFFFFF
    return value - ((b & 0x40) << (shift - 6))  # minus 1 << shift when negative, in C too


def uint_at(data, pos: int, n: int, little: bool) -> int:
    """The n-byte (1-8) unsigned number at `pos`."""
    value = 0
    if little:
        i = n - 1
        while i >= 0:
            value = value << 8 | data[pos + i]
            i -= 1
    else:
        i = 0
        while i < n:
            value = value << 8 | data[pos + i]
            i += 1
    return value
