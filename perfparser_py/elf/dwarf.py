"""DWARF line tables and inline scopes of one ELF image, read lazily per compilation unit.

`DwarfInfo.for_image(image)` finds the debug sections; `line_at(vaddr)` gives the line-table
row for an address and `scopes_at(vaddr)` the enclosing subprogram plus the inlined
subroutines containing it (SEMANTICS §10.3-§10.5). DWARF 2-5 are read, including the DWARF 5
string/address/range indirections. A CU is parsed only when an address inside it is asked for;
its DIE index, line table and resolved scopes are cached. Malformed or hostile DWARF makes the
affected lookup return None; nothing raises. When the image carries a persistent cache record
(`image.cache`), answers are kept there and the DWARF is only decoded for addresses it lacks.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right, insort
from functools import lru_cache
from itertools import chain
from operator import itemgetter

from .leb128 import sleb, uleb

# Tags
_TAG_COMPILE_UNIT = 0x11
_TAG_PARTIAL_UNIT = 0x3C
_TAG_SKELETON_UNIT = 0x4A
_TAG_SUBPROGRAM = 0x2E
_TAG_INLINED = 0x1D
_TAG_LEXICAL_BLOCK = 0x0B
# Tags the names of inlined functions are spelled from
_TAG_NAMESPACE = 0x39
_TAG_FORMAL_PARAMETER = 0x05
_TAG_UNSPECIFIED_PARAMETERS = 0x18
_TAG_TEMPLATE_TYPE_PARAM = 0x2F
_TAG_BASE_TYPE = 0x24
_TAG_TYPEDEF = 0x16
_TAG_SUBROUTINE_TYPE = 0x15
_CLASS_TAGS = frozenset((0x02, 0x04, 0x13, 0x17))  # class, enumeration, structure, union
_TAG_POINTER = 0x0F
_POINTERS = {_TAG_POINTER: "*", 0x10: "&", 0x42: "&&"}
_QUALIFIERS = {0x26: " const", 0x35: " volatile", 0x37: " restrict"}
# Types (array, class, enumeration, structure, subroutine, union): subtrees without scopes.
_TYPE_TAGS = frozenset((0x01, 0x02, 0x04, 0x13, 0x15, 0x17))
# Attributes
_AT_SIBLING = 0x01
_AT_NAME = 0x03
_AT_STMT_LIST = 0x10
_AT_LOW_PC = 0x11
_AT_HIGH_PC = 0x12
_AT_COMP_DIR = 0x1B
_AT_ABSTRACT_ORIGIN = 0x31
_AT_DECL_COLUMN = 0x39
_AT_DECL_FILE = 0x3A
_AT_DECL_LINE = 0x3B
_AT_SPECIFICATION = 0x47
_AT_ENTRY_PC = 0x52
_AT_RANGES = 0x55
_AT_CALL_COLUMN = 0x57
_AT_CALL_FILE = 0x58
_AT_CALL_LINE = 0x59
_AT_LINKAGE_NAME = 0x6E
_AT_STR_OFFSETS_BASE = 0x72
_AT_ADDR_BASE = 0x73
_AT_RNGLISTS_BASE = 0x74
_AT_MIPS_LINKAGE_NAME = 0x2007
_AT_LANGUAGE = 0x13
_AT_PRODUCER = 0x25
_AT_ARTIFICIAL = 0x34
_AT_EXTERNAL = 0x3F
_AT_TYPE = 0x49
_AT_OBJECT_POINTER = 0x64
_AT_GNU_ADDR_BASE = 0x2133
_AT_GNU_RANGES_BASE = 0x2132
# Forms whose values are addresses (everything else with a number is a constant/offset).
_ADDR_FORMS = frozenset((0x01, 0x1B, 0x29, 0x2A, 0x2B, 0x2C, 0x1F01))

# Bounds against hostile input.
_MAX_REF_CHAIN = 16
_MAX_RANGES = 100_000
_MAX_DEPTH = 1000
_MAX_ABBREV_TABLES = 1024  # parsed abbreviation tables kept for units to share (~50 KB each)

# Attribute sizes for skipping the DIEs the scope walk does not look into: fixed-size forms,
# forms as long as an offset, and forms whose length is read from the data.
_FIXED_FORMS = {0x0B: 1, 0x11: 1, 0x0C: 1, 0x05: 2, 0x12: 2, 0x06: 4, 0x13: 4, 0x07: 8,
                0x14: 8, 0x20: 8, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2A: 2,
                0x2B: 3, 0x2C: 4, 0x19: 0, 0x21: 0, 0x1E: 16, 0x1C: 4, 0x24: 8}
_OFFSET_FORMS = frozenset((0x0E, 0x1F, 0x17, 0x1D, 0x1F20, 0x1F21))
_LEB_FORMS = frozenset((0x0F, 0x15, 0x0D, 0x1A, 0x1F02, 0x1B, 0x1F01, 0x22, 0x23))
_VAR_FORMS = _LEB_FORMS | {0x08, 0x18, 0x09, 0x0A, 0x03, 0x04}

# Key in a DIE's attribute dict holding (high_pc is an address, entry_pc is an address,
# ranges is a rnglistx index) when any of those attributes is present.
_FLAGS = -1


class DwarfError(Exception):
    """Internal: malformed DWARF (never leaves this module)."""


# What malformed DWARF raises while being decoded (a mutated form can also turn a number
# into a tuple or a huge value): the lookup then answers None instead of failing the run.
_MALFORMED = (DwarfError, IndexError, struct.error, ValueError, KeyError, RecursionError,
              TypeError, OverflowError)


class Scope:
    """One subprogram or inlined-subroutine instance containing an address."""

    __slots__ = ("name", "entry_pc", "decl_file", "decl_line", "decl_column", "call_file",
                 "call_line", "call_column", "die_offset")

    def __init__(self, name: str | None, entry_pc: int | None, decl_file: bytes | None,
                 decl_line: int, decl_column: int, call_file: bytes | None, call_line: int,
                 call_column: int, die_offset: int) -> None:
        self.name = name
        self.entry_pc = entry_pc
        self.decl_file = decl_file
        self.decl_line = decl_line
        self.decl_column = decl_column
        self.call_file = call_file
        self.call_line = call_line
        self.call_column = call_column
        self.die_offset = die_offset

    def __repr__(self) -> str:
        return (f"Scope({self.name!r}, entry={self.entry_pc}, decl={self.decl_file!r}:"
                f"{self.decl_line}:{self.decl_column}, call={self.call_file!r}:"
                f"{self.call_line}:{self.call_column}, die={self.die_offset:#x})")


class _Cu:
    """One unit header plus what has been derived from it so far."""

    __slots__ = ("offset", "end", "version", "addr_size", "off_size", "abbrev_off", "first_die",
                 "abbrevs", "top", "comp_dir", "low_pc", "addr_base", "str_offsets_base",
                 "rnglists_base", "ranges", "stmt_list", "walked", "subprograms", "nodes", "pending",
                 "dirs", "files", "lines", "line_addrs", "skips")

    def __init__(self) -> None:
        self.abbrevs: dict | None = None
        self.skips: dict | None = None
        self.top: int | None = None
        self.addr_base: int | None = None
        self.str_offsets_base: int | None = None
        self.rnglists_base: int | None = None
        self.ranges: list[tuple[int, int]] | None = None
        self.walked = False
        self.files: list | None = None
        # the line table, by address: row addresses, and (file, line, column) per row
        # flattened, file -1 for an end_sequence; arrays, ~20 bytes a row instead of ~190 as
        # tuples (a -a recording's line tables held 870 k rows)
        self.lines: array | list | None = None
        self.line_addrs: array | list | None = None


# the .debug_* sections DwarfInfo reads
SECTIONS = ("info", "abbrev", "str", "line_str", "str_offsets", "addr", "rnglists", "ranges",
            "line", "aranges")


def prefetch_sections(image) -> None:
    """Start decompressing the sections DwarfInfo.decode will read (ElfImage.prefetch),
    unless the image's persistent cache record already answers without them."""
    rec = image.cache
    if rec is None or "dwarf" not in rec.data:
        image.prefetch([".debug_" + name for name in SECTIONS])


