"""DIEs: attribute values by form, reading one DIE, and the walk over a unit's DIE tree
that finds its subprograms, their inlined and lexical scopes, and scope parents."""

from __future__ import annotations

import struct
from array import array

from ..leb128 import sleb, uint_at, uleb, uleb_end, uleb_value
from .constants import (
    DwarfError, _AT_ABSTRACT_ORIGIN, _AT_DECL_FILE, _AT_HIGH_PC, _AT_LOW_PC, _AT_RANGES,
    _AT_SIBLING, _AT_SPECIFICATION, _FIXED_FORMS, _FLAGS, _LEB_FORMS, _MAX_DEPTH, _MAX_RANGES,
    _MAX_REF_CHAIN, _OFFSET_FORMS, _REF_ATTRS, _SUP, _TAG_INLINED, _TAG_LEXICAL_BLOCK,
    _TAG_SUBPROGRAM, _TYPE_TAGS,
)
from .ranges import listed_ranges, pc_range, ranges_of
from .units import _Cu


class Dies:
    """The DIE part of DwarfInfo (its state is made by DwarfInfo.__init__)."""

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
        if form in (0x0E, 0x1F, 0x17, 0x1D, 0x1F20, 0x1F21):
            v = self._u("I" if cu.off_size == 4 else "Q", data, pos)
            pos += cu.off_size
            if form == 0x17:  # sec_offset
                return v, pos
            if form == 0x1F20:  # GNU_ref_alt: a DIE of the supplementary file
                return v + _SUP, pos
            # strp, line_strp; strp_sup and GNU_strp_alt: a string of the supplementary file
            return (0x1F21 if form == 0x1D else form, v), pos
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
            return self._u("I", data, pos) + _SUP, pos + 4
        if form == 0x24:  # ref_sup8
            return self._u("Q", data, pos) + _SUP, pos + 8
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
        if form == 0x1F21:
            sup = self._supplement()
            return None if sup is None else sup._str_at("str", v)
        if form == 0x1F:
            return self._str_at("line_str", v)
        # strx: through the CU's .debug_str_offsets slice
        offs = self._s.get("str_offsets")
        if offs is None:
            return None
        base = cu.str_offsets_base
        if base is None:  # past the header: DWARF 5's (a .dwo's too); GCC's DWARF 4 .dwo has none
            base = 2 * cu.off_size if cu.version >= 5 else 0
        pos = base + v * cu.off_size
        return self._str_at("str", self._u("I" if cu.off_size == 4 else "Q", offs, pos))

    def _read_die(self, cu: _Cu, off: int, abbrevs: dict | None = None
                  ) -> tuple[int, bool, dict, int]:
        """(tag, has_children, {attr: value}, next offset); tag 0 for a null entry. By the
        unit's abbreviations, or `abbrevs` when given (a part of them)."""
        sec = self._s["info"]
        return read_die(self, cu, sec, sec, self._abbrevs(cu) if abbrevs is None else abbrevs,
                        off, False)

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
        asked for); a subprogram with code without DW_AT_sibling (rustc, clang) has its end
        found by skipping its DIEs (_subtree_end). Compilers put no inlined or lexical scope
        and no subprogram with code inside a type or a declaration."""
        if cu.walked:
            return
        cu.walked = True
        cu.subprograms = []
        cu.nodes = {}
        cu.pending = {}
        cu.deferred = array("q", bytes(8 * _ENTRY * 8))  # doubled when full
        cu.ndeferred = 0
        cu.prefixes = []
        cu.runs = {}
        cu.sub_index = None  # the indexes scopes._subprogram_at and _nodes_at make
        cu.kids = {}
        try:
            walk_dies(self, cu, cu.first_die, cu.end, array("q"))
        finally:  # what a walk that failed part-way jumped over is found all the same
            cu.runs[-1] = (0, cu.ndeferred)

    def _walk_pending(self, cu: _Cu, off: int) -> None:
        """Walk the subtree of the DIE at `off` that a walk jumped over (once); it may jump
        the subtrees inside in turn."""
        k = cu.pending.pop(off, None)
        if k is not None:
            self._walk_deferred(cu, k)

    def _walk_deferred(self, cu: _Cu, k: int) -> None:
        """Walk deferred subtree `k` (taken out of cu.pending); the subtrees that walk jumps
        over are its run in cu.runs."""
        p = cu.deferred
        i = _ENTRY * k
        stack = cu.prefixes[p[i + 3]] + array("q", (p[i], p[i + 4], p[i + 5]))
        first = cu.ndeferred
        try:
            walk_dies(self, cu, p[i + 1], p[i + 2], stack)
        finally:
            cu.runs[k] = (first, cu.ndeferred)

    def _table(self, cu: _Cu) -> _Table:
        if cu.skips is None:
            cu.skips = make_table(self._abbrevs(cu), cu.addr_size, cu.off_size,
                                  cu.addr_size if cu.version == 2 else cu.off_size)
        return cu.skips

    def _die(self, off: int) -> tuple[_Cu, int, dict]:
        """(unit, tag, attributes) of the DIE at section offset `off` (of the supplementary
        file from _SUP on)."""
        hit = self._dies.get(off)
        if hit is not None:
            return hit
        if off >= _SUP:
            sup = self._sup_part()
            cu, tag, attrs = sup._die(off - _SUP)
            hit = self._dies[off] = (cu, tag, _in_supplement(sup, cu, attrs))
            return hit
        cu = self._cu_of_offset(off)
        if cu is None or off < cu.first_die:
            raise DwarfError("reference outside every unit")
        tag, _, attrs, _ = self._read_die(cu, off)
        hit = (cu, tag, attrs)
        self._dies[off] = hit
        return hit

    def _parent(self, off: int) -> int | None:
        if off >= _SUP:
            parent = self._sup_part()._parent(off - _SUP)
            return None if parent is None else parent + _SUP
        cu = self._cu_of_offset(off)
        if cu is None:
            return None
        self._walk(cu)
        parent = self._parents.get(off)
        while parent is None:  # maybe inside a subtree a walk jumped over
            k = pending_around(cu, off)
            if k < 0:
                break
            del cu.pending[cu.deferred[_ENTRY * k]]
            self._walk_deferred(cu, k)
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

    def _integrate(self, chain: list[int], attr: int) -> tuple[_Cu, object] | None:
        """(unit, value) of `attr` on the first DIE of an origin chain (_origin_chain)
        having it."""
        for o in chain:
            cu, _, attrs = self._die(o)
            if attr in attrs:
                return cu, attrs[attr]
        return None

    def _children(self, off: int) -> list[tuple[int, int, _Cu, dict]]:
        """(offset, tag, unit, attributes) of the direct children of the DIE at `off`."""
        if off >= _SUP:
            sup = self._sup_part()
            return [(child + _SUP, tag, cu, _in_supplement(sup, cu, attrs))
                    for child, tag, cu, attrs in sup._children(off - _SUP)]
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



def _in_supplement(sup: Dies, cu: _Cu, attrs: dict) -> dict:
    """The attributes of a DIE of the supplementary file `sup` as the file referring to it
    reads them: references made _SUP offsets (the supplementary file refers to nothing
    outside itself), strings and DW_AT_decl_file's path resolved by `sup`, which alone
    holds the unit `cu` (so that the referring file's string and path lookups need not
    tell whose a unit is)."""
    out = {}
    for attr, value in attrs.items():
        if attr == _FLAGS:
            pass
        elif isinstance(value, tuple):  # a string form
            value = (0x08, sup._string(cu, value))
        elif isinstance(value, int):
            if attr in _REF_ATTRS:
                value += _SUP
            elif attr == _AT_DECL_FILE:
                value = sup._file_path(cu, value)
        out[attr] = value
    return out


# How a walk skips a value, by form: its byte count; _ADDR_SIZED, _OFFSET_SIZED or
# _REF_ADDR_SIZED for the unit's sizes; _SKIP_VARIABLE - kind for a value _skip steps over
# (kind _SKIP_*); _UNSKIPPABLE for DW_FORM_indirect and unknown forms (decoded instead).
_SKIP_LEB, _SKIP_STRING, _SKIP_BLOCK, _SKIP_BLOCK1, _SKIP_BLOCK2, _SKIP_BLOCK4 = 1, 2, 3, 4, 5, 6
_UNSKIPPABLE, _ADDR_SIZED, _OFFSET_SIZED, _REF_ADDR_SIZED, _SKIP_VARIABLE = -2, -3, -4, -5, -10
_SKIP_KINDS = {**dict.fromkeys(_LEB_FORMS, _SKIP_LEB), 0x08: _SKIP_STRING, 0x18: _SKIP_BLOCK,
               0x09: _SKIP_BLOCK, 0x0A: _SKIP_BLOCK1, 0x03: _SKIP_BLOCK2, 0x04: _SKIP_BLOCK4}


def _skip_of(form: int) -> int:
    size = _FIXED_FORMS.get(form)
    if size is not None:
        return size
    if form == 0x01:
        return _ADDR_SIZED
    if form in _OFFSET_FORMS:
        return _OFFSET_SIZED
    if form == 0x10:
        return _REF_ADDR_SIZED
    if form in _SKIP_KINDS:
        return _SKIP_VARIABLE - _SKIP_KINDS[form]
    return _UNSKIPPABLE


# the skips of the DWARF 5 forms (0x01-0x2C) by number, for C lookups; the GNU ones are rare
_FORM_SKIPS = array("b", map(_skip_of, range(0x2D)))
# the DW_AT_high_pc forms the walk reads in place: addr, data1, data2, data4, data8
_HIGH_FORMS = frozenset((0x01, 0x0B, 0x05, 0x06, 0x07))
# A unit's abbreviation codes are numbered from 1 by every producer; sparser ones are looked up
# in a dict
_DENSE_SLACK = 1024


class _Table:
    """A unit's abbreviations as the DIE walk reads them, in arrays by slot: the tag, whether
    the DIE has children, how its attribute values are skipped (`size`: their byte count when
    all are of fixed size, -1 for the steps from `steps_at`, -2 when they are decoded instead:
    DW_FORM_indirect, unknown forms) and where a type's or subprogram's DW_FORM_ref4 DW_AT_sibling
    is among the fixed-size leading values (-1: none). `steps` holds (fixed bytes, _SKIP_* kind
    or 0 at the end) pairs; `slots` gives the slot of a code below len(slots), `sparse` of the
    others.

    The walk reads the ranges of the DIEs it keeps without decoding them when their
    abbreviation allows (`fast`): DW_AT_low_pc as DW_FORM_addr, DW_AT_high_pc as an address or
    a fixed-size constant (`high_size` bytes, `high_addr`) and DW_AT_ranges as a 4-byte offset,
    each at most once and among the fixed-size leading values, at `low_at`, `high_at` and
    `ranges_at` (-1: absent), and a subprogram's DW_AT_sibling only so."""

    def slot(self, code: int) -> int:
        """Slot of abbreviation `code`, -1 for a code the unit does not have."""
        if code < len(self.slots):
            return self.slots[code]
        return self.sparse.get(code, -1)


