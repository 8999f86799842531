"""Units: their headers, abbreviation tables, unit DIEs, and which unit holds an address
(.debug_aranges, else the unit DIEs' ranges) or a DIE offset."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right, insort

from ...mergesort import stable_order
from ..leb128 import sleb, uint_at, uleb, uleb_end, uleb_value
from .constants import (
    DwarfError, _ADDR_FORMS, _AT_ADDR_BASE, _AT_COMP_DIR, _AT_DWO_NAME, _AT_ENTRY_PC,
    _AT_GNU_ADDR_BASE, _AT_GNU_DWO_ID, _AT_GNU_DWO_NAME, _AT_GNU_RANGES_BASE, _AT_HIGH_PC,
    _AT_LOW_PC, _AT_RANGES, _AT_RNGLISTS_BASE, _AT_STMT_LIST,
    _AT_STR_OFFSETS_BASE, _MALFORMED, _MAX_ABBREV_TABLES, _TAG_COMPILE_UNIT, _TAG_PARTIAL_UNIT,
    _TAG_SKELETON_UNIT,
)


class _Cu:
    """One unit header plus what has been derived from it so far."""

    __slots__ = ("offset", "end", "version", "addr_size", "off_size", "abbrev_off", "first_die",
                 "abbrevs", "top", "comp_dir", "low_pc", "addr_base", "str_offsets_base",
                 "rnglists_base", "ranges", "stmt_list", "walked", "subprograms", "nodes", "pending",
                 "deferred", "ndeferred", "prefixes", "runs", "dirs", "files", "lines", "line_addrs", "skips",
                 "sub_index", "kids", "dwo_name", "dwo_id")

    def __init__(self) -> None:
        self.abbrevs: dict | None = None
        self.skips: dict | None = None
        self.top: int | None = None
        self.addr_base: int | None = None
        self.str_offsets_base: int | None = None
        self.rnglists_base: int | None = None
        # a skeleton unit's .dwo name (a string form), and the id pairing a skeleton with
        # its split unit (split.py): a DWARF 5 header's, else DW_AT_GNU_dwo_id
        self.dwo_name = None
        self.dwo_id: int | None = None
        self.ranges: list[tuple[int, int]] | None = None
        self.walked = False
        self.files: list | None = None
        # the line table, by address: row addresses, and (file, line, column) per row
        # flattened, file -1 for an end_sequence; arrays, ~20 bytes a row instead of ~190 as
        # tuples (a -a recording's line tables held 870 k rows)
        self.lines: array | list | None = None
        self.line_addrs: array | list | None = None



class Units:
    """The unit part of DwarfInfo (its state is made by DwarfInfo.__init__)."""

    def _header_at(self, off: int) -> tuple[int, tuple | None]:
        """(end of the unit whose header is at `off`, or 0 when no unit can be there; the
        header as _unit keeps it when the unit is usable - compile, partial, skeleton or split
        compile with a known address size - else None: its end, version, address and offset
        sizes, abbreviation table offset, first DIE, and a skeleton or split unit's id).
        Raises IndexError or struct.error when the header runs past the section."""
        info = self._s["info"]
        length, version = self._length_version(info, off)
        off_size = 4
        pos = off + 4
        if length == 0xFFFFFFFF:
            length, version = self._wide_length_version(info, pos)
            pos += 8
            off_size = 8
        end = pos + length
        if length == 0 or end > len(info):
            return 0, None
        pos += 2
        unit_type = 1
        unit_id = None
        if version >= 5:
            if off_size == 4:
                unit_type, addr_size, abbrev_off = self._v5_fields(info, pos)
                pos += 6
            else:
                unit_type = info[pos]
                addr_size = info[pos + 1]
                (abbrev_off,) = struct.unpack_from(self._e + "Q", info, pos + 2)
                pos += 10
            if unit_type in (4, 5):  # skeleton / split compile: the id pairing them
                unit_id = uint_at(info, pos, 8, self._e == "<")
                pos += 8
            elif unit_type in (2, 6):  # type units: signature + type offset
                pos += 8 + off_size
        elif 2 <= version <= 4:
            (abbrev_off,) = struct.unpack_from(self._e + ("I" if off_size == 4 else "Q"),
                                               info, pos)
            addr_size = info[pos + off_size]
            pos += off_size + 1
        else:
            return end, None
        if unit_type in (1, 3, 4, 5) and addr_size in (2, 4, 8):
            return end, (end, version, addr_size, off_size, abbrev_off, pos, unit_id)
        return end, None

    def _units(self) -> list[int]:
        """Section offsets of the usable units, in section order, from a walk over every
        unit header. Only needed for what .debug_aranges does not answer (_cu_for) and for
        references into units not made yet (_cu_of_offset): libc has ~2000 units."""
        if self._unit_offsets is not None:
            return self._unit_offsets
        headers = self._headers
        n = len(self._s["info"])
        off = 0
        try:
            while off + 11 <= n:
                end, header = self._header_at(off)
                if not end:
                    break
                if header is not None:
                    headers[off] = header
                off = end
        except (IndexError, struct.error):
            pass
        self._unit_offsets = list(headers)
        return self._unit_offsets

    def _unit(self, off: int) -> _Cu | None:
        """The usable unit whose header is at `off` (as the walk or .debug_aranges names
        it), made on first use; None when no usable unit header is there."""
        cu = self._cus.get(off)
        if cu is None:
            header = self._headers.get(off)
            if header is None:
                try:
                    header = self._header_at(off)[1]
                except (IndexError, struct.error):
                    header = None
                if header is None:
                    return None
            cu = self._cus[off] = _Cu()
            cu.offset = off
            (cu.end, cu.version, cu.addr_size, cu.off_size, cu.abbrev_off, cu.first_die,
             cu.dwo_id) = header
            insort(self._cu_starts, off)
        return cu

    def _abbrevs(self, cu: _Cu) -> dict:
        if cu.abbrevs is not None:
            return cu.abbrevs
        tables = self._abbrev_tables
        table = tables.get(cu.abbrev_off)
        if table is None:
            table = parse_abbrevs(self._s["abbrev"], cu.abbrev_off)
            if len(tables) >= _MAX_ABBREV_TABLES:
                del tables[next(iter(tables))]
            tables[cu.abbrev_off] = table
        cu.abbrevs = table
        return table

    def _cu_top(self, cu: _Cu) -> None:
        """Decode the unit DIE: index bases first (strx/addrx/rnglistx values depend on
        them), then comp_dir and the unit's address ranges. Without the unit's table, with
        its one abbreviation: most units whose DIE is read only for its ranges (_unlisted,
        over every unit .debug_aranges leaves out: dwz's partial units in Debian's debug
        files) are never walked, and their whole tables were most of that read.

        A split unit inherits from its skeleton what its DIE lacks (DWARF 5 §3.1.3): the
        address base before any value is read, then its base address and compilation
        directory (_inherited, set by DwarfInfo._split_in)."""
        cu.top = None
        cu.addr_base = cu.str_offsets_base = cu.rnglists_base = None
        inherited = self._inherited
        if inherited is not None:
            cu.addr_base = inherited[0]
        info = self._s["info"]
        code, pos = uleb(info, cu.first_die)
        abbrevs = cu.abbrevs
        if abbrevs is None:  # a table another unit had parsed whole serves (dwz's units share)
            abbrevs = self._abbrev_tables.get(cu.abbrev_off)
        if abbrevs is None:
            abbrevs = parse_abbrevs(self._s["abbrev"], cu.abbrev_off, code)
        abbrev = abbrevs.get(code)
        if abbrev is None:
            raise DwarfError("unknown abbreviation")
        for attr, form, implicit in abbrev[2]:
            if form in (0x1B, 0x1F01):
                pos = uleb(info, pos)[1]
                continue
            if 0x29 <= form <= 0x2C:
                pos += form - 0x28
                continue
            value, pos = self._form(cu, form, implicit, info, pos)
            if attr in (_AT_ADDR_BASE, _AT_GNU_ADDR_BASE):
                cu.addr_base = value
            elif attr == _AT_STR_OFFSETS_BASE:
                cu.str_offsets_base = value
            elif attr in (_AT_RNGLISTS_BASE, _AT_GNU_RANGES_BASE):
                cu.rnglists_base = value
        tag, _, attrs, _ = self._read_die(cu, cu.first_die, abbrevs)
        cu.top = tag
        cu.comp_dir = self._string(cu, attrs.get(_AT_COMP_DIR))
        cu.low_pc = attrs.get(_AT_LOW_PC) or 0
        cu.stmt_list = attrs.get(_AT_STMT_LIST)
        if inherited is not None:
            cu.low_pc = cu.low_pc or inherited[1]
            cu.comp_dir = cu.comp_dir or inherited[2]
            if cu.stmt_list is None:  # file names: the .dwo's own line table
                cu.stmt_list = 0
        cu.dwo_name = attrs.get(_AT_DWO_NAME) or attrs.get(_AT_GNU_DWO_NAME)
        gnu_id = attrs.get(_AT_GNU_DWO_ID)  # DWARF 4: GCC's attribute, not the header
        if cu.dwo_id is None and isinstance(gnu_id, int):
            cu.dwo_id = gnu_id
        cu.ranges = self._ranges(cu, attrs)

    # -------------------------------------------------------------- CU lookup

    def _cu_index(self) -> tuple[list[int], list[int], list[int]]:
        """Address ranges -> unit, from .debug_aranges, as elfutils looks units up: a unit
        listed there keeps its unit DIE undecoded until an address falls into it, and the
        walk over every unit header (_units) is left to what aranges does not answer."""
        if self._index is None:
            self._index = _sorted_ranges(self._aranges())
        return self._index

    def _unlisted(self) -> tuple[list[int], list[int], list[int]]:
        """Address ranges -> unit for the units .debug_aranges does not list (all of them
        without it), from their unit DIEs."""
        if self._unlisted_index is None:
            aranges = self._aranges()
            entries = []
            for off in self._units():
                if off not in aranges:
                    cu = self._unit(off)
                    if cu is not None and self._top_usable(cu):
                        entries.extend((lo, hi, off) for lo, hi in cu.ranges)
            self._unlisted_index = _range_index(entries)
        return self._unlisted_index

    def _top_usable(self, cu: _Cu) -> bool:
        """Decode the unit DIE (once); whether the unit is a compile/partial/skeleton unit."""
        if cu.ranges is None:
            try:
                self._cu_top(cu)
            except _MALFORMED:
                cu.ranges = []
                cu.top = None
        return cu.top in (_TAG_COMPILE_UNIT, _TAG_PARTIAL_UNIT, _TAG_SKELETON_UNIT)

    def _aranges(self) -> dict[int, list[tuple[int, int]]]:
        """Unit offset -> [lo, hi) ranges from .debug_aranges (v2), read once; {} when
        absent or malformed, so that every unit DIE is decoded instead."""
        if self._listed is None:
            data = self._s.get("aranges")
            try:
                self._listed = {} if data is None else read_aranges(data, self._e == "<")
            except IndexError:
                self._listed = {}
        return self._listed

    def _cu_for(self, addr: int) -> _Cu | None:
        # a frame asks line_at, then scopes_at, of one address: its unit is found once
        if addr == self._last_cu_addr:
            return self._last_cu
        cu = self._cu_in(self._cu_index(), addr) or self._cu_in(self._unlisted(), addr)
        self._last_cu_addr = addr
        self._last_cu = cu
        return cu

    def _cu_in(self, index: tuple[list[int], list[int], list[int]], addr: int) -> _Cu | None:
        starts, ends, offsets = index
        i = bisect_right(starts, addr) - 1
        for j in range(i, max(i - 8, -1), -1):
            if addr < ends[j]:
                cu = self._unit(offsets[j])
                if cu is not None and self._top_usable(cu):
                    return cu
        return None

    def _cu_of_offset(self, off: int) -> _Cu | None:
        # a reference mostly points into a unit already made (its own): no walk for it
        starts = self._cu_starts
        i = bisect_right(starts, off) - 1
        cu = self._cus[starts[i]] if i >= 0 else None
        if cu is None or off >= cu.end:
            offsets = self._units()
            i = bisect_right(offsets, off) - 1
            if i < 0 or off >= self._headers[offsets[i]][0]:
                return None
            cu = self._unit(offsets[i])
        if cu.ranges is None:
            self._cu_top(cu)
        return cu


def parse_abbrevs(sec, pos: int, until: int = -1) -> dict:
    """The abbreviation table at `pos` of .debug_abbrev (`sec`): code -> (tag, has
    children, [(attribute, form, implicit constant)], range-attribute flags or None); with
    `until`, only as far as the abbreviation of that code.

    One pass (this runs for every abbreviation of every unit the CU index reads): LEB128
    numbers are read by C calls, range-attribute flags are gathered on the way. Tags, attributes
    and forms beyond 63 bits are read as 2**63 - 1 (uleb_value): none of them is one this
    package knows, as the numbers themselves are not."""
    data = sec
    table: dict[int, tuple[int, bool, list[tuple[int, int, int]], tuple | None]] = {}
    while True:
        code, pos = uleb(sec, pos)
        if code == 0:
            break
        if until >= 0 and code != until:
            # skipped, not decoded: GCC numbers a unit DIE's abbreviation last (by use)
            pos = uleb_end(data, pos) + 1  # tag, children
            while True:
                attr = uleb_value(data, pos)
                pos = uleb_end(data, pos)
                form = uleb_value(data, pos)
                pos = uleb_end(data, pos)
                if form == 0x21:
                    pos = uleb_end(data, pos)  # a signed LEB128 ends as an unsigned one
                if attr == 0 and form == 0:
                    break
            continue
        tag = uleb_value(data, pos)
        pos = uleb_end(data, pos)
        children = data[pos] != 0
        pos += 1
        specs = []
        ranged = high_addr = entry_addr = rnglistx = False
        while True:
            attr = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            form = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            implicit = 0
            if form == 0x21:
                implicit, pos = sleb(sec, pos)
            if attr == 0 and form == 0:
                break
            specs.append((attr, form, implicit))
            if attr == _AT_HIGH_PC:
                ranged = True
                high_addr = high_addr or form in _ADDR_FORMS
            elif attr == _AT_ENTRY_PC:
                ranged = True
                entry_addr = entry_addr or form in _ADDR_FORMS
            elif attr == _AT_RANGES:
                ranged = True
                rnglistx = rnglistx or form == 0x23
        flags = (high_addr, entry_addr, rnglistx) if ranged else None
        table[code] = (tag, children, specs, flags)
        if code == until:
            break
    return table


def read_aranges(sec, little: bool) -> dict[int, list[tuple[int, int]]]:
    """Units._aranges of the section `sec`; raises IndexError when a set runs past it."""
    data = sec
    n = len(data)
    out: dict[int, list[tuple[int, int]]] = {}
    off = 0
    while off + 4 <= n:
        if off + 12 > n:  # a set header cut short
            return {}
        length = uint_at(data, off, 4, little)
        if length == 0xFFFFFFFF:
            length = uint_at(data, off + 4, 8, little)
            version = uint_at(data, off + 12, 2, little)
            cu_off = uint_at(data, off + 14, 8, little)
            addr_size, seg_size = data[off + 22], data[off + 23]
            pos = off + 24
            if length > n:
                return {}
            end = off + 12 + length
        else:
            version = uint_at(data, off + 4, 2, little)
            cu_off = uint_at(data, off + 6, 4, little)
            addr_size, seg_size = data[off + 10], data[off + 11]
            end = off + 4 + length
            pos = off + 12
        if end > n or version != 2 or addr_size not in (4, 8) or seg_size:
            return {}
        ranges = out.setdefault(cu_off, [])
        pair = 2 * addr_size
        pos = off + -(-(pos - off) // pair) * pair  # tuples are aligned to their size
        stop = pos + max(0, end - pos) // pair * pair
        while pos < stop:
            lo = uint_at(data, pos, addr_size, little)
            size = uint_at(data, pos + addr_size, addr_size, little)
            pos += pair
            if lo == 0 and size == 0:
                break
            if size:  # one past the address space's end (a hostile size) ends at its end
                ranges.append((lo, min(lo + size, 0xFFFFFFFFFFFFFFFF)))
        off = end
    return out


def _sorted_ranges(listed: dict[int, list[tuple[int, int]]]) -> tuple[array, array, array]:
    """_range_index of the ranges of `listed` (_aranges: addresses below 2**64), in C
    arrays sorted in C when compiled: the tuples and their sort were ~6 k instructions a
    range (a Rust program's 4 k, libc's 6 k). Each unit's ranges come in order: mergesort's
    merge of those runs, in (start, end, unit) order."""
    n = 0
    for ranges in listed.values():
        n += len(ranges)
    los, his, offs = array("Q", bytes(8 * n)), array("Q", bytes(8 * n)), array("Q", bytes(8 * n))
    lo_view = los
    hi_view = his
    off_view = offs
    k = 0
    for off, ranges in listed.items():
        for lo, hi in ranges:
            lo_view[k] = lo
            hi_view[k] = hi
            off_view[k] = off
            k += 1
    order = stable_order(lo_view, hi_view, off_view, n)
    starts, ends, units = array("Q", bytes(8 * n)), array("Q", bytes(8 * n)), array("Q", bytes(8 * n))
    s_view = starts
    e_view = ends
    u_view = units
    k = 0
    while k < n:
        j = order[k]
        s_view[k] = lo_view[j]
        e_view[k] = hi_view[j]
        u_view[k] = off_view[j]
        k += 1
    return starts, ends, units


def _range_index(entries: list[tuple[int, int, int]]) -> tuple[list[int], list[int], list[int]]:
    """(starts, ends, unit offsets) of (lo, hi, unit offset) entries, ordered by start."""
    entries.sort()
    return [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries]


