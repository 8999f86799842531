"""Scopes: the subprogram and inlined subroutines containing an address, and their names as
c++filt spells them, parameter lists and types included."""

from __future__ import annotations

from array import array
from bisect import bisect_right

from ...tuples import named_tuple
from .constants import (
    DwarfError, _AT_ABSTRACT_ORIGIN, _AT_ARTIFICIAL, _AT_CALL_COLUMN, _AT_CALL_FILE,
    _AT_CALL_LINE, _AT_DECL_COLUMN, _AT_DECL_FILE, _AT_DECL_LINE, _AT_ENTRY_PC, _AT_EXTERNAL,
    _AT_LANGUAGE, _AT_LINKAGE_NAME, _AT_LOW_PC, _AT_MIPS_LINKAGE_NAME, _AT_NAME,
    _AT_OBJECT_POINTER, _AT_PRODUCER, _AT_SPECIFICATION, _AT_TYPE, _CLASS_TAGS, _FLAGS,
    _MALFORMED, _MAX_DEPTH, _MAX_RANGES, _POINTERS, _QUALIFIERS, _TAG_BASE_TYPE,
    _TAG_COMPILE_UNIT, _TAG_FORMAL_PARAMETER, _TAG_LEXICAL_BLOCK, _TAG_NAMESPACE,
    _TAG_PARTIAL_UNIT, _TAG_POINTER, _TAG_SKELETON_UNIT, _TAG_SUBPROGRAM, _TAG_SUBROUTINE_TYPE,
    _TAG_TEMPLATE_TYPE_PARAM, _TAG_TYPEDEF, _TAG_UNSPECIFIED_PARAMETERS,
)
from .units import _Cu


@named_tuple
class Scope:
    """One subprogram or inlined-subroutine instance containing an address."""

    name: str | None
    entry_pc: int | None
    decl_file: bytes | None
    decl_line: int
    decl_column: int
    call_file: bytes | None
    call_line: int
    call_column: int
    die_offset: int


class Scopes:
    """The scope and name part of DwarfInfo (its state is made by DwarfInfo.__init__)."""

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

    def _qualified(self, off: int, chain: list[int]) -> str | None:
        """Qualified, demangled name of a DIE (SEMANTICS §10.5) with origin chain `chain`,
        cached per DIE."""
        if off in self._names:
            return self._names[off]
        self._names[off] = None  # guard against reference cycles
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
        if self._cus.get(cu.offset) is not cu:  # a unit of the supplementary file
            return self._sup._unit_facts(cu)
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
        if cu.dwo_name is not None:  # a skeleton: the scopes are in its split unit
            split = self._split_unit(cu)
            if split is not None:
                return split[0]._scopes_in(split[1], addr)
        return self._scopes_in(cu, addr)

    def _scopes_in(self, cu: _Cu, addr: int) -> tuple[Scope, list[Scope]] | None:
        self._walk(cu)
        sub = _subprogram_at(cu, addr)
        if sub is None:
            return None
        self._walk_pending(cu, sub)
        nodes = cu.nodes[sub]
        chain = [nodes[i][0] for i in _nodes_at(cu, sub, nodes, addr) if nodes[i][3]]
        return self._scope(sub, False), [self._scope(o, True) for o in chain]

    def _scope(self, off: int, inlined: bool) -> Scope:
        hit = self._scope_objs.get(off)
        if hit is not None:
            return hit
        cu, _, attrs = self._die(off)
        decl_file = None
        chain = self._origin_chain(off)  # the declaration's attributes are integrated from it
        found = self._integrate(chain, _AT_DECL_FILE)
        if found is not None and isinstance(found[1], int):
            decl_file = self._file_path(found[0], found[1])
        elif found is not None and isinstance(found[1], bytes):  # a supplementary file's
            decl_file = found[1]
        found = self._integrate(chain, _AT_DECL_LINE)
        decl_line = found[1] if found is not None and isinstance(found[1], int) else 0
        found = self._integrate(chain, _AT_DECL_COLUMN)
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
        scope = Scope(self._qualified(off, chain), self._entry_pc(cu, attrs), decl_file, decl_line,
                      decl_column, call_file, call_line, call_column, off + self._die_base)
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

