"""Line programs (DWARF 2-5) and the line table of a unit built from one, by address."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from functools import lru_cache
from itertools import chain
from operator import itemgetter

from ..leb128 import sleb, sleb_value, uint_at, uleb, uleb_end, uleb_value
from .constants import DwarfError, _MALFORMED
from .units import _Cu


class Lines:
    """The line-table part of DwarfInfo."""

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
        if cu.files is None:
            self._line_files(cu)
        files = cu.files
        if not 0 <= idx < len(files) and cu.lines is None:
            self._line_table(cu)  # a file the program defines as it runs (DW_LNE_define_file)
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

    def _line_files(self, cu: _Cu) -> None:
        """The unit's directories and files from its line program's header alone: a unit
        whose declarations are all that is asked for (those of another unit's inlined
        scopes, dwz's partial units) has its rows never decoded. _line_table reads the
        header again (a DWARF 2-4 program may add files as it runs)."""
        cu.dirs, cu.files = [], []
        data = self._s.get("line")
        if data is not None and isinstance(cu.stmt_list, int):
            try:
                self._line_program(cu, data, cu.stmt_list)
            except _MALFORMED:
                pass

    def _line_table(self, cu: _Cu) -> None:
        if cu.lines is not None:
            return
        cu.lines, cu.line_addrs, cu.dirs, cu.files = array("i"), array("Q"), [], []
        data = self._s.get("line")
        if data is None or not isinstance(cu.stmt_list, int):
            return
        try:
            program = self._line_program(cu, data, cu.stmt_list)
            packed = _packed_rows(data, self._e == "<", *program) if _COMPILED else None
            if packed is None:  # what only the general decoder holds: its rows decide
                rows = _run(self, cu, data, *program)
        except _MALFORMED:
            return
        if packed is None:
            # elfutils order: by address, an end_sequence before a row at the same
            # address, otherwise program order.
            rows.sort()
            packed = _pack_rows(rows)
        if packed is None:  # numbers beyond 32 or 64 bits: wider arrays, or lists
            cu.line_addrs = _packed(lambda: map(itemgetter(0), rows), "Q")
            cu.lines = _packed(lambda: chain.from_iterable(map(itemgetter(3, 4, 5), rows)),
                               "iq")
        else:
            cu.line_addrs, cu.lines = packed

    def _line_program(self, cu: _Cu, data, off: int) -> tuple:
        """Read the header of the line program at `off` into the unit's directories and
        files; returns the program's extent and parameters, the arguments of _run after
        the section."""
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
            dirs, pos = _header_entries(self, cu, data, pos)
            cu.dirs = [d[0] for d in dirs]
            cu.files, pos = _header_entries(self, cu, data, pos)
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
        return (program, end, version, min_inst, max_ops, line_range, opcode_base, line_base,
                std_lengths)


def _header_entries(dw: Lines, cu: _Cu, sec, pos: int) -> tuple[list, int]:
    """DWARF 5 directory/file entry list: ([(path, directory index)], next position).

    The forms GCC and clang write (line_strp or strp paths, data1, data2 or one-byte udata
    indices, data16 MD5s) are read here, the others by Dies._form: cc1plus's units name
    hundreds of files each."""
    data = sec
    little = dw._e == "<"
    off4 = cu.off_size == 4
    nfmt = data[pos]
    pos += 1
    fmts = []
    for _ in range(nfmt):
        ctype, pos = uleb(sec, pos)
        form, pos = uleb(sec, pos)
        fmts.append((ctype, form))
    count, pos = uleb(sec, pos)
    if count > len(data):
        raise DwarfError("entry count larger than the section")
    out = []
    for _ in range(count):
        path = b""
        d = 0
        for ctype, form in fmts:
            if (form == 0x1F or form == 0x0E) and off4:
                value = (form, uint_at(data, pos, 4, little))
                pos += 4
            elif form == 0x0B or (form == 0x0F and data[pos] < 0x80):
                value = data[pos]
                pos += 1
            elif form == 0x05:
                value = uint_at(data, pos, 2, little)
                pos += 2
            elif form == 0x1E:
                value = None
                pos += 16
            else:
                value, pos = dw._form(cu, form, 0, sec, pos)
            if ctype == 1:
                path = dw._string(cu, value) or b""
            elif ctype == 2 and isinstance(value, int):
                d = value
        out.append((path, d))
    return out, pos


def _run(dw: Lines, cu: _Cu, sec, pos: int, end: int, version: int, min_inst: int,
         max_ops: int, line_range: int, opcode_base: int, line_base: int,
         std_lengths: bytes) -> list[tuple]:
    """The rows (address, 0 for an end_sequence else 1, sequence number, file, line, column)
    of the line program from `pos` to `end`.

    This loop runs for every row of every line table a profile hits: positions and opcodes
    are C numbers; addresses, lines, files and columns stay Python ints (hostile tables
    hold numbers beyond 64 bits). Special opcodes (most of a program) step by table
    lookups when max_ops is 1 (all but VLIW), the frequent set_column / advance_line read
    one-byte LEB128 operands inline, and the standard opcodes are tested in the order of
    their frequency in GCC's output."""
    data = sec
    rows: list[tuple] = []
    seq = 0
    addr = 0
    op_index = 0
    file = 1
    line = 1
    column = 0
    little = dw._e == "<"
    addr_step, line_step = _special_steps(opcode_base, line_range, min_inst, line_base)
    simple = max_ops == 1
    while pos < end:
        op = data[pos]
        pos += 1
        if op >= opcode_base:
            if simple:
                addr += addr_step[op]
            else:
                addr, op_index = _advance(addr, op_index, (op - opcode_base) // line_range,
                                          min_inst, max_ops)
            line += line_step[op]
            rows.append((addr, 1, seq, file, line, column))
            seq += 1
        elif op == 5:
            if data[pos] < 0x80:
                column = data[pos]
                pos += 1
            else:
                column, pos = uleb(sec, pos)
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
            elif data[pos + 1] < 0x80:  # two bytes: 14 bits, sign bit 0x40 of the second
                w = data[pos + 1]
                pos += 2
                line += (v & 0x7F | w << 7) - (w & 0x40) * 0x100
            else:
                delta, pos = sleb(sec, pos)
                line += delta
        elif op == 2:
            v = data[pos]
            if v < 0x80:
                operation = v
                pos += 1
            else:
                operation, pos = uleb(sec, pos)
            if simple:
                addr += min_inst * operation
            else:
                addr, op_index = _advance(addr, op_index, operation, min_inst, max_ops)
        elif op == 0:
            n, pos = uleb(sec, pos)
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
                addr = int.from_bytes(sec[pos + 1:sub_end], "little" if little else "big")
                op_index = 0
            elif sub == 3 and version < 5:  # define_file
                name, p = dw._cstr(sec, pos + 1)
                d, _ = uleb(sec, p)
                cu.files.append((name, d))
            pos = sub_end
        elif op == 4:
            file, pos = uleb(sec, pos)
        elif op == 8:  # const_add_pc
            addr, op_index = _advance(addr, op_index, (255 - opcode_base) // line_range,
                                      min_inst, max_ops)
        elif op == 9:  # fixed_advance_pc
            addr += uint_at(data, pos, 2, little)
            op_index = 0
            pos += 2
        elif op == 12:  # set_isa
            pos = uleb_end(data, pos)
        else:  # unknown standard opcode: skip its operands
            for _ in range(std_lengths[op - 1]):
                pos = uleb_end(data, pos)
    return rows


# _packed_rows pays compiled only: interpreted, _run's tuples and list.sort are faster (an
# extension module's file suffix, not importlib's list of them: its import is ~0.6 ms)
_COMPILED = (__file__ or "").endswith((".so", ".pyd"))
_U64 = 0xFFFFFFFFFFFFFFFF
_I32 = 0x7FFFFFFF
# an advance_line beyond this is left to the general decoder: the line a C number holds
# then stays far from overflowing whatever the program's length (the other steps are
# bytes)
_LINE_STEP = 1 << 40
_SATURATED = 0x7FFFFFFFFFFFFFFF  # what uleb_value gives for a number it cannot hold
_FULL = -3  # _decode_rows: more rows than the arrays have room for
_FIRST_ROWS = 1 << 14
_ZERO_Q = array("Q", [0])
_ZERO_I = array("i", [0])


def _packed_rows(sec, little: bool, pos: int, end: int, version: int, min_inst: int,
                 max_ops: int, line_range: int, opcode_base: int, line_base: int,
                 std_lengths: bytes) -> tuple[array, array] | None:
    """The rows of _run, in the order _line_table sorts them and packed as _pack_rows packs
    them, decoded with C numbers straight into the arrays: a unit of python's debug info
    has ~10 k rows, and the tuple a row was before cost most of its table's time. None
    where _run must decide: a number the arrays or C numbers do not hold, a define_file
    (it adds to the unit's files), VLIW (max_ops > 1) or a malformed program."""
    if max_ops != 1:
        return None
    # Compilers write 4-7 bytes a row: room for one row every two bytes, up to _FIRST_ROWS,
    # then twice as much each time it fills (what a hostile unit length claims is never
    # allocated ahead)
    room = min(max(end - pos, 0) // 2, _FIRST_ROWS) + 64
    addrs = _ZERO_Q * room
    flat = _ZERO_I * (3 * room)
    state = [pos, 0, 0, 0, 1, 1, 0]
    try:
        while True:
            n = _decode_rows(sec, little, end, version, min_inst, line_range, opcode_base,
                             line_base, std_lengths, addrs, flat, state)
            if n != _FULL:
                break
            addrs.extend(_ZERO_Q * len(addrs))
            flat.extend(_ZERO_I * len(flat))
    except _MALFORMED:
        return None
    if n < 0:
        return None
    del addrs[n:]
    del flat[3 * n:]
    return _sort_rows(addrs, flat, n)


def _decode_rows(sec, little: bool, end: int, version: int, min_inst: int, line_range: int,
                 opcode_base: int, line_base: int, std_lengths: bytes, addrs: array,
                 flat: array, state: list) -> int:
    """_run's loop for _packed_rows, max_ops 1: the rows into `addrs` and `flat` in program
    order, except that an end_sequence goes before the rows of its sequence at its own
    address (where the sort puts it, saving it a merge); how many, or -1 for what _run must
    decide. From `state` (position, rows so far, first row of this sequence, address, file,
    line, column) and, when the arrays are full, back into it with _FULL returned: called
    again with more room, it goes on. Reads what _run reads in the same order, so it fails
    where _run does."""
    data = sec
    a = addrs
    f = flat
    room = len(a)
    pos, n, start, addr, file, line, column = state
    addr_step, line_step = _special_steps(opcode_base, line_range, min_inst, line_base)
    const_step = min_inst * ((255 - opcode_base) // line_range)
    while pos < end:
        if n == room:  # an opcode adds one row at most
            state[:] = [pos, n, start, addr, file, line, column]
            return _FULL
        op = data[pos]
        pos += 1
        row = False
        if op >= opcode_base:
            step = addr_step[op]
            if step > _U64 - addr:
                return -1
            addr += step
            line += line_step[op]
            row = True
        elif op == 5:
            if data[pos] < 0x80:
                column = data[pos]
                pos += 1
            else:
                column = uleb_value(data, pos)
                pos = uleb_end(data, pos)
        elif op == 6 or op == 7 or op == 10 or op == 11:  # negate_stmt (frequent), flags
            pass
        elif op == 1:  # copy
            row = True
        elif op == 3:
            v = data[pos]
            if v < 0x80:  # one byte: bit 6 the sign
                pos += 1
                line += v - (v & 0x40) * 2
            else:
                delta = sleb_value(data, pos)
                pos = uleb_end(data, pos)
                if not -_LINE_STEP <= delta <= _LINE_STEP:
                    return -1
                line += delta
                if not -_LINE_STEP <= line <= _LINE_STEP:
                    return -1
        elif op == 2:
            operation = data[pos]
            if operation < 0x80:
                pos += 1
            else:
                operation = uleb_value(data, pos)
                pos = uleb_end(data, pos)
                if operation == _SATURATED:
                    return -1
            if min_inst and operation > (_U64 - addr) // min_inst:
                return -1
            addr += min_inst * operation
        elif op == 0:
            length = uleb_value(data, pos)
            pos = uleb_end(data, pos)
            if length == 0 or length > end - pos:
                return -1  # _run raises
            sub = data[pos]
            if sub == 1:  # end_sequence
                if line < -_I32 - 1 or line > _I32 or column > _I32:
                    return -1
                k = n
                while k > start and a[k - 1] == addr:
                    k -= 1
                j = n
                while j > k:  # rows of its sequence at its address: after it
                    a[j] = a[j - 1]
                    f[3 * j] = f[3 * j - 3]
                    f[3 * j + 1] = f[3 * j - 2]
                    f[3 * j + 2] = f[3 * j - 1]
                    j -= 1
                a[k] = addr
                f[3 * k] = -1
                f[3 * k + 1] = line
                f[3 * k + 2] = column
                n += 1
                start = n
                addr = 0
                file, line, column = 1, 1, 0
            elif sub == 2:  # set_address
                if length - 1 > 8:
                    return -1
                addr = uint_at(data, pos + 1, length - 1, little)
            elif sub == 3 and version < 5:  # define_file
                return -1
            pos += length
        elif op == 4:
            file = uleb_value(data, pos)
            pos = uleb_end(data, pos)
        elif op == 8:  # const_add_pc
            if const_step > _U64 - addr:
                return -1
            addr += const_step
        elif op == 9:  # fixed_advance_pc
            step = uint_at(data, pos, 2, little)
            pos += 2
            if step > _U64 - addr:
                return -1
            addr += step
        elif op == 12:  # set_isa
            pos = uleb_end(data, pos)
        else:  # unknown standard opcode: skip its operands
            for _ in range(std_lengths[op - 1]):
                pos = uleb_end(data, pos)
        if row:
            if file > _I32 or line < -_I32 - 1 or line > _I32 or column > _I32:
                return -1
            a[n] = addr
            f[3 * n] = file
            f[3 * n + 1] = line
            f[3 * n + 2] = column
            n += 1
    return n


def _sort_rows(addrs: array, flat: array, n: int) -> tuple[array, array]:
    """The `n` rows by address, an end_sequence (file -1) before a row at the same address,
    otherwise in their order (a stable sort). The rows come in runs already in order: a
    unit's sequences, each in order as _decode_rows leaves it. Runs whose addresses do
    not interleave (functions, hot and cold code) move as blocks; only those that do, the
    sequences of functions a linker discarded (all placed at 0 by ld), are merged row by
    row."""
    a = addrs
    f = flat
    ordered = True
    starts = [0]
    for i in range(1, n):
        if _before(a[i], f[3 * i], a[i - 1], f[3 * i - 3]):
            ordered = False
            starts.append(i)
        elif f[3 * i - 3] == -1:
            starts.append(i)
    if ordered:
        return addrs, flat
    starts.append(n)
    runs = []
    for k in range(len(starts) - 1):
        lo = starts[k]
        runs.append((a[lo], f[3 * lo] != -1, lo, starts[k + 1]))
    runs.sort()
    out_a = _ZERO_Q * n
    out_f = _ZERO_I * (3 * n)
    o = 0
    i = 0
    while i < len(runs):
        last = runs[i][3] - 1  # the row sorting last in this cluster of runs
        j = i + 1
        while j < len(runs) and not _before(a[last], f[3 * last], a[runs[j][2]],
                                             f[3 * runs[j][2]]):
            hi = runs[j][3] - 1
            if _before(a[last], f[3 * last], a[hi], f[3 * hi]):
                last = hi
            j += 1
        members = sorted(runs[i:j], key=itemgetter(2))  # their rows' order, for ties
        bounds = array("q", [o])
        for _, _, lo, hi in members:
            out_a[o:o + hi - lo] = addrs[lo:hi]
            out_f[3 * o:3 * (o + hi - lo)] = flat[3 * lo:3 * hi]
            o += hi - lo
            bounds.append(o)
        if len(members) > 1:
            _merge_runs(out_a, out_f, bounds)
        i = j
    return out_a, out_f


def _merge_runs(addrs: array, flat: array, bounds: array) -> None:
    """Merge, in place, the consecutive runs of rows between `bounds`, each in order, into
    one (stable: on a tie, the earlier run's row first)."""
    lo = bounds[0]
    hi = bounds[len(bounds) - 1]
    src_a, src_f = addrs[lo:hi], flat[3 * lo:3 * hi]
    dst_a, dst_f = _ZERO_Q * (hi - lo), _ZERO_I * (3 * (hi - lo))
    cuts = array("q")
    for k in range(len(bounds)):
        cuts.append(bounds[k] - lo)
    while len(cuts) > 2:
        merged = array("q", [0])
        runs = len(cuts) - 1
        for k in range(0, runs, 2):
            end = cuts[k + 2] if k + 1 < runs else cuts[k + 1]
            _merge(src_a, src_f, dst_a, dst_f, cuts[k], cuts[k + 1], end)
            merged.append(end)
        cuts = merged
        src_a, dst_a = dst_a, src_a
        src_f, dst_f = dst_f, src_f
    addrs[lo:hi] = src_a
    flat[3 * lo:3 * hi] = src_f


def _merge(src_a: array, src_f: array, dst_a: array, dst_f: array, lo: int, mid: int,
           hi: int) -> None:
    """Rows lo..mid and mid..hi of src, each in order, merged into dst's lo..hi; on a tie,
    the first run's row first."""
    a = src_a
    f = src_f
    da = dst_a
    df = dst_f
    i = lo
    j = mid
    o = lo
    while o < hi:
        if j >= hi or (i < mid and not _before(a[j], f[3 * j], a[i], f[3 * i])):
            k = i
            i += 1
        else:
            k = j
            j += 1
        da[o] = a[k]
        df[3 * o] = f[3 * k]
        df[3 * o + 1] = f[3 * k + 1]
        df[3 * o + 2] = f[3 * k + 2]
        o += 1


def _before(addr_j: int, file_j: int, addr_i: int, file_i: int) -> bool:
    """Whether a row sorts strictly before another, by address and file: a lower address,
    or the same with the first an end_sequence (file -1) and the other not."""
    return addr_j < addr_i or (addr_j == addr_i and file_j == -1 and file_i != -1)


def _advance(addr: int, op_index: int, operation: int, min_inst: int,
             max_ops: int) -> tuple[int, int]:
    """(address, op_index) after advancing by `operation` (DWARF 5 §6.2.5.1)."""
    if max_ops == 1:
        return addr + min_inst * operation, op_index
    return (addr + min_inst * ((op_index + operation) // max_ops),
            (op_index + operation) % max_ops)


def _pack_rows(rows: list[tuple]) -> tuple[array, array] | None:
    """(addresses, (file, line, column) of each row flattened) of line-table rows, in arrays
    of 64-bit and 32-bit numbers; None when a number does not fit."""
    n = len(rows)
    addrs = array("Q", bytes(8 * n))
    lines = array("i", bytes(12 * n))
    a = addrs
    flat = lines
    try:
        for k in range(n):
            row = rows[k]
            a[k] = row[0]
            flat[3 * k] = row[3]
            flat[3 * k + 1] = row[4]
            flat[3 * k + 2] = row[5]
    except OverflowError:
        return None
    return addrs, lines


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
                   line_base: int) -> tuple[array, array]:
    """Address and line advance of each special opcode (max_ops 1), indexed by opcode;
    units share a few headers, so the tables are built once per header."""
    specials = range(opcode_base, 256)
    return (array("q", [0] * opcode_base
                  + [min_inst * ((op - opcode_base) // line_range) for op in specials]),
            array("q", [0] * opcode_base
                  + [line_base + (op - opcode_base) % line_range for op in specials]))


