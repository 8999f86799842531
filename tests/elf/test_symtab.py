"""The column-wise symbol table decoder against a plain row-by-row reading of the same
bytes, on generated tables: both layouts and byte orders, dropped rows (undefined, reserved
section indexes, TLS), names sharing suffixes, offsets into an unterminated tail or past the
string table, equal (address, size) rows and several tables."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfparser_py.elf.constants import EM_AARCH64, EM_ARM, EM_RISCV
from perfparser_py.elf.symtab import MAPPING_SYMBOLS, name_at, sorted_table, table_rows

SHNDX = st.sampled_from([0, 1, 2, 0xFF00, 0xFFF1, 0xFFF2, 0x1234])
INFO = st.integers(0, 255)  # includes STT_TLS (6) in the low nibble
VALUE = st.sampled_from([0, 1, 0x1000, 0x1001, 0x2000, 0xFFFF_FFFF])
ROW = st.tuples(st.integers(0, 40), INFO, st.integers(0, 255), SHNDX, VALUE,
                st.sampled_from([0, 4, 16]))
STRTAB = st.binary(max_size=40).map(lambda b: b.replace(b"\1", b"\0"))


def pack(rows, is_64: bool, big: bool) -> bytes:
    e = ">" if big else "<"
    if is_64:
        return b"".join(struct.pack(e + "IBBHQQ", *r) for r in rows)
    return b"".join(struct.pack(e + "IIIBBH", n, v, s, i, o, x) for n, i, o, x, v, s in rows)


def reference(tables, thumb: bool):
    """What the symbol table means, read one row at a time: of the rows of one address and
    size, the name perf would show (named, not weak, global, fewer leading underscores,
    longer, first)."""
    entries = []
    for rows, strtab in tables:
        for name_off, info, _other, shndx, value, size in rows:
            if shndx == 0 or shndx >= 0xFF00 or info & 0xF == 6:
                continue
            end = strtab.find(b"\0", name_off)
            entries.append((value & ~1 if thumb else value, size,
                            strtab[name_off:end] if end >= 0 else b"", info >> 4))
    entries.sort(key=lambda t: t[0])
    runs: list[tuple[int, int, list]] = []  # rows of equal (address, size) in a row
    for value, size, name, binding in entries:
        if not runs or runs[-1][:2] != (value, size):
            runs.append((value, size, []))
        runs[-1][2].append((name, binding))

    def rank(entry):
        name, binding = entry
        return (not name, binding == 2, binding != 1, len(name) - len(name.lstrip(b"_")),
                -len(name))

    return [(value, size, min(names, key=rank)[0]) for value, size, names in runs]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(ROW, max_size=12), STRTAB), min_size=1, max_size=3),
       st.booleans(), st.booleans(), st.booleans())
def test_matches_row_by_row_reading(tables, is_64: bool, big: bool, thumb: bool) -> None:
    if not is_64:
        tables = [([r[:4] + (r[4] & 0xFFFF_FFFF, r[5]) for r in rows], s) for rows, s in tables]
    # a trailing partial row is ignored
    decoded = [(table_rows(pack(rows, is_64, big) + b"\7\7", is_64, big, thumb), strtab)
               for rows, strtab in tables]
    values, sizes, names, strings = sorted_table(decoded)
    got = [(v, s, name_at(strings, n)) for v, s, n in zip(values, sizes, names, strict=True)]
    assert got == reference(tables, thumb)
    # an empty name is a NUL at the offset: what symbol_at tests before reading a name
    assert all((strings[n] == 0) == (name_at(strings, n) == b"") for n in names)


MAPPING_STRTAB = b"\0$x\0$d.12\0$a\0$t.x\0$xrv64i2p1\0$q\0$\0f\0$x\0"
# (name offset, info): untyped `$x`, `$d.12`, `$a`, `$t.x`, `$xrv64i2p1`, `$q`, `$`, a FUNC
# `f`, and a `$x` that is an OBJECT
MAPPING_ROWS = [(1, 0), (4, 0), (10, 0), (13, 0), (18, 0), (29, 0), (32, 0), (34, 0x12),
                (36, 1)]


@pytest.mark.parametrize(("machine", "kept"), [
    (None, ["$x", "$d.12", "$a", "$t.x", "$xrv64i2p1", "$q", "$", "f", "$x"]),
    (EM_ARM, ["$xrv64i2p1", "$q", "$", "f", "$x"]),
    (EM_AARCH64, ["$a", "$t.x", "$xrv64i2p1", "$q", "$", "f", "$x"]),
    (EM_RISCV, ["$a", "$t.x", "$q", "$", "f", "$x"])])
def test_mapping_symbols_are_no_names(machine, kept: list[str]) -> None:
    """ARM's, AArch64's and RISC-V's untyped mapping symbols (`$x`, `$d.N`; RISC-V's `$x`
    with its ISA string) mark code and data, not functions: dropped on those machines, as
    perf drops them; other `$` names and typed symbols stay."""
    rows = [(name, info, 0, 1, 0x1000 + 16 * i, 0) for i, (name, info) in
            enumerate(MAPPING_ROWS)]
    kind = MAPPING_SYMBOLS.get(machine)
    decoded = table_rows(pack(rows, True, False), True, False, False,
                         None if kind is None else (MAPPING_STRTAB, kind))
    _values, _sizes, names, strings = sorted_table([(decoded, MAPPING_STRTAB)])
    got = [name_at(strings, n).decode() for n in names]
    assert got == kept


def test_empty_tables() -> None:
    assert sorted_table([]) == ([], [], [], b"")
    assert sorted_table([(table_rows(b"", True, False, False), b"")]) == ([], [], [], b"\0")


def test_labels_inside_a_sized_function_belong_to_it():
    from perfparser_py.elf.symtab import enclosing_sized

    # f [0x100, 0x200) holds label a and g [0x180, 0x190) with label b; label c follows f
    values = [0x100, 0x120, 0x180, 0x184, 0x200]
    sizes = [0x100, 0, 0x10, 0, 0]
    assert enclosing_sized(values, sizes) == [-1, 0, -1, 2, -1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 5, 2**63, 2**64 - 1]),
                          st.integers(0x7F00_0000_0000, 0x7F00_00FF_FFFF)), max_size=300))
def test_address_order_is_a_stable_sort(values) -> None:
    from array import array

    from perfparser_py.elf.symtab import _address_order

    order = _address_order(array("Q", values), len(values))
    assert list(order) == sorted(range(len(values)), key=values.__getitem__)
