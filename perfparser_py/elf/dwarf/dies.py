"""DIEs: attribute values by form, reading one DIE, and the walk over a unit's DIE tree
that finds its subprograms, their inlined and lexical scopes, and scope parents."""

from __future__ import annotations

import struct

from ..leb128 import sleb, uleb
from .constants import (
    DwarfError, _AT_ABSTRACT_ORIGIN, _AT_LOW_PC, _AT_RANGES, _AT_SIBLING, _AT_SPECIFICATION,
    _FIXED_FORMS, _FLAGS, _LEB_FORMS, _MAX_DEPTH, _MAX_RANGES, _MAX_REF_CHAIN, _OFFSET_FORMS,
    _TAG_INLINED, _TAG_LEXICAL_BLOCK, _TAG_SUBPROGRAM, _TYPE_TAGS, _VAR_FORMS,
)
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

