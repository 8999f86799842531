"""ELF symbol tables (.symtab/.dynsym) decoded column by column.

Hand-written rather than row by row with struct: libc's and libstdc++'s tables have 5-10 k
rows each and a Python loop over them took ~0.5 µs a row, ~10 ms of every small recording's
run. Here every field is gathered for all rows at once with strided byte slices and the rows
to drop are found with `bytes.translate` masks, a few C-level passes over the table; names
stay offsets into the string table until a lookup asks for one. About 40 % less time. The
merged table is sorted (a radix sort of the addresses) and its aliases ranked by loops over
the rows (`sorted_table`), C loops over u64 views when compiled: with lists of ints and
list.sort they took ~600 ns a row (3 ms of libc's debug file, 28 ms of cc1plus's, before a
split run's first sample), now ~150.
"""

from __future__ import annotations

import sys
from array import array

from .constants import EM_AARCH64, EM_ARM, EM_RISCV

SHN_UNDEF = 0
STB_GLOBAL = 1
STB_WEAK = 2
SHN_LORESERVE = 0xFF00
STT_NOTYPE = 0
STT_TLS = 6
# the machines whose toolchains mark code and data in .symtab with mapping symbols: the
# letters after their `$`, and whether more than `.N` may follow (RISC-V's `$x` goes on with
# its ISA string) (ARM and AArch64 ELF ABIs, RISC-V psABI; perf's filter)
MAPPING_SYMBOLS = {EM_ARM: (b"adtx", False), EM_AARCH64: (b"dx", False),
                   EM_RISCV: (b"dx", True)}

# (offset, width) of st_name, st_info, st_shndx, st_value, st_size in Elf32_Sym / Elf64_Sym
_LAYOUT_32 = (16, (0, 4), (12, 1), (14, 2), (4, 4), (8, 4))
_LAYOUT_64 = (24, (0, 4), (4, 1), (6, 2), (8, 8), (16, 8))

_ONE_IF_TLS = bytes(1 if b & 0xF == STT_TLS else 0 for b in range(256))
_ONE_IF_RESERVED = bytes(1 if b << 8 >= SHN_LORESERVE else 0 for b in range(256))  # high byte
_ONE_IF_ZERO = bytes(1 if b == SHN_UNDEF else 0 for b in range(256))
# (addresses, sizes, name offsets into the strings, strings), ordered by address (lists: the
# persistent cache marshals them)
SymbolTable = tuple[list[int], list[int], list[int], bytes]

_HOST_BIG = sys.byteorder == "big"


def _column(rows: bytes, n: int, entsize: int, offset: int, width: int, big_endian: bool
            ) -> array:
    """Field (`offset`, `width`) of each of the `n` rows (`rows` holds exactly those), as
    u64s: each of its bytes goes where it lands in the host's u64, one strided copy each."""
    raw = bytearray(8 * n)
    for k in range(width):
        j = width - 1 - k if big_endian else k  # byte k of the field is the value's byte j
        raw[(7 - j if _HOST_BIG else j)::8] = rows[offset + k::entsize]
    return array("Q", raw)


def _or(n: int, *masks: bytes) -> bytes:
    """Byte-wise OR of 0/1 masks of length `n` (one big-integer operation each)."""
    acc = 0
    for m in masks:
        acc |= int.from_bytes(m, "little")
    return acc.to_bytes(n, "little")


def _and(n: int, a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "little") & int.from_bytes(b, "little")).to_bytes(n, "little")