def make_table(abbrevs: dict, addr: int, offset: int, ref_addr: int) -> _Table:
    """The _Table of a unit's abbreviations, for its address, offset and ref_addr sizes."""
    top = max(abbrevs, default=0)
    n = len(abbrevs)
    dense = top < 2 * n + _DENSE_SLACK
    slots = array("i", [-1]) * (top + 1 if dense else 0)
    forms = _FORM_SKIPS
    sparse = {}
    steps = array("q")
    t = _Table()
    t.slots, t.sparse = slots, sparse
    # filled in place, slot by slot (an append is a Python call)
    t.tags, t.sibling_at, t.steps_at = array("i", bytes(4 * n)), array("i", bytes(4 * n)), \
        array("i", bytes(4 * n))
    t.low_at, t.high_at, t.ranges_at = array("i", bytes(4 * n)), array("i", bytes(4 * n)), \
        array("i", bytes(4 * n))
    t.children, t.fast, t.high_size, t.high_addr = array("b", bytes(n)), array("b", bytes(n)), \
        array("b", bytes(n)), array("b", bytes(n))
    t.size = array("q", bytes(8 * n))
    k = 0
    for code, (tag, has_children, specs, _flags) in abbrevs.items():
        if dense:
            slots[code] = k
        else:
            sparse[code] = k
        t.tags[k] = tag if tag < 0x7FFFFFFF else -1
        t.children[k] = has_children
        t.steps_at[k] = len(steps)
        fixed = 0
        sibling_at = low_at = high_at = ranges_at = -1
        high_size = 0
        high_addr = False
        seen = 0  # how often a ranged attribute or a subprogram's sibling was met
        quick = 0  # how many of them are read where they are
        variable = False
        for spec in specs:
            attr = spec[0]
            form = spec[1]
            if attr == _AT_SIBLING and (tag in _TYPE_TAGS or tag == _TAG_SUBPROGRAM):
                seen += tag == _TAG_SUBPROGRAM
                if form == 0x13 and not variable:
                    sibling_at = fixed
                    quick += tag == _TAG_SUBPROGRAM
            elif attr == _AT_LOW_PC:
                seen += 1
                if form == 0x01 and not variable:
                    low_at = fixed
                    quick += 1
            elif attr == _AT_HIGH_PC:
                seen += 1
                if form in _HIGH_FORMS and not variable:
                    high_at = fixed
                    high_size = addr if form == 0x01 else _FIXED_FORMS[form]
                    high_addr = form == 0x01
                    quick += 1
            elif attr == _AT_RANGES:
                seen += 1
                if (form == 0x06 or (form == 0x17 and offset == 4)) and not variable:
                    ranges_at = fixed
                    quick += 1
            skip = forms[form] if 0 <= form < len(forms) else _skip_of(form)
            if skip >= 0:
                fixed += skip
            elif skip == _ADDR_SIZED:
                fixed += addr
            elif skip == _OFFSET_SIZED:
                fixed += offset
            elif skip == _REF_ADDR_SIZED:
                fixed += ref_addr
            elif skip <= _SKIP_VARIABLE:
                steps.extend((fixed, _SKIP_VARIABLE - skip))
                fixed = 0
                variable = True
            else:
                fixed = -2
                break
        if fixed == -2:
            t.size[k] = -2
        elif variable:
            steps.extend((fixed, 0))
            t.size[k] = -1
        else:
            t.size[k] = fixed
        t.sibling_at[k] = sibling_at
        # each read in place, and once (a repeated one is decoded: the dict keeps the last)
        t.fast[k] = fixed != -2 and quick == seen and seen == (
            (low_at >= 0) + (high_at >= 0) + (ranges_at >= 0)
            + (sibling_at >= 0 and tag == _TAG_SUBPROGRAM))
        t.low_at[k] = low_at
        t.high_at[k] = high_at
        t.ranges_at[k] = ranges_at
        t.high_size[k] = high_size
        t.high_addr[k] = high_addr
        k += 1
    t.steps = steps  # once grown: a typed view holds it
    return t