class DwarfInfo:
    """Line tables and inline scopes of one image's DWARF."""

    def __init__(self, secs: dict[str, memoryview], little: bool) -> None:
        self._s = secs
        self._e = "<" if little else ">"
        self._byteorder = "little" if little else "big"
        self._u32 = struct.Struct(self._e + "I").unpack_from
        self._u16 = struct.Struct(self._e + "H").unpack_from
        self._unit_offsets: list[int] | None = None
        self._headers: dict[int, tuple[int, int, int, int, int, int]] = {}
        self._cus: dict[int, _Cu] = {}
        # the abbreviation tables parsed last, by offset: units may share one (DWARF 7.5.3),
        # and a walk over the unit DIEs of every unit (_unlisted) keeps none of its own
        self._abbrev_tables: dict[int, dict] = {}
        self._cu_starts: list[int] = []  # offsets of self._cus, ascending
        self._index: tuple[list[int], list[int], list[int]] | None = None
        self._unlisted_index: tuple[list[int], list[int], list[int]] | None = None
        e = self._e
        self._length_version = struct.Struct(e + "IH").unpack_from
        self._wide_length_version = struct.Struct(e + "QH").unpack_from
        self._v5_fields = struct.Struct(e + "BBI").unpack_from  # type, address size, abbrevs
        self._dies: dict[int, tuple[int, bool, dict, int]] = {}
        self._names: dict[int, str | None] = {}
        self._closure_sigs: dict[int, str | None] = {}
        self._unit_flags: dict[int, tuple[bool, bool]] = {}
        self._scopes: dict[int, tuple[Scope, list[Scope]] | None] = {}
        self._line_cache: dict[int, tuple[bytes, int, int] | None] = {}
        self._parents: dict[int, int] = {}
        self._scope_objs: dict[int, Scope] = {}

    @staticmethod
    def for_image(image) -> DwarfInfo | RecordedDwarf | None:
        """DWARF of `image` (its separate debug file when attached); None without .debug_info.

        With a persistent cache record on the image, a RecordedDwarf answering from it."""
        rec = getattr(image, "cache", None)
        if rec is None:
            return DwarfInfo.decode(image)
        has = rec.data.get("dwarf")
        if has is False:
            return None
        info = None
        if has is not True:
            info = DwarfInfo.decode(image)
            rec.data["dwarf"] = info is not None
            rec.dirty = True
            if info is None:
                return None
        return RecordedDwarf(image, rec, info)

    @staticmethod
    def decode(image) -> DwarfInfo | None:
        """DwarfInfo over the image's debug sections; None without .debug_info."""
        secs: dict[str, memoryview] = {}
        for name in SECTIONS:
            try:
                sec = image.section(".debug_" + name)
            except Exception:  # noqa: BLE001 - a broken section is an absent section
                sec = None
            if sec is not None:
                secs[name] = sec[1]
        if "info" not in secs or "abbrev" not in secs:
            return None
        return DwarfInfo(secs, image.little_endian)

    # ------------------------------------------------------------------ public

    def line_at(self, vaddr: int) -> tuple[bytes, int, int] | None:
        """(absolute file path, line, column) of the line-table row for `vaddr`."""
        try:
            return self._line_cache[vaddr]
        except KeyError:
            pass
        try:
            result = self._line_at(vaddr)
        except _MALFORMED:
            result = None
        self._line_cache[vaddr] = result
        return result

    def scopes_at(self, vaddr: int) -> tuple[Scope, list[Scope]] | None:
        """(subprogram containing `vaddr`, inlined scopes containing it, outermost first)."""
        try:
            return self._scopes[vaddr]
        except KeyError:
            pass
        try:
            result = self._scopes_at(vaddr)
        except _MALFORMED:
            result = None
        self._scopes[vaddr] = result
        return result

    # ----------------------------------------------------------- primitives

    def _u(self, fmt: str, data, pos: int) -> int:
        return struct.unpack_from(self._e + fmt, data, pos)[0]

    def _cstr(self, data, pos: int) -> tuple[bytes, int]:
        # Every file name of every line table comes through here: the NUL is searched by
        # bytes.find over growing chunks rather than byte by byte.
        n = len(data)
        at = pos
        step = 64
        while at < n:
            chunk = bytes(data[at:at + step])
            hit = chunk.find(0)
            if hit >= 0:
                end = at + hit
                return (chunk[:hit] if at == pos else bytes(data[pos:end])), end + 1
            at += step
            step *= 4
        raise DwarfError("unterminated string")

    def _str_at(self, sec: str, off: int) -> bytes:
        data = self._s.get(sec)
        if data is None or off >= len(data):
            raise DwarfError(f"no .debug_{sec}")
        return self._cstr(data, off)[0]

    # ------------------------------------------------------------------- units

    def _header_at(self, off: int) -> tuple[int, tuple[int, int, int, int, int, int] | None]:
        """(end of the unit whose header is at `off`, or 0 when no unit can be there; the
        header as _unit keeps it when the unit is usable - compile, partial, skeleton or split
        compile with a known address size - else None). Raises IndexError or struct.error
        when the header runs past the section."""
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
        if version >= 5:
            if off_size == 4:
                unit_type, addr_size, abbrev_off = self._v5_fields(info, pos)
                pos += 6
            else:
                unit_type = info[pos]
                addr_size = info[pos + 1]
                (abbrev_off,) = struct.unpack_from(self._e + "Q", info, pos + 2)
                pos += 10
            if unit_type in (4, 5):  # skeleton / split compile: dwo id
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
            return end, (end, version, addr_size, off_size, abbrev_off, pos)
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
            cu.end, cu.version, cu.addr_size, cu.off_size, cu.abbrev_off, cu.first_die = header
            insort(self._cu_starts, off)
        return cu

    def _abbrevs(self, cu: _Cu) -> dict:
        if cu.abbrevs is not None:
            return cu.abbrevs
        tables = self._abbrev_tables
        table = tables.get(cu.abbrev_off)
        if table is None:
            table = self._parse_abbrevs(cu.abbrev_off)
            if len(tables) >= _MAX_ABBREV_TABLES:
                del tables[next(iter(tables))]
            tables[cu.abbrev_off] = table
        cu.abbrevs = table
        return table

    def _parse_abbrevs(self, pos: int) -> dict:
        data = self._s["abbrev"]
        table: dict[int, tuple[int, bool, list[tuple[int, int, int]], tuple | None]] = {}
        while True:
            code, pos = uleb(data, pos)
            if code == 0:
                break
            tag, pos = uleb(data, pos)
            children = data[pos] != 0
            pos += 1
            specs = []
            # one pass (this runs for every abbreviation of every unit the CU index reads):
            # single-byte LEB128 inline, range-attribute flags gathered on the way
            ranged = high_addr = entry_addr = rnglistx = False
            while True:
                attr = data[pos]
                if attr < 0x80:
                    pos += 1
                else:
                    attr, pos = uleb(data, pos)
                form = data[pos]
                if form < 0x80:
                    pos += 1
                else:
                    form, pos = uleb(data, pos)
                implicit = 0
                if form == 0x21:
                    implicit, pos = sleb(data, pos)
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
        return table

    def _form(self, cu: _Cu, form: int, implicit: int, data, pos: int) -> tuple[object, int]:
        """(value, next position) of one attribute value. Strings stay (form, raw) pairs
        resolved by _string; references are made section-absolute."""
        if form == 0x01:  # addr
            n = cu.addr_size
            return int.from_bytes(data[pos:pos + n], "little" if self._e == "<" else "big"), pos + n
        if form in (0x0B, 0x11, 0x0C):  # data1, ref1, flag
            v = data[pos]
            return (v + cu.offset if form == 0x11 else v), pos + 1
        if form in (0x05, 0x12):
            v = self._u("H", data, pos)
            return (v + cu.offset if form == 0x12 else v), pos + 2
        if form in (0x06, 0x13):
            v = self._u("I", data, pos)
            return (v + cu.offset if form == 0x13 else v), pos + 4
        if form in (0x07, 0x14, 0x20):
            v = self._u("Q", data, pos)
            return (v + cu.offset if form == 0x14 else v), pos + 8
        if form in (0x0F, 0x15):  # udata, ref_udata
            v, pos = uleb(data, pos)
            return (v + cu.offset if form == 0x15 else v), pos
        if form == 0x0D:
            return sleb(data, pos)
        if form == 0x08:  # string
            s, pos = self._cstr(data, pos)
            return (0x08, s), pos
        if form in (0x0E, 0x1F, 0x17, 0x1D, 0x1F20, 0x1F21):  # strp, line_strp, sec_offset, sup
            v = self._u("I" if cu.off_size == 4 else "Q", data, pos)
            pos += cu.off_size
            return ((form, v) if form in (0x0E, 0x1F) else v), pos
        if form == 0x10:  # ref_addr
            size = cu.addr_size if cu.version == 2 else cu.off_size
            v = self._u("I" if size == 4 else "Q", data, pos)
            return v, pos + size
        if form in (0x1A, 0x1F02):  # strx
            v, pos = uleb(data, pos)
            return (0x1A, v), pos
        if 0x25 <= form <= 0x28:  # strx1-4
            n = form - 0x24
            return (0x1A, int.from_bytes(data[pos:pos + n], "little")), pos + n
        if form in (0x1B, 0x1F01):  # addrx
            v, pos = uleb(data, pos)
            return self._addrx(cu, v), pos
        if 0x29 <= form <= 0x2C:  # addrx1-4
            n = form - 0x28
            return self._addrx(cu, int.from_bytes(data[pos:pos + n], "little")), pos + n
        if form in (0x22, 0x23):  # loclistx, rnglistx
            return uleb(data, pos)
        if form == 0x19:  # flag_present
            return 1, pos
        if form == 0x21:
            return implicit, pos
        if form == 0x18 or form == 0x09:  # exprloc, block
            n, pos = uleb(data, pos)
            return None, pos + n
        if form == 0x0A:
            return None, pos + 1 + data[pos]
        if form == 0x03:
            return None, pos + 2 + self._u("H", data, pos)
        if form == 0x04:
            return None, pos + 4 + self._u("I", data, pos)
        if form == 0x1E:  # data16
            return None, pos + 16
        if form == 0x1C:  # ref_sup4
            return None, pos + 4
        if form == 0x24:  # ref_sup8
            return None, pos + 8
        if form == 0x16:  # indirect
            real, pos = uleb(data, pos)
            if real == 0x16:
                raise DwarfError("nested DW_FORM_indirect")
            return self._form(cu, real, implicit, data, pos)
        raise DwarfError(f"unknown form {form:#x}")

    def _addrx(self, cu: _Cu, index: int) -> int | None:
        data = self._s.get("addr")
        if data is None:
            return None
        base = cu.addr_base if cu.addr_base is not None else 8
        pos = base + index * cu.addr_size
        if pos + cu.addr_size > len(data):
            return None
        return int.from_bytes(data[pos:pos + cu.addr_size], "little" if self._e == "<" else "big")

    def _string(self, cu: _Cu, value) -> bytes | None:
        if not isinstance(value, tuple):
            return None
        form, v = value
        if form == 0x08:
            return v
        if form == 0x0E:
            return self._str_at("str", v)
        if form == 0x1F:
            return self._str_at("line_str", v)
        # strx: through the CU's .debug_str_offsets slice
        offs = self._s.get("str_offsets")
        if offs is None:
            return None
        base = cu.str_offsets_base if cu.str_offsets_base is not None else 8
        pos = base + v * cu.off_size
        return self._str_at("str", self._u("I" if cu.off_size == 4 else "Q", offs, pos))

    def _read_die(self, cu: _Cu, off: int) -> tuple[int, bool, dict, int]:
        """(tag, has_children, {attr: value}, next offset); tag 0 for a null entry."""
        info = self._s["info"]
        code, pos = uleb(info, off)
        if code == 0:
            return 0, False, {}, pos
        abbrev = self._abbrevs(cu).get(code)
        if abbrev is None:
            raise DwarfError("unknown abbreviation")
        tag, children, specs, flags = abbrev
        attrs = {}
        form_value = self._form
        u32 = self._u32
        u16 = self._u16
        base = cu.offset
        off4 = cu.off_size == 4
        for attr, form, implicit in specs:
            # the commonest forms inline: a _form call costs more than their decoding
            if form == 0x13:  # ref4
                attrs[attr] = u32(info, pos)[0] + base
                pos += 4
            elif form == 0x0B:  # data1
                attrs[attr] = info[pos]
                pos += 1
            elif form == 0x19:  # flag_present
                attrs[attr] = 1
            elif form == 0x21:  # implicit_const
                attrs[attr] = implicit
            elif form == 0x0E and off4:  # strp
                attrs[attr] = (0x0E, u32(info, pos)[0])
                pos += 4
            elif form == 0x05:  # data2
                attrs[attr] = u16(info, pos)[0]
                pos += 2
            elif form == 0x0F and info[pos] < 0x80:  # one-byte udata
                attrs[attr] = info[pos]
                pos += 1
            elif form == 0x17 and off4:  # sec_offset
                attrs[attr] = u32(info, pos)[0]
                pos += 4
            else:
                attrs[attr], pos = form_value(cu, form, implicit, info, pos)
        if flags is not None:
            attrs[_FLAGS] = flags
        if pos > cu.end:
            raise DwarfError("DIE overruns its unit")
        return tag, children, attrs, pos

    def _cu_top(self, cu: _Cu) -> None:
        """Decode the unit DIE: index bases first (strx/addrx/rnglistx values depend on
        them), then comp_dir and the unit's address ranges."""
        cu.top = None
        cu.addr_base = cu.str_offsets_base = cu.rnglists_base = None
        info = self._s["info"]
        code, pos = uleb(info, cu.first_die)
        abbrev = self._abbrevs(cu).get(code)
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
        tag, _, attrs, _ = self._read_die(cu, cu.first_die)
        cu.top = tag
        cu.comp_dir = self._string(cu, attrs.get(_AT_COMP_DIR))
        cu.low_pc = attrs.get(_AT_LOW_PC) or 0
        cu.stmt_list = attrs.get(_AT_STMT_LIST)
        cu.ranges = self._ranges(cu, attrs)

    # ----------------------------------------------------------------- ranges

    def _ranges(self, cu: _Cu, attrs: dict) -> list[tuple[int, int]]:
        """Address ranges [lo, hi) of a DIE from low/high pc or DW_AT_ranges."""
        low = attrs.get(_AT_LOW_PC)
        if low is not None and _AT_HIGH_PC in attrs:
            high = attrs[_AT_HIGH_PC]
            if high is None:
                return []
            if not attrs[_FLAGS][0]:
                high = low + high
            return [(low, high)] if high > low else []
        rng = attrs.get(_AT_RANGES)
        if rng is None:
            return []
        if cu.version >= 5:
            return self._rnglist(cu, rng, attrs)
        return self._debug_ranges(cu, rng)

    def _debug_ranges(self, cu: _Cu, off: int) -> list[tuple[int, int]]:
        data = self._s.get("ranges")
        if data is None:
            return []
        n = cu.addr_size
        fmt = "I" if n == 4 else "Q"
        top = (1 << (8 * n)) - 1
        base = cu.low_pc or 0
        out = []
        pos = off
        while pos + 2 * n <= len(data) and len(out) < _MAX_RANGES:
            a = self._u(fmt, data, pos)
            b = self._u(fmt, data, pos + n)
            pos += 2 * n
            if a == 0 and b == 0:
                break
            if a == top:
                base = b
            elif b > a:
                out.append((a + base, b + base))
        return out

    def _rnglist(self, cu: _Cu, value: int, attrs: dict) -> list[tuple[int, int]]:
        data = self._s.get("rnglists")
        if data is None:
            return []
        # rnglistx values are indices (DW_FORM_rnglistx); sec_offset values are offsets.
        off = value
        if attrs[_FLAGS][2]:
            base = cu.rnglists_base if cu.rnglists_base is not None else 12
            off = base + self._u("I" if cu.off_size == 4 else "Q", data,
                                 base + value * cu.off_size)
        n = cu.addr_size
        fmt = "I" if n == 4 else "Q"
        base_addr = cu.low_pc or 0
        out = []
        pos = off
        while len(out) < _MAX_RANGES:
            kind = data[pos]
            pos += 1
            if kind == 0:  # end_of_list
                break
            if kind == 1:  # base_addressx
                i, pos = uleb(data, pos)
                base_addr = self._addrx(cu, i) or 0
            elif kind == 2:  # startx_endx
                i, pos = uleb(data, pos)
                j, pos = uleb(data, pos)
                a, b = self._addrx(cu, i), self._addrx(cu, j)
                if a is not None and b is not None and b > a:
                    out.append((a, b))
            elif kind == 3:  # startx_length
                i, pos = uleb(data, pos)
                length, pos = uleb(data, pos)
                a = self._addrx(cu, i)
                if a is not None and length:
                    out.append((a, a + length))
            elif kind == 4:  # offset_pair
                a, pos = uleb(data, pos)
                b, pos = uleb(data, pos)
                if b > a:
                    out.append((base_addr + a, base_addr + b))
            elif kind == 5:  # base_address
                base_addr = self._u(fmt, data, pos)
                pos += n
            elif kind == 6:  # start_end
                a = self._u(fmt, data, pos)
                b = self._u(fmt, data, pos + n)
                pos += 2 * n
                if b > a:
                    out.append((a, b))
            elif kind == 7:  # start_length
                a = self._u(fmt, data, pos)
                length, pos = uleb(data, pos + n)
                if length:
                    out.append((a, a + length))
            else:
                raise DwarfError("bad range list entry")
        return out

    # -------------------------------------------------------------- CU lookup

    def _cu_index(self) -> tuple[list[int], list[int], list[int]]:
        """Address ranges -> unit, from .debug_aranges, as elfutils looks units up: a unit
        listed there keeps its unit DIE undecoded until an address falls into it, and the
        walk over every unit header (_units) is left to what aranges does not answer."""
        if self._index is None:
            self._index = _range_index([(lo, hi, off) for off, listed in self._aranges().items()
                                        for lo, hi in listed])
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
                    if cu is None:
                        continue
                    fresh = cu.abbrevs is None
                    if self._top_usable(cu):
                        entries.extend((lo, hi, off) for lo, hi in cu.ranges)
                    if fresh:  # only its unit DIE was read: 40 000 tables held were 2.9 GB
                        cu.abbrevs = None
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
        """Unit offset -> [lo, hi) ranges from .debug_aranges (v2); {} when absent or
        malformed, so that every unit DIE is decoded instead."""
        data = self._s.get("aranges")
        if data is None:
            return {}
        e = self._e
        # one unpack per set header (libc lists ~2000 units, one short set each)
        head = struct.Struct(e + "IHIBB").unpack_from
        pairs = {4: struct.Struct(e + "II").iter_unpack, 8: struct.Struct(e + "QQ").iter_unpack}
        out: dict[int, list[tuple[int, int]]] = {}
        off, n = 0, len(data)
        try:
            while off + 4 <= n:
                if off + 12 > n:  # a set header cut short
                    return {}
                length, version, cu_off, addr_size, seg_size = head(data, off)
                if length == 0xFFFFFFFF:
                    (length, version, cu_off) = struct.unpack_from(e + "QHQ", data, off + 4)
                    addr_size, seg_size = data[off + 22], data[off + 23]
                    end = off + 12 + length
                    pos = off + 24
                else:
                    end = off + 4 + length
                    pos = off + 12
                if end > n or version != 2 or addr_size not in (4, 8) or seg_size:
                    return {}
                ranges = out.setdefault(cu_off, [])
                pair = 2 * addr_size
                pos = off + -(-(pos - off) // pair) * pair  # tuples are aligned to their size
                stop = pos + max(0, end - pos) // pair * pair
                for lo, size in pairs[addr_size](data[pos:stop]):
                    if lo == 0 and size == 0:
                        break
                    if size:
                        ranges.append((lo, lo + size))
                off = end
        except (struct.error, IndexError):
            return {}
        return out

    def _cu_for(self, addr: int) -> _Cu | None:
        return self._cu_in(self._cu_index(), addr) or self._cu_in(self._unlisted(), addr)

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

    # -------------------------------------------------------------- DIE tree

    def _walk(self, cu: _Cu) -> None:
        """One pass over a unit's DIEs: top-level subprograms with their ranges, the
        inlined/lexical scope nodes under each, and parents of scope-like DIEs. The
        attributes of the other DIEs (types, variables, parameters, ...) are skipped, not
        decoded.

        A profile touches few of a unit's functions, and most of a unit's bytes are types
        and declarations, so the pass jumps over a subtree whose DW_AT_sibling says where it
        ends when the subtree is a subprogram's (walked when an address falls into it) or a
        type's or declaration's (holding no scopes; walked only when a parent inside it is
        asked for). Compilers put no inlined or lexical scope and no subprogram with code
        inside a type or a declaration."""
        if cu.walked:
            return
        cu.walked = True
        cu.subprograms = []
        cu.nodes = {}
        cu.pending = {}
        self._walk_dies(cu, cu.first_die, cu.end, [])

    def _walk_pending(self, cu: _Cu, off: int) -> None:
        """Walk the subtree of the DIE at `off` that a walk jumped over (once); it may jump
        the subtrees inside in turn."""
        pending = cu.pending.pop(off, None)
        if pending is not None:
            start, end, stack = pending
            self._walk_dies(cu, start, end, stack)

    def _walk_dies(self, cu: _Cu, pos: int, end: int,
                   stack: list[tuple[int, int, int]]) -> None:
        """The walk from `pos` to `end` with `stack` the open DIEs with children:
        (offset, subprogram offset | 0 none | -1 nested, node index). One long loop: it runs
        for every DIE a profile reaches."""
        parents = self._parents
        read = self._read_die
        skips = self._skips(cu)
        info = self._s["info"]
        unit_end = cu.end
        base = cu.offset
        while pos < end:
            off = pos
            code = info[pos]
            if code < 0x80:
                pos += 1
            else:
                code, pos = uleb(info, pos)
            if code == 0:
                if stack:
                    stack.pop()
                continue
            entry = skips.get(code)
            if entry is None:
                raise DwarfError("unknown abbreviation")
            tag, children, plan, sibling_at = entry
            if stack:
                parent_off, sub, node = stack[-1]
            else:
                parent_off, sub, node = -1, 0, -1
            sibling = None
            if plan is None or (tag == _TAG_SUBPROGRAM and sub == 0) or (
                    sub > 0 and (tag == _TAG_INLINED or tag == _TAG_LEXICAL_BLOCK)):
                tag, children, attrs, pos = read(cu, off)
                if tag == _TAG_SUBPROGRAM:
                    sibling = attrs.get(_AT_SIBLING)
            else:
                if sibling_at is not None and tag in _TYPE_TAGS:
                    sibling = base + int.from_bytes(info[pos + sibling_at:pos + sibling_at + 4],
                                                    self._byteorder)
                pos = pos + plan if type(plan) is int else self._skip(plan, info, pos)
                if pos > unit_end:
                    raise DwarfError("DIE overruns its unit")
                attrs = None
            if parent_off >= 0 and (children or tag == _TAG_SUBPROGRAM or tag == _TAG_INLINED):
                parents[off] = parent_off
            if tag == _TAG_SUBPROGRAM:
                if sub == 0:
                    ranges = self._ranges(cu, attrs)
                    if ranges:
                        cu.subprograms.append((off, ranges))
                        cu.nodes[off] = []
                        sub, node = off, -1
                    else:
                        sub = -1
                else:
                    sub = -1
            elif sub > 0 and (tag == _TAG_INLINED or tag == _TAG_LEXICAL_BLOCK):
                has_pc = _AT_LOW_PC in attrs or _AT_RANGES in attrs
                nodes = cu.nodes[sub]
                nodes.append((off, node, self._ranges(cu, attrs) if has_pc else None,
                              tag == _TAG_INLINED))
                node = len(nodes) - 1
            if children:
                if len(stack) >= _MAX_DEPTH:
                    raise DwarfError("DIE tree too deep")
                if type(sibling) is int and pos < sibling <= end:
                    cu.pending[off] = (pos, sibling, stack + [(off, sub, node)])
                    pos = sibling
                    continue
                stack.append((off, sub, node))

    def _skips(self, cu: _Cu) -> dict[int, tuple[int, bool, tuple | None, int | None]]:
        """abbreviation code -> (tag, has children, skip plan or None to decode fully,
        position of a DW_FORM_ref4 DW_AT_sibling among the fixed-size leading values).

        A plan is the byte count of fixed-size values only, or ((fixed bytes,
        variable-length form or 0), ...) for the unit's sizes;
        DW_FORM_indirect and unknown forms get None, so they fail as in _read_die."""
        if cu.skips is not None:
            return cu.skips
        addr, offset = cu.addr_size, cu.off_size
        ref_addr = addr if cu.version == 2 else offset
        out = {}
        for code, (tag, children, specs, _flags) in self._abbrevs(cu).items():
            plan: list[tuple[int, int]] | None = []
            fixed = 0
            sibling_at = None
            for attr, form, _implicit in specs:
                if attr == _AT_SIBLING and form == 0x13 and not plan:
                    sibling_at = fixed
                size = _FIXED_FORMS.get(form)
                if size is None:
                    if form == 0x01:
                        size = addr
                    elif form in _OFFSET_FORMS:
                        size = offset
                    elif form == 0x10:
                        size = ref_addr
                    elif form in _VAR_FORMS:
                        plan.append((fixed, form))
                        fixed = 0
                        continue
                    else:
                        plan = None
                        break
                fixed += size
            if plan:
                plan.append((fixed, 0))
                plan = tuple(plan)
            elif plan is not None:  # fixed-size values only (most DIEs): a plain byte count
                plan = fixed
            out[code] = (tag, children, plan, sibling_at)
        cu.skips = out
        return out

    def _skip(self, plan: tuple, info, pos: int) -> int:
        """Position after the attribute values described by a skip plan."""
        for fixed, form in plan:
            pos += fixed
            if not form:
                continue
            if form in _LEB_FORMS:
                while info[pos] >= 0x80:
                    pos += 1
                pos += 1
            elif form == 0x08:
                pos = self._cstr(info, pos)[1]
            elif form == 0x18 or form == 0x09:
                n, pos = uleb(info, pos)
                pos += n
            elif form == 0x0A:
                pos += 1 + info[pos]
            elif form == 0x03:
                pos += 2 + self._u("H", info, pos)
            else:  # 0x04
                pos += 4 + self._u("I", info, pos)
        return pos

    def _die(self, off: int) -> tuple[_Cu, int, dict]:
        """(unit, tag, attributes) of the DIE at section offset `off`."""
        hit = self._dies.get(off)
        if hit is not None:
            return hit
        cu = self._cu_of_offset(off)
        if cu is None or off < cu.first_die:
            raise DwarfError("reference outside every unit")
        tag, _, attrs, _ = self._read_die(cu, off)
        hit = (cu, tag, attrs)
        self._dies[off] = hit
        return hit

    def _parent(self, off: int) -> int | None:
        cu = self._cu_of_offset(off)
        if cu is None:
            return None
        self._walk(cu)
        parent = self._parents.get(off)
        while parent is None:  # maybe inside a subtree a walk jumped over
            hit = next((o for o, (start, end, _) in cu.pending.items() if start <= off < end),
                       None)
            if hit is None:
                break
            self._walk_pending(cu, hit)
            parent = self._parents.get(off)
        return parent

    def _origin_chain(self, off: int) -> list[int]:
        """`off` followed by its DW_AT_abstract_origin / DW_AT_specification targets."""
        chain = [off]
        seen = {off}
        while len(chain) < _MAX_REF_CHAIN:
            attrs = self._die(chain[-1])[2]
            nxt = attrs.get(_AT_ABSTRACT_ORIGIN)
            if nxt is None:
                nxt = attrs.get(_AT_SPECIFICATION)
            if not isinstance(nxt, int) or nxt in seen:
                break
            seen.add(nxt)
            chain.append(nxt)
        return chain

    def _integrate(self, off: int, attr: int) -> tuple[_Cu, object] | None:
        """(unit, value) of `attr` on the DIE or the first DIE of its origin chain having it."""
        for o in self._origin_chain(off):
            cu, _, attrs = self._die(o)
            if attr in attrs:
                return cu, attrs[attr]
        return None

    # ------------------------------------------------------------------ names
    # Names of inlined functions (those not inlined are named by their ELF symbol), spelled
    # as c++filt prints the symbol they would have: `ns::(anonymous namespace)::f`,
    # `main::{lambda(int)#1}::operator()`, `f<int>(int)::Local::g`.

    def _text(self, cu: _Cu, value) -> str | None:
        raw = self._string(cu, value)
        return None if raw is None else raw.decode("utf-8", "replace")

    def _linkage_text(self, cu: _Cu, attrs: dict) -> str | None:
        value = attrs.get(_AT_LINKAGE_NAME)
        if value is None:
            value = attrs.get(_AT_MIPS_LINKAGE_NAME)
        return self._text(cu, value) if value is not None else None

    def _linkage(self, cu: _Cu, attrs: dict) -> str | None:
        text = self._linkage_text(cu, attrs)
        return _demangle(text) if text else None

    def _qualified(self, off: int) -> str | None:
        """Qualified, demangled name of a DIE (SEMANTICS §10.5), cached per DIE."""
        if off in self._names:
            return self._names[off]
        self._names[off] = None  # guard against reference cycles
        chain = self._origin_chain(off)
        name = None
        for o in chain:
            cu, _, attrs = self._die(o)
            name = self._linkage(cu, attrs)
            if name:
                break
        else:
            for o in chain:
                cu, _, attrs = self._die(o)
                base = self._text(cu, attrs.get(_AT_NAME))
                if base:
                    try:
                        name = self._prefix(o) + base
                    except _MALFORMED:  # scopes that refer to each other: the bare name
                        name = base
                    break
        self._names[off] = name
        return name

    def _prefix(self, off: int) -> str:
        """`a::b::` for the scopes declaring the DIE at `off`, innermost last."""
        parts: list[str] = []
        cur = self._parent(off)
        steps = 0
        while cur is not None and steps < _MAX_DEPTH:
            steps += 1
            cu, tag, attrs = self._die(cur)
            if tag in (_TAG_COMPILE_UNIT, _TAG_PARTIAL_UNIT, _TAG_SKELETON_UNIT):
                break
            text, complete = self._scope_text(cur, cu, tag, attrs)
            if text:
                parts.append(text)
            if complete:
                break
            # a definition out of its declaration's scope: continue from the declaration
            spec = attrs.get(_AT_SPECIFICATION)
            if spec is None:
                spec = attrs.get(_AT_ABSTRACT_ORIGIN)
            if isinstance(spec, int) and spec != cur:
                cur = spec if not text else self._parent(spec)
            else:
                cur = self._parent(cur)
        return "".join(p + "::" for p in reversed(parts))

    def _scope_text(self, off: int, cu: _Cu, tag: int, attrs: dict) -> tuple[str | None, bool]:
        """How one enclosing scope is spelled, and whether that spelling is already fully
        qualified (a demangled linkage name)."""
        name = self._text(cu, attrs.get(_AT_NAME))
        if tag == _TAG_SUBPROGRAM:
            linkage = self._linkage_text(cu, attrs)
            if linkage:
                return _demangle_scope(linkage), True
            if name and not attrs.get(_AT_EXTERNAL) and self._unit_facts(cu)[0]:
                # a C++ function with internal linkage has no linkage name in GCC's DWARF;
                # as the scope of a local entity its symbol spells the parameters (those of
                # C functions, `extern "C"` ones and main have none)
                return name + self._signature(off), False
            return name, False
        if tag == _TAG_NAMESPACE:
            return name or "(anonymous namespace)", False
        if tag in _CLASS_TAGS and not name:
            linkage = self._linkage_text(cu, attrs)  # a typedef'd unnamed struct: `5div_t`
            if linkage:
                return _demangle_type(linkage), True
            return self._closure_name(off), False
        return name, False

    def _children(self, off: int) -> list[tuple[int, int, _Cu, dict]]:
        """(offset, tag, unit, attributes) of the direct children of the DIE at `off`."""
        cu = self._cu_of_offset(off)
        if cu is None:
            return []
        _, has_children, _, pos = self._read_die(cu, off)
        out: list[tuple[int, int, _Cu, dict]] = []
        depth = 0 if has_children else -1
        while depth >= 0 and pos < cu.end and len(out) < _MAX_RANGES:
            here = pos
            tag, has_children, attrs, pos = self._read_die(cu, pos)
            if tag == 0:
                depth -= 1
                continue
            if depth == 0:
                out.append((here, tag, cu, attrs))
                sibling = attrs.get(_AT_SIBLING)
                if has_children and isinstance(sibling, int) and pos <= sibling <= cu.end:
                    pos = sibling
                    continue
            if has_children:
                depth += 1
        return out

    def _closure_name(self, off: int) -> str | None:
        """`{lambda(int)#2}` for a lambda's closure type (GCC: an unnamed class with
        `<lambda>` constructors), None for another unnamed class. The number counts the
        closures of the same context (function) before it, in declaration order: all of
        them for GCC before 13 (ABI 17), those with the same parameter list otherwise."""
        sig = self._closure_signature(off)
        if sig is None:
            return None
        context = self._parent(off)
        while context is not None and self._die(context)[1] == _TAG_LEXICAL_BLOCK:
            context = self._parent(context)
        number = 1
        if context is not None:
            per_scope = self._unit_facts(self._die(off)[0])[1]
            for other in self._closures_in(context):
                if other == off:
                    break
                if per_scope or self._closure_signature(other) == sig:
                    number += 1
        return f"{{lambda{sig}#{number}}}"

    def _closures_in(self, off: int) -> list[int]:
        """Offsets of the closure types declared in a function, outside nested functions."""
        found: list[int] = []
        todo = [off]
        while todo and len(found) < _MAX_RANGES:
            for child, tag, _, attrs in self._children(todo.pop()):
                if tag == _TAG_LEXICAL_BLOCK:
                    todo.append(child)
                elif tag in _CLASS_TAGS and _AT_NAME not in attrs \
                        and self._closure_signature(child) is not None:
                    found.append(child)
        found.sort()
        return found

    def _closure_signature(self, off: int) -> str | None:
        """`(int, auto:1)`: the parameters of a closure's operator(), None if not a closure."""
        if off in self._closure_sigs:
            return self._closure_sigs[off]
        self._closure_sigs[off] = None  # guard against reference cycles
        closure = False
        call = None
        for child, tag, cu, attrs in self._children(off):
            if tag != _TAG_SUBPROGRAM:
                continue
            name = self._text(cu, attrs.get(_AT_NAME)) or ""
            if name in ("<lambda>", "~<lambda>"):
                closure = True
            elif call is None and name.startswith("operator()"):
                call = child
        sig = self._signature(call, generic=True, cv=False) if closure and call else None
        self._closure_sigs[off] = sig
        return sig

    def _signature(self, off: int, generic: bool = False, cv: bool = True) -> str:
        """`(int, Foo const&) const`: a function's parameter list as a demangler prints it.
        With `generic`, a parameter of a generic lambda's instance is spelled by its
        `auto:N` template parameter, as the lambda's mangled signature has it."""
        params: list[str] = []
        autos: dict[int, str] = {}
        this_type = None
        _, _, attrs = self._die(off)
        this = attrs.get(_AT_OBJECT_POINTER)
        for child, tag, cu, attrs in self._children(off):
            if tag == _TAG_TEMPLATE_TYPE_PARAM and generic:
                name = self._text(cu, attrs.get(_AT_NAME)) or ""
                if name.startswith("auto:") and isinstance(attrs.get(_AT_TYPE), int):
                    autos.setdefault(attrs[_AT_TYPE], name)
            elif tag == _TAG_FORMAL_PARAMETER:
                if child == this or attrs.get(_AT_ARTIFICIAL):  # `this`: the cv-qualifiers
                    if this_type is None and (this is None or child == this):
                        this_type = attrs.get(_AT_TYPE)
                    continue
                ptype = attrs.get(_AT_TYPE)
                params.append(autos.get(ptype) or self._type_text(ptype))
            elif tag == _TAG_UNSPECIFIED_PARAMETERS:
                params.append("...")
        text = "(" + ", ".join(params) + ")"
        if cv and isinstance(this_type, int):
            # `this` is `C const* const` for a const member: the pointee's qualifiers count
            quals: list[str] = []
            pointer_seen = False
            for _ in range(8):
                _, qtag, qattrs = self._die(this_type)
                if qtag == _TAG_POINTER:
                    pointer_seen = True
                elif qtag in _QUALIFIERS:
                    if pointer_seen:
                        quals.append(_QUALIFIERS[qtag])
                elif pointer_seen:
                    break
                this_type = qattrs.get(_AT_TYPE)
                if not isinstance(this_type, int):
                    break
            text += "".join(q for q in (" const", " volatile") if q in quals)
        return text

    def _type_text(self, off, depth: int = 0) -> str:
        """A DWARF type as a demangler spells it: `unsigned long`, `char const*`, `ns::C&`;
        typedefs are seen through (manglings hold the type, not its typedef)."""
        if not isinstance(off, int):
            return "void"
        if depth > 32:
            raise DwarfError("type nested too deep")
        cu, tag, attrs = self._die(off)
        inner = attrs.get(_AT_TYPE)
        name = self._text(cu, attrs.get(_AT_NAME))
        if tag == _TAG_BASE_TYPE:
            return _BASE_TYPE_NAMES.get(name, name or "?")
        if tag in _POINTERS:
            suffix = _POINTERS[tag]
            if isinstance(inner, int) and self._die(inner)[1] == _TAG_SUBROUTINE_TYPE:
                ret = self._die(inner)[2].get(_AT_TYPE)
                return (f"{self._type_text(ret, depth + 1)} ({suffix})"
                        f"{self._signature(inner, cv=False)}")
            return self._type_text(inner, depth + 1) + suffix
        if tag in _QUALIFIERS:
            return self._type_text(inner, depth + 1) + _QUALIFIERS[tag]
        if tag == _TAG_TYPEDEF:
            return self._type_text(inner, depth + 1)
        if tag in _CLASS_TAGS:
            if name:
                return self._prefix(off) + name
            linkage = self._linkage_text(cu, attrs)
            if linkage:
                return _demangle_type(linkage)
            return self._prefix(off) + (self._closure_name(off) or "{unnamed type}")
        return name or "?"

    def _unit_facts(self, cu: _Cu) -> tuple[bool, bool]:
        """(the unit is C++, its lambdas are numbered per scope as GCC < 13 does)."""
        facts = self._unit_flags.get(cu.offset)
        if facts is None:
            attrs = self._read_die(cu, cu.first_die)[2]
            language = attrs.get(_AT_LANGUAGE)
            producer = self._text(cu, attrs.get(_AT_PRODUCER)) or ""
            facts = (language in _CXX_LANGUAGES, _gcc_numbers_lambdas_per_scope(producer))
            self._unit_flags[cu.offset] = facts
        return facts

    # ----------------------------------------------------------------- scopes

    def _scopes_at(self, addr: int) -> tuple[Scope, list[Scope]] | None:
        cu = self._cu_for(addr)
        if cu is None:
            return None
        self._walk(cu)
        sub = next((o for o, ranges in cu.subprograms if _contains(ranges, addr)), None)
        if sub is None:
            return None
        self._walk_pending(cu, sub)
        included: list[bool] = []
        chain = []
        for off, parent, ranges, inlined in cu.nodes[sub]:
            ok = (parent < 0 or included[parent]) and (ranges is None or _contains(ranges, addr))
            included.append(ok)
            if ok and inlined:
                chain.append(off)
        return self._scope(sub, False), [self._scope(o, True) for o in chain]

    def _scope(self, off: int, inlined: bool) -> Scope:
        hit = self._scope_objs.get(off)
        if hit is not None:
            return hit
        cu, _, attrs = self._die(off)
        decl_file = None
        found = self._integrate(off, _AT_DECL_FILE)
        if found is not None and isinstance(found[1], int):
            decl_file = self._file_path(found[0], found[1])
        found = self._integrate(off, _AT_DECL_LINE)
        decl_line = found[1] if found is not None and isinstance(found[1], int) else 0
        found = self._integrate(off, _AT_DECL_COLUMN)
        decl_column = found[1] if found is not None and isinstance(found[1], int) else 0
        call_file = None
        call_line = call_column = -1
        if inlined:
            idx = attrs.get(_AT_CALL_FILE)
            if isinstance(idx, int):
                call_file = self._file_path(cu, idx)
            else:  # upstream makes an absent call file the bare "<comp_dir>/"
                call_file = (cu.comp_dir or b"") + b"/"
            v = attrs.get(_AT_CALL_LINE)
            call_line = v if isinstance(v, int) else -1
            v = attrs.get(_AT_CALL_COLUMN)
            call_column = v if isinstance(v, int) else -1
        scope = Scope(self._qualified(off), self._entry_pc(cu, attrs), decl_file, decl_line,
                      decl_column, call_file, call_line, call_column, off)
        self._scope_objs[off] = scope
        return scope

    def _entry_pc(self, cu: _Cu, attrs: dict) -> int | None:
        entry = attrs.get(_AT_ENTRY_PC)
        low = attrs.get(_AT_LOW_PC)
        if isinstance(entry, int):
            if attrs[_FLAGS][1]:
                return entry
            # DWARF 5: a constant entry_pc is an offset from the DIE's base address
            if low is None:
                ranges = self._ranges(cu, attrs)
                low = ranges[0][0] if ranges else None
            return None if low is None else low + entry
        return low if isinstance(low, int) else None

    # ------------------------------------------------------------- line table

    def _line_at(self, addr: int) -> tuple[bytes, int, int] | None:
        cu = self._cu_for(addr)
        if cu is None:
            return None
        self._line_table(cu)
        i = bisect_right(cu.line_addrs, addr) - 1
        if i < 0:
            return None
        lines = cu.lines
        file = lines[3 * i]
        if file < 0:  # an end_sequence row
            return None
        path = self._file_path(cu, file)
        if path is None:
            return None
        return path, lines[3 * i + 1], lines[3 * i + 2]

    def _file_path(self, cu: _Cu, idx: int) -> bytes | None:
        """Absolute path of line-table file `idx` as upstream builds it (not normalised)."""
        self._line_table(cu)
        files = cu.files
        if not 0 <= idx < len(files) or files[idx] is None:
            return None
        name, d = files[idx]
        if name.startswith(b"/"):
            path = name
        else:
            dirs = cu.dirs
            directory = dirs[d] if 0 <= d < len(dirs) else None
            path = directory + b"/" + name if directory else name
            if d == 0 and directory:
                # entry 0 is the compilation directory itself (DWARF 5 §6.2.4.1, and what
                # index 0 means in DWARF 2-4): a relative one, as `-fdebug-prefix-map=DIR=.`
                # makes (Debian's packages: `./elf`), is not prefixed with itself again
                return path
        if not path.startswith(b"/") and cu.comp_dir:
            path = cu.comp_dir + b"/" + path
        return path

    def _line_table(self, cu: _Cu) -> None:
        if cu.lines is not None:
            return
        cu.lines, cu.line_addrs, cu.dirs, cu.files = array("i"), array("Q"), [], []
        data = self._s.get("line")
        if data is None or not isinstance(cu.stmt_list, int):
            return
        try:
            rows = self._line_program(cu, data, cu.stmt_list)
        except _MALFORMED:
            return
        # elfutils order: by address, an end_sequence before a row at the same address,
        # otherwise program order.
        rows.sort()
        cu.line_addrs = _packed(lambda: map(itemgetter(0), rows), "Q")
        cu.lines = _packed(lambda: chain.from_iterable(map(itemgetter(3, 4, 5), rows)), "iq")

    def _line_header_entries(self, cu: _Cu, data, pos: int) -> tuple[list, int]:
        """DWARF 5 directory/file entry list: ([(path, directory index)], next position)."""
        nfmt = data[pos]
        pos += 1
        fmts = []
        for _ in range(nfmt):
            ctype, pos = uleb(data, pos)
            form, pos = uleb(data, pos)
            fmts.append((ctype, form))
        count, pos = uleb(data, pos)
        if count > len(data):
            raise DwarfError("entry count larger than the section")
        out = []
        for _ in range(count):
            path = b""
            d = 0
            for ctype, form in fmts:
                value, pos = self._form(cu, form, 0, data, pos)
                if ctype == 1:
                    path = self._string(cu, value) or b""
                elif ctype == 2 and isinstance(value, int):
                    d = value
            out.append((path, d))
        return out, pos

    def _line_program(self, cu: _Cu, data, off: int) -> list[tuple]:
        u = self._u
        length = u("I", data, off)
        pos = off + 4
        off_size = 4
        if length == 0xFFFFFFFF:
            length = u("Q", data, pos)
            pos += 8
            off_size = 8
        end = pos + length
        if end > len(data):
            raise DwarfError("truncated line table")
        version = u("H", data, pos)
        pos += 2
        if not 2 <= version <= 5:
            raise DwarfError("unsupported line table version")
        if version >= 5:
            pos += 2  # address and segment selector sizes (set_address carries its length)
        header_length = u("I" if off_size == 4 else "Q", data, pos)
        pos += off_size
        program = pos + header_length
        min_inst = data[pos]
        pos += 1
        max_ops = 1
        if version >= 4:
            max_ops = data[pos] or 1
            pos += 1
        default_is_stmt = data[pos]
        line_base = struct.unpack_from("b", data, pos + 1)[0]
        line_range = data[pos + 2]
        opcode_base = data[pos + 3]
        pos += 4
        if line_range == 0:
            raise DwarfError("line_range 0")
        std_lengths = bytes(data[pos:pos + opcode_base - 1])
        pos += opcode_base - 1
        if version >= 5:
            dirs, pos = self._line_header_entries(cu, data, pos)
            cu.dirs = [d[0] for d in dirs]
            cu.files, pos = self._line_header_entries(cu, data, pos)
        else:
            cu.dirs = [cu.comp_dir or b""]
            while data[pos]:
                d, pos = self._cstr(data, pos)
                cu.dirs.append(d)
            pos += 1
            cu.files = [None]
            while data[pos]:
                name, pos = self._cstr(data, pos)
                d, pos = uleb(data, pos)
                _, pos = uleb(data, pos)
                _, pos = uleb(data, pos)
                cu.files.append((name, d))
        del default_is_stmt  # is_stmt does not affect which row an address maps to
        pos = program
        rows: list[tuple] = []
        seq = 0
        addr = 0
        op_index = 0
        file = 1
        line = 1
        column = 0
        byteorder = "little" if self._e == "<" else "big"

        def advance(operation: int) -> None:
            nonlocal addr, op_index
            if max_ops == 1:
                addr += min_inst * operation
            else:
                addr += min_inst * ((op_index + operation) // max_ops)
                op_index = (op_index + operation) % max_ops

        # This loop runs for every row of every line table a profile hits: special opcodes
        # (most of a program) step by table lookups when max_ops is 1 (all but VLIW), and
        # the frequent set_column / advance_line read one-byte LEB128 operands inline; the
        # standard opcodes are tested in the order of their frequency in GCC's output.
        addr_step, line_step = _special_steps(opcode_base, line_range, min_inst, line_base)
        simple = max_ops == 1
        while pos < end:
            op = data[pos]
            pos += 1
            if op >= opcode_base:
                if simple:
                    addr += addr_step[op]
                else:
                    advance((op - opcode_base) // line_range)
                line += line_step[op]
                rows.append((addr, 1, seq, file, line, column))
                seq += 1
            elif op == 5:
                column = data[pos]
                if column < 0x80:
                    pos += 1
                else:
                    column, pos = uleb(data, pos)
            elif op == 6 or op == 7 or op == 10 or op == 11:  # negate_stmt (frequent), flags
                pass
            elif op == 1:  # copy
                rows.append((addr, 1, seq, file, line, column))
                seq += 1
            elif op == 3:
                v = data[pos]
                if v < 0x40:
                    pos += 1
                    line += v
                elif v < 0x80:
                    pos += 1
                    line += v - 0x80
                else:
                    v, pos = sleb(data, pos)
                    line += v
            elif op == 2:
                v, pos = uleb(data, pos)
                advance(v)
            elif op == 0:
                n, pos = uleb(data, pos)
                sub_end = pos + n
                if n == 0 or sub_end > end:
                    raise DwarfError("bad extended opcode")
                sub = data[pos]
                if sub == 1:  # end_sequence
                    rows.append((addr, 0, seq, -1, line, column))  # file -1: the end
                    seq += 1
                    addr = op_index = 0
                    file, line, column = 1, 1, 0
                elif sub == 2:  # set_address
                    addr = int.from_bytes(data[pos + 1:sub_end], byteorder)
                    op_index = 0
                elif sub == 3 and version < 5:  # define_file
                    name, p = self._cstr(data, pos + 1)
                    d, _ = uleb(data, p)
                    cu.files.append((name, d))
                pos = sub_end
            elif op == 4:
                file, pos = uleb(data, pos)
            elif op == 8:  # const_add_pc
                advance((255 - opcode_base) // line_range)
            elif op == 9:  # fixed_advance_pc
                addr += u("H", data, pos)
                op_index = 0
                pos += 2
            elif op == 12:  # set_isa
                _, pos = uleb(data, pos)
            else:  # unknown standard opcode: skip its operands
                for _ in range(std_lengths[op - 1]):
                    _, pos = uleb(data, pos)
        return rows


class RecordedDwarf:
    """line_at/scopes_at answered from a persistent cache record (DESIGN decision 4).

    Answers missing from the record are computed by a DwarfInfo, opened on the first miss,
    and added to the record, so a warm run never decompresses or walks the DWARF.
    """

    def __init__(self, image, rec, info: DwarfInfo | None) -> None:
        self._image = image
        self._rec = rec
        self._info = info
        lines = rec.data.get("lines")
        scopes = rec.data.get("scopes")
        if type(lines) is not dict or type(scopes) is not dict:
            lines = rec.data["lines"] = {}
            scopes = rec.data["scopes"] = {}
        self._lines: dict[int, tuple[bytes, int, int] | None] = lines
        self._packed: dict[int, tuple | None] = scopes
        self._scopes: dict[int, tuple[Scope, list[Scope]] | None] = {}

    def _decoder(self) -> DwarfInfo | None:
        if self._info is None:
            self._info = DwarfInfo.decode(self._image)
        return self._info

    def line_at(self, vaddr: int) -> tuple[bytes, int, int] | None:
        try:
            return self._lines[vaddr]
        except KeyError:
            pass
        info = self._decoder()
        row = None if info is None else info.line_at(vaddr)
        self._lines[vaddr] = row
        self._rec.dirty = True
        return row

    def scopes_at(self, vaddr: int) -> tuple[Scope, list[Scope]] | None:
        try:
            return self._scopes[vaddr]
        except KeyError:
            pass
        packed = self._packed.get(vaddr, _MISSING)
        if packed is _MISSING:
            info = self._decoder()
            result = None if info is None else info.scopes_at(vaddr)
            self._packed[vaddr] = None if result is None else (
                _pack_scope(result[0]), tuple(_pack_scope(s) for s in result[1]))
            self._rec.dirty = True
        else:
            try:
                result = None if packed is None else (
                    Scope(*packed[0]), [Scope(*s) for s in packed[1]])
            except TypeError:  # not what this code writes: answer from the DWARF
                del self._packed[vaddr]
                return self.scopes_at(vaddr)
        self._scopes[vaddr] = result
        return result


_MISSING = object()


def _packed(make, codes: str) -> array | list:
    """The ints `make()` gives, in an array of the first type code of `codes` that holds them
    all, else in a list (hostile DWARF: numbers beyond 64 bits)."""
    for code in codes:
        try:
            return array(code, make())
        except OverflowError:
            pass
    return list(make())


@lru_cache(maxsize=64)
def _special_steps(opcode_base: int, line_range: int, min_inst: int,
                   line_base: int) -> tuple[list[int], list[int]]:
    """Address and line advance of each special opcode (max_ops 1), indexed by opcode;
    units share a few headers, so the tables are built once per header."""
    specials = range(opcode_base, 256)
    return ([0] * opcode_base + [min_inst * ((op - opcode_base) // line_range) for op in specials],
            [0] * opcode_base + [line_base + (op - opcode_base) % line_range for op in specials])


def _range_index(entries: list[tuple[int, int, int]]) -> tuple[list[int], list[int], list[int]]:
    """(starts, ends, unit offsets) of (lo, hi, unit offset) entries, ordered by start."""
    entries.sort()
    return [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries]


def _pack_scope(s: Scope) -> tuple:
    return (s.name, s.entry_pc, s.decl_file, s.decl_line, s.decl_column, s.call_file,
            s.call_line, s.call_column, s.die_offset)


def _contains(ranges: list[tuple[int, int]], addr: int) -> bool:
    for lo, hi in ranges:
        if lo <= addr < hi:
            return True
    return False


_demangler = None


def _demangle(name: str) -> str:
    global _demangler
    if _demangler is None:
        try:
            from ..demangle import demangle as _demangler
        except ImportError:
            _demangler = str
    return _demangler(name)


def _demangle_scope(name: str) -> str:
    from ..demangle import demangle_scope

    return demangle_scope(name)


def _demangle_type(name: str) -> str:
    from ..demangle import demangle_type

    return demangle_type(name)


# DW_LANG_C_plus_plus, _03, _11, _14
_CXX_LANGUAGES = frozenset((0x04, 0x1A, 0x21, 0x2B))
# GCC's DWARF spelling of base types -> the demangler's
_BASE_TYPE_NAMES = {
    "long int": "long", "long unsigned int": "unsigned long", "short int": "short",
    "short unsigned int": "unsigned short", "long long int": "long long",
    "long long unsigned int": "unsigned long long", "__int128 unsigned": "unsigned __int128",
    "_Bool": "bool",
}


def _gcc_numbers_lambdas_per_scope(producer: str) -> bool:
    """GCC numbered every lambda of a scope until 13 (ABI 18 numbers them per signature,
    as the Itanium ABI and clang do); DW_AT_producer says `GNU C++17 12.2.0 -O2 ...`."""
    if not producer.startswith("GNU "):
        return False
    words = producer.split()
    major = next((int(w.split(".")[0]) for w in words if w[:1].isdigit() and "." in w
                  and w.split(".")[0].isdigit()), None)
    abi = next((w.split("=", 1)[1] for w in words if w.startswith("-fabi-version=")), "0")
    return (major is not None and major < 13) or (abi.isdigit() and 0 < int(abi) < 18)
