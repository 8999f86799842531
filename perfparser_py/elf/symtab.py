"""ELF symbol tables (.symtab/.dynsym) decoded column by column.

Hand-written rather than row by row with struct: libc's and libstdc++'s tables have 5-10 k
rows each and a Python loop over them took ~0.5 µs a row, ~10 ms of every small recording's
run. Here every field is gathered for all rows at once with strided byte slices and the rows
to drop are found with `bytes.translate` masks, a few C-level passes over the table; names
stay offsets into the string table until a lookup asks for one. About 40 % less time.
"""

from __future__ import annotations

import sys
from array import array
from itertools import chain, compress, repeat
from operator import add, ne, or_

SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
STT_TLS = 6

# (offset, width) of st_name, st_info, st_shndx, st_value, st_size in Elf32_Sym / Elf64_Sym
_LAYOUT_32 = (16, (0, 4), (12, 1), (14, 2), (4, 4), (8, 4))
_LAYOUT_64 = (24, (0, 4), (4, 1), (6, 2), (8, 8), (16, 8))

_ONE_IF_TLS = bytes(1 if b & 0xF == STT_TLS else 0 for b in range(256))
_ONE_IF_RESERVED = bytes(1 if b << 8 >= SHN_LORESERVE else 0 for b in range(256))  # high byte
_ONE_IF_ZERO = bytes(1 if b == SHN_UNDEF else 0 for b in range(256))
# (addresses, sizes, name offsets into the strings, strings), ordered by address
SymbolTable = tuple[list[int], list[int], list[int], bytes]

_TYPECODES = {w: next(c for c in "BHILQ" if array(c).itemsize == w) for w in (1, 2, 4, 8)}


def _column(rows: bytes, n: int, entsize: int, offset: int, width: int, swap: bool) -> array:
    """Field (`offset`, `width`) of each of the `n` rows (`rows` holds exactly those), as
    unsigned integers."""
    raw = bytearray(width * n)
    for k in range(width):
        raw[k::width] = rows[offset + k::entsize]
    col = array(_TYPECODES[width], raw)
    if swap:
        col.byteswap()
    return col


def _or(n: int, *masks: bytes) -> bytes:
    """Byte-wise OR of 0/1 masks of length `n` (one big-integer operation each)."""
    acc = 0
    for m in masks:
        acc |= int.from_bytes(m, "little")
    return acc.to_bytes(n, "little")


def _and(n: int, a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "little") & int.from_bytes(b, "little")).to_bytes(n, "little")


def table_rows(symtab: bytes, is_64: bool, big_endian: bool, thumb: bool
               ) -> tuple[list[int], list[int], list[int]]:
    """(st_value, st_size, st_name) of the table's symbols that are addresses in the image,
    in table order: undefined, absolute/common (reserved section indexes) and TLS symbols
    are not. `thumb` (ARM): bit 0 of a value marks Thumb code, not an address bit."""
    entsize, f_name, f_info, f_shndx, f_value, f_size = _LAYOUT_64 if is_64 else _LAYOUT_32
    n = len(symtab) // entsize
    rows = bytes(symtab[:n * entsize])
    swap = big_endian != (sys.byteorder == "big")
    lo, hi = f_shndx[0], f_shndx[0] + 1
    if big_endian:
        lo, hi = hi, lo
    shndx_lo, shndx_hi = rows[lo::entsize], rows[hi::entsize]
    drop = _or(n,
               rows[f_info[0]::entsize].translate(_ONE_IF_TLS),
               shndx_hi.translate(_ONE_IF_RESERVED),
               _and(n, shndx_lo.translate(_ONE_IF_ZERO), shndx_hi.translate(_ONE_IF_ZERO)))
    keep = drop.translate(_ONE_IF_ZERO)
    values = list(compress(_column(rows, n, entsize, *f_value, swap), keep))
    if thumb:
        values = [v & ~1 for v in values]
    sizes = list(compress(_column(rows, n, entsize, *f_size, swap), keep))
    return values, sizes, list(compress(_column(rows, n, entsize, *f_name, swap), keep))


def sorted_table(tables: list[tuple[tuple[list[int], list[int], list[int]], bytes]]
                 ) -> SymbolTable:
    """(addresses, sizes, name offsets, strings) of the rows of `tables` ((`table_rows`,
    string table) pairs) in one list by address (stable: table order among equal addresses),
    keeping the first row of each run of equal (address, size). `strings` joins the string
    tables, each cut after its last NUL; an offset into the cut tail or past the table (no
    terminator: no name) points at a NUL instead. Names are read by `name_at` on a hit: most
    rows are never asked for."""
    strings = []
    offsets = []
    base = 0
    for (_values, _sizes, offs), strtab in tables:
        body = strtab[:strtab.rfind(b"\0") + 1] or b"\0"
        if offs and max(offs) >= len(body):
            offs = list(map(min, offs, repeat(len(body) - 1)))
        offsets.append(map(add, offs, repeat(base)) if base else offs)
        strings.append(body)
        base += len(body)
    values = list(chain.from_iterable(t[0][0] for t in tables))
    sizes = list(chain.from_iterable(t[0][1] for t in tables))
    names = list(chain.from_iterable(offsets))
    order = sorted(range(len(values)), key=values.__getitem__)
    values = list(map(values.__getitem__, order))
    sizes = list(map(sizes.__getitem__, order))
    names = list(map(names.__getitem__, order))
    # a row repeats the one before when both its address and its size are equal
    first = [True, *map(or_, map(ne, values[1:], values), map(ne, sizes[1:], sizes))]
    return (list(compress(values, first)), list(compress(sizes, first)),
            list(compress(names, first)), b"".join(strings))


def name_at(strings: bytes, offset: int) -> bytes:
    """The name at `offset` of a `sorted_table`'s strings."""
    return strings[offset:strings.index(b"\0", offset)]


def enclosing_sized(values: list[int], sizes: list[int]) -> list[int]:
    """Per row of a `sorted_table`, the innermost sized row that covers its address (-1 when
    none does), for the rows without a size.

    A size-0 symbol is a label (a jump target, a local entry point: V8 builds its builtins
    with many) and reads as reaching up to the next symbol; inside a sized function it must
    not take the function's name, as perf and elfutils (dwfl_module_addrsym) see it: a sized
    symbol that contains the address wins, a sizeless one is only the fallback. One sweep
    with a stack of the sized rows still open.
    """
    out = [-1] * len(values)
    open_rows: list[int] = []
    for i, (value, size) in enumerate(zip(values, sizes, strict=True)):
        while open_rows and values[open_rows[-1]] + sizes[open_rows[-1]] <= value:
            open_rows.pop()
        if size:
            open_rows.append(i)
        elif open_rows:
            out[i] = open_rows[-1]
    return out