def _skip(info, t: _Table, at: int, pos: int, little: bool) -> int:
    """Position after the attribute values whose skip steps start at `at`."""
    steps = t.steps
    while True:
        pos += steps[at]
        kind = steps[at + 1]
        at += 2
        if kind == 0:
            return pos
        if kind == _SKIP_LEB:
            pos = uleb_end(info, pos)
        elif kind == _SKIP_STRING:
            while info[pos]:
                pos += 1
            pos += 1
        elif kind == _SKIP_BLOCK:
            n = uleb_value(info, pos)
            pos = uleb_end(info, pos)
            if n > len(info) - pos:
                raise DwarfError("DIE overruns its unit")
            pos += n
        elif kind == _SKIP_BLOCK1:
            pos += 1 + info[pos]
        elif kind == _SKIP_BLOCK2:
            pos += 2 + uint_at(info, pos, 2, little)
        else:
            pos += 4 + uint_at(info, pos, 4, little)


def read_die(dw: Dies, cu: _Cu, info, sec, abbrevs: dict, off: int,
             ranged: bool) -> tuple[int, bool, dict, int]:
    """Dies._read_die over `sec`, the .debug_info section (`info` too, typed). With `ranged`,
    only the attributes the DIE walk reads are kept (its ranges and sibling). The commonest
    forms are decoded here (a _form call costs more than their decoding), the others by
    Dies._form."""
    code = info[off]
    if code < 0x80:
        pos = off + 1
    else:
        code = uleb_value(info, off)
        pos = uleb_end(info, off)
    if code == 0:
        return 0, False, {}, pos
    abbrev = abbrevs.get(code)
    if abbrev is None:
        raise DwarfError("unknown abbreviation")
    tag, children, specs, flags = abbrev
    attrs = {}
    little = dw._e == "<"
    base = cu.offset
    off4 = cu.off_size == 4
    addr8 = cu.addr_size == 8
    for spec in specs:
        form = spec[1]
        if form == 0x13:  # ref4
            value = uint_at(info, pos, 4, little) + base
            pos += 4
        elif form == 0x0B:  # data1
            value = info[pos]
            pos += 1
        elif form == 0x19:  # flag_present
            value = 1
        elif form == 0x21:  # implicit_const
            value = spec[2]
        elif form == 0x0E and off4:  # strp
            value = (0x0E, uint_at(info, pos, 4, little))
            pos += 4
        elif form == 0x05:  # data2
            value = uint_at(info, pos, 2, little)
            pos += 2
        elif form == 0x06:  # data4
            value = uint_at(info, pos, 4, little)
            pos += 4
        elif (form == 0x01 and addr8) or form == 0x07:  # addr, data8
            value = uint_at(info, pos, 8, little)
            pos += 8
        elif form == 0x0F and info[pos] < 0x80:  # one-byte udata
            value = info[pos]
            pos += 1
        elif form == 0x17 and off4:  # sec_offset
            value = uint_at(info, pos, 4, little)
            pos += 4
        elif (form == 0x18 or form == 0x09) and info[pos] < 0x80:  # exprloc, block: short
            value = None
            pos += 1 + info[pos]
        else:
            value, pos = dw._form(cu, form, spec[2], sec, pos)
        if not ranged or spec[0] in _WALKED_ATTRS:
            attrs[spec[0]] = value
    if flags is not None:
        attrs[_FLAGS] = flags
    if pos > cu.end:
        raise DwarfError("DIE overruns its unit")
    return tag, children, attrs, pos