def _spans(keyed) -> tuple[list[int], list[tuple[int, int, int]], list[int]]:
    """An index of (key, ranges) pairs for _holding: every non-empty range [lo, hi) with its
    key, sorted by start; the starts alone; and the furthest end up to each."""
    spans = sorted((lo, hi, k) for k, ranges in keyed for lo, hi in ranges if lo < hi)
    reach, furthest = [], 0
    for _lo, hi, _k in spans:
        furthest = max(furthest, hi)
        reach.append(furthest)
    return [span[0] for span in spans], spans, reach


def _holding(index: tuple, addr: int) -> list[int]:
    """The keys of the ranges in `index` (_spans) that hold `addr`, a key once for each: a
    bisection to the last range starting at or before it, then back only past ranges that
    may still reach it (one or two where ranges do not overlap)."""
    starts, spans, reach = index
    j = bisect_right(starts, addr) - 1
    keys = []
    while j >= 0 and reach[j] > addr:
        _lo, hi, k = spans[j]
        if hi > addr:
            keys.append(k)
        j -= 1
    return keys


def _subprogram_at(cu: _Cu, addr: int) -> int | None:
    """The first of the unit's subprograms (in DIE order) whose ranges hold `addr`, by an
    index of their ranges (a unit has hundreds to thousands), remade when the walk has
    found more."""
    subs = cu.subprograms
    index = cu.sub_index
    if index is None or index[0] != len(subs):
        index = cu.sub_index = (len(subs), _spans((k, ranges) for k, (_off, ranges)
                                                  in enumerate(subs)))
    keys = _holding(index[1], addr)
    return subs[min(keys)][0] if keys else None


def _nodes_at(cu: _Cu, sub: int, nodes: list, addr: int) -> list[int]:
    """Indices, ascending, of the scope nodes of subprogram `sub` that hold `addr` and whose
    every enclosing node does (a node without ranges holds every address): one pass over
    the nodes in DIE order (an enclosing node comes before the nodes inside it), in C when
    compiled, over their ranges in arrays (_node_table, made once for the nodes known).
    A subprogram with much inlined into it has thousands of nodes (python's eval loop
    2202): ~20 instructions a node, where an index of the nodes by their ranges, Python
    objects, took ~100 k instructions a lookup with its building (python3-dwarf-5k)."""
    table = cu.kids.get(sub)
    if table is None or table[0] != len(nodes):
        table = cu.kids[sub] = _node_table(nodes)
    return _scan_nodes(table, addr)


_NO_ADDRESS = 1 << 64  # past every range: what a node with ranges never holds


def _node_table(nodes: list) -> tuple:
    """(count, parent of each node, where each node's ranges start in the range arrays
    (and their end, at count), whether each has ranges, the ranges' starts and ends):
    a range past the address space (a hostile one) holds nothing."""
    m = len(nodes)
    n = 0
    for node in nodes:
        if node[2] is not None:
            n += len(node[2])
    parents = array("q", bytes(8 * m))
    first = array("q", bytes(8 * (m + 1)))
    ranged = bytearray(m)
    starts = array("Q", bytes(8 * n))
    ends = array("Q", bytes(8 * n))
    k = 0
    for i in range(m):
        node = nodes[i]
        parents[i] = node[1]
        first[i] = k
        ranges = node[2]
        if ranges is not None:
            ranged[i] = 1
            for lo, hi in ranges:
                if 0 <= lo < hi and lo < _NO_ADDRESS:
                    starts[k] = lo
                    ends[k] = min(hi, _NO_ADDRESS - 1)
                    k += 1
    first[m] = k
    return m, parents, first, ranged, starts, ends


def _scan_nodes(table: tuple, addr: int) -> list[int]:
    """_nodes_at's pass over a _node_table."""
    m, parents, first, ranged, starts, ends = table
    outside = not 0 <= addr < _NO_ADDRESS
    a = 0 if outside else addr
    included = bytearray(m)
    found = []
    for i in range(m):
        p = parents[i]
        if p >= 0 and not included[p]:
            continue
        if ranged[i]:
            if outside:
                continue
            r = first[i]
            stop = first[i + 1]
            while r < stop and not starts[r] <= a < ends[r]:
                r += 1
            if r == stop:
                continue
        included[i] = 1
        found.append(i)
    return found


_demangler = None


def _demangle(name: str) -> str:
    global _demangler
    if _demangler is None:
        try:
            from ...demangle import demangle as _demangler
        except ImportError:
            _demangler = str
    return _demangler(name)


def _demangle_scope(name: str) -> str:
    from ...demangle import demangle_scope

    return demangle_scope(name)


def _demangle_type(name: str) -> str:
    from ...demangle import demangle_type

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
