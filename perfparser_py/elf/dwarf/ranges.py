"""Address ranges of a DIE: DW_AT_low_pc/high_pc, .debug_ranges (DWARF 2-4) and
.debug_rnglists (DWARF 5)."""

from __future__ import annotations

from ..leb128 import uint_at, uleb_end, uleb_value
from .constants import DwarfError, _AT_HIGH_PC, _AT_LOW_PC, _AT_RANGES, _FLAGS, _MAX_RANGES
from .units import _Cu


class Ranges:
    """The range part of DwarfInfo."""

    def _ranges(self, cu: _Cu, attrs: dict) -> list[tuple[int, int]]:
        """Address ranges [lo, hi) of a DIE from low/high pc or DW_AT_ranges."""
        return ranges_of(self, cu, attrs)


def ranges_of(dw: Ranges, cu: _Cu, attrs: dict) -> list[tuple[int, int]]:
    """Ranges._ranges, a C call for the DIE walk."""
    low = attrs.get(_AT_LOW_PC)
    if low is not None and _AT_HIGH_PC in attrs:
        high = attrs[_AT_HIGH_PC]
        if high is None:
            return []
        return pc_range(low, high, attrs[_FLAGS][0])
    rng = attrs.get(_AT_RANGES)
    if rng is None:
        return []
    return listed_ranges(dw, cu, rng, attrs[_FLAGS][2])


def pc_range(low, high, high_is_addr: bool) -> list[tuple[int, int]]:
    """[low, high) of DW_AT_low_pc/high_pc; high_pc is a length unless an address."""
    if not high_is_addr:
        high = low + high
    return [(low, high)] if high > low else []


def listed_ranges(dw: Ranges, cu: _Cu, value, indexed: bool) -> list[tuple[int, int]]:
    """The ranges of DW_AT_ranges `value`: .debug_rnglists from DWARF 5 on, else .debug_ranges."""
    if cu.version >= 5:
        return rnglist(dw, cu, value, indexed)
    return _debug_ranges(dw, cu, value)


def rnglist(dw: Ranges, cu: _Cu, value: int, indexed: bool) -> list[tuple[int, int]]:
    """The ranges of DW_AT_ranges `value` in .debug_rnglists: an index (DW_FORM_rnglistx)
    when `indexed`, else an offset. Its numbers are read as C numbers when compiled (a list
    per inlined scope of an optimized program: 13 k in python's units a profile touches);
    those beyond 63 bits as 2**63 - 1 (uleb_value), no address."""
    sec = dw._s.get("rnglists")
    if sec is None:
        return []
    data = sec
    little = dw._e == "<"
    off = value
    if indexed:
        base = cu.rnglists_base if cu.rnglists_base is not None else 12
        off = base + uint_at(data, base + value * cu.off_size, cu.off_size, little)
    n = cu.addr_size
    width = 4 if n == 4 else 8  # what an address entry's value is read as
    base_addr = cu.low_pc or 0
    out = []
    pos = off
    while len(out) < _MAX_RANGES:
        kind = data[pos]
        pos += 1
        if kind == 0:  # end_of_list
            break
        if kind == 4:  # offset_pair, the commonest
            a = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            b = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            if b > a:
                out.append((base_addr + a, base_addr + b))
        elif kind == 1:  # base_addressx
            i = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            base_addr = dw._addrx(cu, i) or 0
        elif kind == 2:  # startx_endx
            i = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            j = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            start, stop = dw._addrx(cu, i), dw._addrx(cu, j)
            if start is not None and stop is not None and stop > start:
                out.append((start, stop))
        elif kind == 3:  # startx_length
            i = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            b = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            start = dw._addrx(cu, i)
            if start is not None and b:
                out.append((start, start + b))
        elif kind == 5:  # base_address
            base_addr = uint_at(data, pos, width, little)
            pos += n
        elif kind == 6:  # start_end
            start = uint_at(data, pos, width, little)
            stop = uint_at(data, pos + n, width, little)
            pos += 2 * n
            if stop > start:
                out.append((start, stop))
        elif kind == 7:  # start_length
            start = uint_at(data, pos, width, little)
            b = uleb_value(data, pos + n)
            pos = uleb_end(data, pos + n)
            if b:
                out.append((start, start + b))
        else:
            raise DwarfError("bad range list entry")
    return out


def _debug_ranges(dw: Ranges, cu: _Cu, off: int) -> list[tuple[int, int]]:
    sec = dw._s.get("ranges")
    if sec is None:
        return []
    data = sec
    n = cu.addr_size
    little = dw._e == "<"
    top = 0xFFFFFFFFFFFFFFFF >> (64 - 8 * n)
    base = cu.low_pc or 0
    out = []
    if not 0 <= off <= len(data):
        return []
    pos = off
    while pos + 2 * n <= len(data) and len(out) < _MAX_RANGES:
        a = uint_at(data, pos, n, little)
        b = uint_at(data, pos + n, n, little)
        pos += 2 * n
        if a == 0 and b == 0:
            break
        if a == top:
            base = b
        elif b > a:
            out.append((a + base, b + base))
    return out