# what the DIE walk reads of the DIEs it decodes (Ranges.ranges_of, the sibling)
_WALKED_ATTRS = frozenset((_AT_LOW_PC, _AT_HIGH_PC, _AT_RANGES, _AT_SIBLING))


def _subtree_end(info, t: _Table, pos: int, end: int, depth: int, base: int, unit_end: int,
                 little: bool) -> int:
    """Where the children of a DIE at tree depth `depth`, starting at `pos`, end (after
    their null entry), for the walk to jump over a subprogram's subtree as DW_AT_sibling
    lets it (rustc and clang write none): its DIEs skipped, not decoded, and type subtrees
    jumped as the walk jumps them. -1 when they end past `end`, or the walk must decode them
    to fail where it fails (an abbreviation the unit lacks, a value it cannot skip, a DIE
    past the unit, too deep a tree)."""
    level = 1
    try:
        while pos < end:
            code = info[pos]
            if code < 0x80:
                pos += 1
            else:
                code = uleb_value(info, pos)
                pos = uleb_end(info, pos)
            if code == 0:
                level -= 1
                if level == 0:
                    return pos
                continue
            i = t.slot(code)
            if i < 0 or t.size[i] == -2:
                return -1
            sibling = -1
            if t.sibling_at[i] >= 0 and t.tags[i] != _TAG_SUBPROGRAM:
                sibling = base + uint_at(info, pos + t.sibling_at[i], 4, little)
            size = t.size[i]
            pos = pos + size if size >= 0 else _skip(info, t, t.steps_at[i], pos, little)
            if pos > unit_end:
                return -1
            if t.children[i]:
                if depth + level >= _MAX_DEPTH:
                    return -1
                if pos < sibling <= end:
                    pos = sibling
                else:
                    level += 1
    except (IndexError, DwarfError):
        pass
    return -1


