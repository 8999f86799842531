"""The emit stage: id spaces (strings, locations, symbols, attributes) and message output.

Every id space is global for the run, dense and assigned in order of first use, and every id
is defined on the wire before it is referenced (PROTOCOL.md §4, §8). Everything upstream of
this module deals in Python values; only here do they become ids and messages.
"""

from __future__ import annotations

from .perfdata.abi import TYPE_TRACEPOINT
from .protocol import HAS_SYMBOL, NAMED
from .protocol.writer import StreamWriter

# Location key: (address, rel_addr, file, pid, line, column, module, scope). The parent is
# not part of the key (PROTOCOL §4): a later resolve with another parent reuses the first id.
# Unlike upstream, the module (recorded path's string id) is: after an exec, the same address
# in the same pid is another function and must not inherit the old location's symbol. So is
# what a function or inline location stands for: the DWARF scope (DIE offset) of an inlined
# copy, so that two copies without an entry pc (LLVM's: address 0, the same declaration and
# call site) do not share a parent chain; -2 - st_value of the ELF symbol of a function that
# is not inlined, so that f and f.cold keep their own names (symbolize). Neither is sent: the
# messages stay upstream's.
LocationKey = tuple[int, int, int, int, int, int, int, int]


class Emitter:
    """Owns the id tables and turns definitions into messages on a StreamWriter."""

    __slots__ = ("_locations", "_state", "_strings", "unnamed", "writer")

    def __init__(self, writer: StreamWriter) -> None:
        self.writer = writer
        self._strings: dict[bytes, int] = {}
        self._locations: dict[LocationKey, int] = {}
        # per location id, HAS_SYMBOL | NAMED (protocol/writer.py); the writer counts the
        # frames of samples without a name (diagnostics.py)
        self._state = bytearray()
        writer.count_unresolved(self._state)
        # location id -> (binary, path, is_kernel) of the Symbol without a name it has, or
        # its parent has
        self.unnamed: dict[int, tuple[int, int, bool]] = {}

    # -- strings -------------------------------------------------------------------------
    def string(self, value: bytes | str | None) -> int:
        """Id of a string; the empty string (and None) never gets one."""
        if not value:
            return -1
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogateescape")
        sid = self._strings.get(value)
        if sid is None:
            sid = len(self._strings)
            self._strings[value] = sid
            self.writer.string(sid, value)
        return sid

    # -- locations and symbols -----------------------------------------------------------
    def location(
        self,
        address: int,
        rel_addr: int,
        file: int,
        pid: int,
        line: int,
        column: int,
        parent: int,
        module: int = -1,
        scope: int = -1,
    ) -> int:
        key = (address, rel_addr, file, pid, line, column, module, scope)
        lid = self._locations.get(key)
        if lid is None:
            state = self._state
            lid = self._locations[key] = len(state)
            if parent >= 0:  # its name is the parent's until it has a Symbol
                state.append(state[parent] & NAMED)
                inherited = self.unnamed.get(parent)
                if inherited is not None:
                    self.unnamed[lid] = inherited
            else:
                state.append(0)
            self.writer.location(lid, address, file, pid, line, column, parent, rel_addr)
        return lid

    def existing_location(self, address: int, rel_addr: int, file: int, pid: int, line: int,
                          column: int, module: int = -1, scope: int = -1) -> int:
        """The id location() gave these values, or -1 (nothing is defined)."""
        return self._locations.get((address, rel_addr, file, pid, line, column, module, scope),
                                   -1)

    def has_symbol(self, location_id: int) -> bool:
        return bool(self._state[location_id] & HAS_SYMBOL)

    def string_text(self, ids) -> dict[int, bytes]:
        """The strings of some ids (a reverse lookup: for end-of-run reports only)."""
        wanted = set(ids)
        return {sid: value for value, sid in self._strings.items() if sid in wanted}

    def symbol(
        self,
        location_id: int,
        name: int,
        binary: int,
        path: int,
        is_kernel: bool,
        rel_addr: int,
        size: int,
        actual_path: int,
        is_inline: bool,
        placeholder: bool = False,
    ) -> None:
        """`placeholder`: `name` only says where the code is (`<.init+1000>`, a stripped
        program's `<.text+1149>`): its frames count as unresolved, as nameless ones do
        (diagnostics.py)."""
        if name == -1 or placeholder:
            self._state[location_id] = HAS_SYMBOL
            self.unnamed[location_id] = (binary, path, is_kernel)
        else:
            self._state[location_id] = HAS_SYMBOL | NAMED
        self.writer.symbol(
            location_id, name, binary, path, is_kernel, rel_addr, size, actual_path, is_inline
        )


class AttributeTable:
    """Sample id -> attribute id, registered per SEMANTICS §4.2."""

    __slots__ = ("_emitter", "_by_id", "count", "tracepoint_seen")

    def __init__(self, emitter: Emitter | None) -> None:
        self._emitter = emitter
        self._by_id: dict[int, int] = {}
        self.count = 0
        self.tracepoint_seen = False

    def register(self, attr, name: str, ids) -> bool:
        """Register an attr under a name for the given sample ids (plus the implicit id 0).

        Returns True when a new attribute id was assigned (and announced)."""
        if attr.type == TYPE_TRACEPOINT:
            self.tracepoint_seen = True
        fresh = [i for i in (*ids, 0) if i not in self._by_id]
        if not fresh:
            return False
        aid = self.count
        self.count += 1
        if self._emitter is not None:
            name_id = self._emitter.string(name)
            self._emitter.writer.attributes(
                aid, attr.type, attr.config, name_id, bool(attr.freq), attr.sample_period
            )
        for i in fresh:
            self._by_id[i] = aid
        return True

    def attribute_id(self, sample_id: int) -> int:
        return self._by_id.get(sample_id, -1)