def table_rows(symtab: bytes, is_64: bool, big_endian: bool, thumb: bool,
               mapping: tuple[bytes, tuple[bytes, bool]] | None = None
               ) -> tuple[array, array, array, bytes, bytes]:
    """(st_value, st_size, st_name as u64 arrays, st_info, keep) of the table's rows, `keep`
    1 for those that are addresses in the image, 0 for undefined, absolute/common (reserved
    section indexes) and TLS symbols. `thumb` (ARM): bit 0 of a value marks Thumb code, not
    an address bit. `mapping`: (the string table, its machine's MAPPING_SYMBOLS) to drop
    the mapping symbols too."""
    entsize, f_name, f_info, f_shndx, f_value, f_size = _LAYOUT_64 if is_64 else _LAYOUT_32
    n = len(symtab) // entsize
    rows = bytes(symtab[:n * entsize])
    lo, hi = f_shndx[0], f_shndx[0] + 1
    if big_endian:
        lo, hi = hi, lo
    shndx_lo, shndx_hi = rows[lo::entsize], rows[hi::entsize]
    infos = rows[f_info[0]::entsize]
    drop = _or(n,
               infos.translate(_ONE_IF_TLS),
               shndx_hi.translate(_ONE_IF_RESERVED),
               _and(n, shndx_lo.translate(_ONE_IF_ZERO), shndx_hi.translate(_ONE_IF_ZERO)))
    values = _column(rows, n, entsize, *f_value, big_endian)
    if thumb:
        values = array("Q", [v & ~1 for v in values])
    names = _column(rows, n, entsize, *f_name, big_endian)
    if mapping is not None:
        drop = _mapping_symbols_dropped(drop, infos, names, *mapping)
    return (values, _column(rows, n, entsize, *f_size, big_endian), names, infos,
            drop.translate(_ONE_IF_ZERO))


def _mapping_symbols_dropped(drop: bytes, infos: bytes, names: array, strtab: bytes,
                             kind: tuple[bytes, bool]) -> bytes:
    """`drop` with the mapping symbols set too: untyped `$` + one of the letters of `kind`
    (MAPPING_SYMBOLS'), then nothing or `.` and anything (or anything, where `kind` says so),
    which mark where code or data starts, not functions (`$x.0` at a function's first
    address is no name for it)."""
    letters, any_suffix = kind
    out = bytearray(drop)
    end = len(strtab)
    for i in range(len(infos)):
        off = names[i]
        if (infos[i] & 0xF == STT_NOTYPE and off + 1 < end and strtab[off] == 0x24  # `$`
                and strtab[off + 1] in letters
                and (any_suffix or off + 2 >= end or strtab[off + 2] in b"\0.")):
            out[i] = 1
    return bytes(out)


def sorted_table(tables: list[tuple[tuple[array, array, array, bytes, bytes], bytes]]
                 ) -> SymbolTable:
    """(addresses, sizes, name offsets, strings) of the rows of `tables` ((`table_rows`,
    string table) pairs) in one list by address (stable: table order among equal addresses),
    keeping one row of each run of equal (address, size): the name perf shows for those
    aliases (`_best_alias`). `strings` joins the string tables, each cut after its last NUL;
    an offset into the cut tail or past the table (no terminator: no name) points at a NUL
    instead. Names are read by `name_at` on a hit: most rows are never asked for."""
    total = sum(len(rows[0]) for rows, _strtab in tables)  # room for every row
    values = array("Q", bytes(8 * total))
    sizes = array("Q", bytes(8 * total))
    offsets = array("Q", bytes(8 * total))
    infos = bytearray(total)
    strings = []
    n = base = 0
    for rows, strtab in tables:
        body = strtab[:strtab.rfind(b"\0") + 1] or b"\0"
        n = _append_kept(values, sizes, offsets, infos, n, *rows, base, len(body) - 1)
        strings.append(body)
        base += len(body)
    joined = b"".join(strings)
    if n == 0:
        return [], [], [], joined
    order = _address_order(values, n)
    return _merged(values, sizes, offsets, infos, order, n, joined)