# room for the deepest tree a walk accepts, three numbers per open DIE
_NO_STACK = array("q", bytes(8 * 3 * (_MAX_DEPTH + 1)))


# A subtree a walk jumps over, in cu.deferred: the DIE's offset, where its children start and
# end, the walk's open DIEs then (an index in cu.prefixes), its subprogram and its node
_ENTRY = 6


def pending_around(cu: _Cu, off: int) -> int:
    """The deferred subtree still pending whose children hold the DIE at `off`, -1 if none.
    The subtrees a walk jumps over are in order and apart, and each lies within the subtree
    whose walk found it (cu.runs: its run of cu.deferred): a bisection per level of that
    nesting, where a scan of every pending subtree (90 k in python's debug info) cost a
    third of python3-dwarf-5k's symbolizing."""
    deferred = cu.deferred
    lo, hi = cu.runs[-1]
    while True:
        a, b = lo, hi
        while a < b:
            m = (a + b) // 2
            if deferred[_ENTRY * m + 1] <= off:
                a = m + 1
            else:
                b = m
        k = a - 1
        if k < lo or off >= deferred[_ENTRY * k + 2]:
            return -1
        if cu.pending.get(deferred[_ENTRY * k]) == k:
            return k
        lo, hi = cu.runs[k]


def walk_dies(dw: Dies, cu: _Cu, pos: int, end: int, stack: array) -> None:
    """The walk of Dies._walk from `pos` to `end`, with `stack` the open DIEs with children,
    three numbers each: offset, subprogram offset (0 none, -1 nested), node index. One long
    loop over C numbers: it runs for every DIE a profile reaches, and only the DIEs it keeps
    (subprograms, their scopes) are decoded into Python objects.

    A subtree it jumps over is kept as six numbers (_ENTRY) in the first cu.ndeferred
    entries of cu.deferred, written through a typed view (an array's own append takes ~500
    instructions a number: python's debug info has 57 k such subtrees), its index in
    cu.pending by the DIE's offset, and the open DIEs then in cu.prefixes, one entry shared
    by the siblings that have the same (a unit's functions do): a tuple and an array each
    were 13 MB of python's debug info in a profile."""
    sec = dw._s["info"]
    info = sec
    t = dw._table(cu)
    abbrevs = dw._abbrevs(cu)
    tags = t.tags
    kids = t.children
    sizes = t.size
    sibling_at = t.sibling_at
    fast = t.fast
    low_at = t.low_at
    high_at = t.high_at
    ranges_at = t.ranges_at
    high_size = t.high_size
    high_addr = t.high_addr
    addr_size = cu.addr_size
    parents = dw._parents
    little = dw._e == "<"
    unit_end = cu.end
    base = cu.offset
    depth = len(stack) // 3
    buf = stack + _NO_STACK
    frames = buf
    prefixes = cu.prefixes
    pending = cu.pending
    deferred = cu.deferred
    nd = cu.ndeferred
    # the depth whose open DIEs the last of cu.prefixes holds, while nothing was pushed below
    shared = -1
    try:
        while pos < end:
            off = pos
            code = info[pos]
            if code < 0x80:
                pos += 1
            else:
                code = uleb_value(info, pos)
                pos = uleb_end(info, pos)
            if code == 0:
                if depth:
                    depth -= 1
                continue
            i = t.slot(code)
            if i < 0:
                raise DwarfError("unknown abbreviation")
            tag = tags[i]
            children = kids[i]
            if depth:
                parent_off = frames[3 * depth - 3]
                sub = frames[3 * depth - 2]
                node = frames[3 * depth - 1]
            else:
                parent_off = -1
                sub = 0
                node = -1
            sibling = -1
            size = sizes[i]
            kept = (tag == _TAG_SUBPROGRAM and sub == 0) or (
                sub > 0 and (tag == _TAG_INLINED or tag == _TAG_LEXICAL_BLOCK))
            ranges = None
            has_pc = False
            if size == -2 or (kept and not fast[i]):
                _, _, attrs, pos = read_die(dw, cu, info, sec, abbrevs, off, True)
                if tag == _TAG_SUBPROGRAM:
                    v = attrs.get(_AT_SIBLING)
                    if type(v) is int and pos < v <= end:
                        sibling = v
                if kept:
                    has_pc = _AT_LOW_PC in attrs or _AT_RANGES in attrs
                    ranges = ranges_of(dw, cu, attrs)
            elif kept:  # its ranges and sibling read in place (_Table)
                at = pos
                if sibling_at[i] >= 0 and tag == _TAG_SUBPROGRAM:
                    sibling = base + uint_at(info, at + sibling_at[i], 4, little)
                pos = pos + size if size >= 0 else _skip(info, t, t.steps_at[i], pos, little)
                if pos > unit_end:
                    raise DwarfError("DIE overruns its unit")
                has_pc = low_at[i] >= 0 or ranges_at[i] >= 0
                if low_at[i] >= 0 and high_at[i] >= 0:
                    ranges = pc_range(uint_at(info, at + low_at[i], addr_size, little),
                                      uint_at(info, at + high_at[i], high_size[i], little),
                                      high_addr[i])
                elif ranges_at[i] >= 0:
                    ranges = listed_ranges(dw, cu, uint_at(info, at + ranges_at[i], 4, little),
                                           False)
                else:
                    ranges = []
                attrs = None
            else:
                if sibling_at[i] >= 0 and tag != _TAG_SUBPROGRAM:
                    sibling = base + uint_at(info, pos + sibling_at[i], 4, little)
                pos = pos + size if size >= 0 else _skip(info, t, t.steps_at[i], pos, little)
                if pos > unit_end:
                    raise DwarfError("DIE overruns its unit")
                attrs = None
            if parent_off >= 0 and (children or tag == _TAG_SUBPROGRAM or tag == _TAG_INLINED):
                parents[off] = parent_off
            if tag == _TAG_SUBPROGRAM:
                if sub == 0:
                    if ranges:
                        cu.subprograms.append((off, ranges))
                        cu.nodes[off] = []
                        sub = off
                        node = -1
                    else:
                        sub = -1
                else:
                    sub = -1
            elif sub > 0 and (tag == _TAG_INLINED or tag == _TAG_LEXICAL_BLOCK):
                nodes = cu.nodes[sub]
                nodes.append((off, node, ranges if has_pc else None, tag == _TAG_INLINED))
                node = len(nodes) - 1
            if children:
                if depth >= _MAX_DEPTH:
                    raise DwarfError("DIE tree too deep")
                if sub == off and sibling < 0:  # a subprogram with code, without DW_AT_sibling
                    sibling = _subtree_end(info, t, pos, end, depth, base, unit_end, little)
                if pos < sibling <= end:
                    if depth != shared:
                        prefixes.append(buf[:3 * depth])
                        shared = depth
                    if _ENTRY * (nd + 1) > len(deferred):
                        cu.deferred = cu.deferred * 2  # a new array: no view of the old one
                        deferred = cu.deferred
                    at = _ENTRY * nd
                    deferred[at] = off
                    deferred[at + 1] = pos
                    deferred[at + 2] = sibling
                    deferred[at + 3] = len(prefixes) - 1
                    deferred[at + 4] = sub
                    deferred[at + 5] = node
                    pending[off] = nd
                    nd += 1
                    pos = sibling
                    continue
                if depth < shared:  # the shared open DIEs change
                    shared = -1
                frames[3 * depth] = off
                frames[3 * depth + 1] = sub
                frames[3 * depth + 2] = node
                depth += 1
    finally:
        cu.ndeferred = nd
