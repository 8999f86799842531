"""Inlined copies without an entry address keep their own callers.

LLVM (clang, rustc) gives an inlined copy whose code is not contiguous only DW_AT_ranges, no
entry pc: every such copy of one function then has address 0 (upstream's rule, which the
upstream vectors show), the same declaration and often the same call site. The locations of
two copies must still differ, or the second copy's samples get the first copy's callers
(seen as 7 % of the samples of a Rust program charged to the wrong function)."""

from __future__ import annotations

import io

from perfparser_py.compare import logical_frames
from perfparser_py.elf.dwarf import Scope
from perfparser_py.emit import Emitter
from perfparser_py.kernel.symbols import KernelSymbols
from perfparser_py.protocol import StreamWriter, read_stream
from perfparser_py.session import Mapping
from perfparser_py.symbolize import Symbolizer
from perfparser_py.textdump import StreamState

RANGE_RS, HOT_RS = b"/rustc/library/core/src/iter/range.rs", b"/src/hot.rs"


def _copy(caller: str, caller_line: int, die: int) -> tuple[Scope, list[Scope]]:
    """`caller` with Range::next inlined at caller_line and spec_next inlined into that, both
    copies without an entry pc; DIE offsets from `die` on."""
    sub = Scope(caller, 0x1000 + die, HOT_RS, caller_line - 2, 1, None, -1, -1, die)
    nxt = Scope("Range::next", None, RANGE_RS, 856, 5, HOT_RS, caller_line, 14, die + 1)
    spec = Scope("Range::spec_next", None, RANGE_RS, 771, 5, RANGE_RS, 857, 14, die + 2)
    return sub, [nxt, spec]


class _Dwarf:
    def __init__(self, scopes: dict[int, tuple[Scope, list[Scope]]]) -> None:
        self._scopes = scopes

    def line_at(self, x: int) -> tuple[bytes, int, int]:
        return RANGE_RS, 772, 12

    def scopes_at(self, x: int) -> tuple[Scope, list[Scope]]:
        return self._scopes[x]


class _Image:
    """The ELF symbol of each caller (it names the non-inlined frame)."""

    def symbol_at(self, x: int) -> tuple[str, int, int]:
        start = x & ~0xFF
        return {0x1100: "hot::apply_n", 0x1200: "hot::hash_loop"}[start], start, 0x100


def _symbolizer(writer: StreamWriter, scopes: dict) -> Symbolizer:
    """A Symbolizer whose DWARF has `scopes` (a subclass: the compiled class has no instance
    dict to put a stand-in in)."""

    class WithScopes(Symbolizer):
        def _dwarf_for(self, image):
            return _Dwarf(scopes)

    return WithScopes(Emitter(writer), KernelSymbols(writer, "/dev/null", "/", []), None)


def test_inlined_copies_without_entry_pc_keep_their_callers():
    out = io.BytesIO()
    writer = StreamWriter(out, "current")
    writer.header()
    scopes = {0x1100: _copy("hot::apply_n", 30, 0x100), 0x1200: _copy("hot::hash_loop", 36, 0x200)}
    sym = _symbolizer(writer, scopes)
    mapping = Mapping(0x5000, 0x7000, 0, b"/bin/hot", "/bin/hot", _Image(), 0x4000, 0x5000)
    ids = [sym._in_image(_Image(), mapping, 0x4000 + x, 42, False, -1, -1, -1)
           for x in (0x1100, 0x1200)]
    writer.flush()
    state = StreamState.from_messages(read_stream(out.getvalue(), "current").messages)
    names = [[f[0] for f in logical_frames(state, [lid])] for lid in ids]
    assert names == [["Range::spec_next", "Range::next", "hot::apply_n"],
                     ["Range::spec_next", "Range::next", "hot::hash_loop"]]


class _PiecesImage:
    """`f` and its `f.cold` part: one DWARF subprogram (DW_AT_ranges, no entry pc), two ELF
    symbols."""

    def symbol_at(self, x: int) -> tuple[str, int, int]:
        if x >= 0x2000:
            return "f(int) [clone .cold]", 0x2000, 0x40
        return "f(int)", 0x1000, 0x100


def test_each_piece_of_a_function_is_named_by_its_own_symbol():
    out = io.BytesIO()
    writer = StreamWriter(out, "current")
    writer.header()
    f = Scope("f", None, HOT_RS, 10, 1, None, -1, -1, 0x300)
    sym = _symbolizer(writer, {0x1010: (f, []), 0x2010: (f, []), 0x1020: (f, [])})
    image = _PiecesImage()
    mapping = Mapping(0x5000, 0x8000, 0, b"/bin/hot", "/bin/hot", image, 0x4000, 0x5000)
    ids = [sym._in_image(image, mapping, 0x4000 + x, 42, False, -1, -1, -1)
           for x in (0x1010, 0x2010, 0x1020)]
    writer.flush()
    state = StreamState.from_messages(read_stream(out.getvalue(), "current").messages)
    names = [[f[0] for f in logical_frames(state, [lid])] for lid in ids]
    assert names == [["f(int)"], ["f(int) [clone .cold]"], ["f(int)"]]