def _address_order(values: array, n: int) -> array:
    """The indices 0..n-1 sorted by values[i], equal values in index order: an LSD radix sort,
    one counting pass per byte in which the values differ (an image's addresses share their
    high bytes: libc's differ in 3). A symbol table comes in no order (libc's 8 k rows are
    3.8 k ascending runs), where the unpredictable compares of a merge sort cost ~140 ns a
    row."""
    src = array("Q", bytes(8 * n))
    dst = array("Q", bytes(8 * n))
    counts = array("Q", bytes(8 * 256))
    keys = values
    a = src
    b = dst
    count = counts
    differ = 0  # the bits in which some value differs from the first
    k = 0
    while k < n:
        a[k] = k
        differ |= keys[k] ^ keys[0]
        k += 1
    shift = 0
    while shift < 64:
        if differ >> shift & 0xFF:
            k = 0
            while k < 256:
                count[k] = 0
                k += 1
            k = 0
            while k < n:
                count[keys[k] >> shift & 0xFF] += 1
                k += 1
            at = 0  # each byte value's first slot
            k = 0
            while k < 256:
                at, count[k] = at + count[k], at
                k += 1
            k = 0
            while k < n:
                x = a[k]
                digit = keys[x] >> shift & 0xFF
                b[count[digit]] = x
                count[digit] += 1
                k += 1
            a, b = b, a
            src, dst = dst, src
        shift += 8
    return src


def _append_kept(values: array, sizes: array, offsets: array, infos: bytearray, n: int,
                 t_values: array, t_sizes: array, t_names: array, t_infos: bytes, keep: bytes,
                 base: int, last: int) -> int:
    """Copy the kept rows of one table (`table_rows`) to the merged columns from row `n` on;
    returns the rows there now. Their name offsets go into the joined strings, where the
    table's start at `base`: one past its last NUL (`last`) points at that NUL."""
    k = 0
    while k < len(keep):
        if keep[k]:
            values[n] = t_values[k]
            sizes[n] = t_sizes[k]
            off = t_names[k]
            offsets[n] = base + (off if off < last else last)
            infos[n] = t_infos[k]
            n += 1
        k += 1
    return n


def _merged(values: array, sizes: array, offsets: array, infos: bytearray, order: array,
            n: int, strings: bytes) -> SymbolTable:
    """sorted_table's rows in `order`, one of each run of equal (address, size)."""
    out_values: list[int] = []
    out_sizes: list[int] = []
    out_names: list[int] = []
    lo = 0
    while lo < n:
        i = order[lo]
        value = values[i]
        size = sizes[i]
        hi = lo + 1
        while hi < n and values[order[hi]] == value and sizes[order[hi]] == size:
            hi += 1
        out_values.append(value)
        out_sizes.append(size)
        # a run of aliases: its first row takes the best name
        out_names.append(offsets[i] if hi == lo + 1
                         else offsets[_best_alias(strings, offsets, infos, order, lo, hi)])
        lo = hi
    return out_values, out_sizes, out_names, strings


def _best_alias(strings: bytes, names: array, infos: bytearray, order: array, lo: int, hi: int
                ) -> int:
    """The row (`order[lo:hi]`) of the run of aliases whose name perf shows
    (symbols__fixup_duplicate's choose_best_symbol): a named one, not weak, global (`_rank`),
    fewer leading underscores, the longer name, then table order. So a vDSO's
    `__vdso_clock_gettime` wins over the weak `clock_gettime`, libc's `clock_gettime` over the
    local `__clock_gettime_2`. The names are read only for the rows `_rank` leaves tied, a
    third of libc's runs."""
    best = order[lo]
    best_rank = 8
    tied = 0
    for k in range(lo, hi):
        i = order[k]
        rank = _rank(strings, names[i], infos[i])
        if rank < best_rank:
            best, best_rank, tied = i, rank, 1
        elif rank == best_rank:
            tied += 1
    if tied == 1:
        return best
    best_under = best_len = -1
    for k in range(lo, hi):
        i = order[k]
        off = names[i]
        if _rank(strings, off, infos[i]) != best_rank:
            continue
        under = 0
        while strings[off + under] == 0x5F:  # "_"; the name's NUL ends it at the latest
            under += 1
        length = strings.index(b"\0", off) - off
        if best_under < 0 or under < best_under or (under == best_under and length > best_len):
            best, best_under, best_len = i, under, length
    return best


def _rank(strings: bytes, offset: int, info: int) -> int:
    """The first three of _best_alias's criteria as one number, lower is better, for the row
    of name `offset` and st_info `info`."""
    binding = info >> 4
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

