"""ELF symbol tables (.symtab/.dynsym) decoded column by column.

Hand-written rather than row by row with struct: libc's and libstdc++'s tables have 5-10 k
rows each and a Python loop over them took ~0.5 µs a row, ~10 ms of every small recording's
run. Here every field is gathered for all rows at once with strided byte slices and the rows
to drop are found with `bytes.translate` masks, a few C-level passes over the table; names
stay offsets into the string table until a lookup asks for one. About 40 % less time. The
merged table is sorted and its aliases ranked by loops over the rows (`sorted_table`), which
are C loops when compiled.
"""

from __future__ import annotations

import sys
from array import array
from itertools import compress

SHN_UNDEF = 0
STB_GLOBAL = 1
STB_WEAK = 2
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
               ) -> tuple[list[int], list[int], list[int], list[int]]:
    """(st_value, st_size, st_name, binding) of the table's symbols that are addresses in
    the image, in table order: undefined, absolute/common (reserved section indexes) and TLS
    symbols are not. `thumb` (ARM): bit 0 of a value marks Thumb code, not an address bit."""
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
    bindings = [info >> 4 for info in compress(rows[f_info[0]::entsize], keep)]
    return (values, sizes, list(compress(_column(rows, n, entsize, *f_name, swap), keep)),
            bindings)


def sorted_table(tables: list[tuple[tuple[list[int], list[int], list[int], list[int]], bytes]]
                 ) -> SymbolTable:
    """(addresses, sizes, name offsets, strings) of the rows of `tables` ((`table_rows`,
    string table) pairs) in one list by address (stable: table order among equal addresses),
    keeping one row of each run of equal (address, size): the name perf shows for those
    aliases (`_best_alias`). `strings` joins the string tables, each cut after its last NUL;
    an offset into the cut tail or past the table (no terminator: no name) points at a NUL
    instead. Names are read by `name_at` on a hit: most rows are never asked for. Loops over
    the rows, in C when compiled (symtab.pxd)."""
    strings = []
    values: list[int] = []
    sizes: list[int] = []
    offsets: list[int] = []
    bindings: list[int] = []
    base = 0
    for (t_values, t_sizes, t_offsets, t_bindings), strtab in tables:
        body = strtab[:strtab.rfind(b"\0") + 1] or b"\0"
        last = len(body) - 1
        values.extend(t_values)
        sizes.extend(t_sizes)
        bindings.extend(t_bindings)
        for off in t_offsets:
            offsets.append(base + (off if off < last else last))
        strings.append(body)
        base += len(body)
    joined = b"".join(strings)
    n = len(values)
    order = sorted(range(n), key=values.__getitem__)
    values = [values[i] for i in order]
    sizes = [sizes[i] for i in order]
    offsets = [offsets[i] for i in order]
    bindings = [bindings[i] for i in order]
    out_values: list[int] = []
    out_sizes: list[int] = []
    out_names: list[int] = []
    lo = 0
    while lo < n:
        value = values[lo]
        size = sizes[lo]
        hi = lo + 1
        while hi < n and values[hi] == value and sizes[hi] == size:
            hi += 1
        out_values.append(value)
        out_sizes.append(size)
        # a run of aliases: its first row takes the best name
        out_names.append(offsets[lo] if hi == lo + 1
                         else offsets[_best_alias(joined, offsets, bindings, lo, hi)])
        lo = hi
    return out_values, out_sizes, out_names, joined


def _best_alias(strings: bytes, names: list[int], bindings: list[int], lo: int, hi: int
                ) -> int:
    """The row of the run [lo, hi) of aliases whose name perf shows (symbols__fixup_duplicate's
    choose_best_symbol): a named one, not weak, global (`_rank`), fewer leading underscores,
    the longer name, then table order. So a vDSO's `__vdso_clock_gettime` wins over the weak
    `clock_gettime`, libc's `clock_gettime` over the local `__clock_gettime_2`. The names
    are read only for the rows `_rank` leaves tied, a third of libc's runs."""
    best = lo
    best_rank = 8
    tied = 0
    for i in range(lo, hi):
        rank = _rank(strings, names[i], bindings[i])
        if rank < best_rank:
            best, best_rank, tied = i, rank, 1
        elif rank == best_rank:
            tied += 1
    if tied == 1:
        return best
    best_under = best_len = -1
    for i in range(best, hi):
        off = names[i]
        if _rank(strings, off, bindings[i]) != best_rank:
            continue
        under = 0
        while strings[off + under] == 0x5F:  # "_"; the name's NUL ends it at the latest
            under += 1
        length = strings.index(b"\0", off) - off
        if best_under < 0 or under < best_under or (under == best_under and length > best_len):
            best, best_under, best_len = i, under, length
    return best


def _rank(strings: bytes, offset: int, binding: int) -> int:
    """The first three of _best_alias's criteria as one number, lower is better."""
    return ((4 if strings[offset] == 0 else 0) + (2 if binding == STB_WEAK else 0)
            + (1 if binding != STB_GLOBAL else 0))


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

