"""Line programs (DWARF 2-5) and the line table of a unit built from one, by address."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from functools import lru_cache
from itertools import chain
from operator import itemgetter

from ..leb128 import sleb, uint_at, uleb, uleb_end
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
        self._line_table(cu)
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

    def _line_table(self, cu: _Cu) -> None:
        if cu.lines is not None:
            return
        cu.lines, cu.line_addrs, cu.dirs, cu.files = array("i"), array("Q"), [], []
        data = self._s.get("line")
        if data is None or not isinstance(cu.stmt_list, int):
            return
        try:
            rows = self._line_program(cu, data, cu.stmt_list)
        except _MALFORMED:
            return
        # elfutils order: by address, an end_sequence before a row at the same address,
        # otherwise program order.
        rows.sort()
        packed = _pack_rows(rows)
        if packed is None:  # numbers beyond 32 or 64 bits: wider arrays, or lists
            cu.line_addrs = _packed(lambda: map(itemgetter(0), rows), "Q")
            cu.lines = _packed(lambda: chain.from_iterable(map(itemgetter(3, 4, 5), rows)),
                               "iq")
        else:
            cu.line_addrs, cu.lines = packed

    def _line_program(self, cu: _Cu, data, off: int) -> list[tuple]:
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
        return _run(self, cu, data, program, end, version, min_inst, max_ops, line_range,
                    opcode_base, line_base, std_lengths)


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
                   line_base: int) -> tuple[list[int], list[int]]:
    """Address and line advance of each special opcode (max_ops 1), indexed by opcode;
    units share a few headers, so the tables are built once per header."""
    specials = range(opcode_base, 256)
    return ([0] * opcode_base + [min_inst * ((op - opcode_base) // line_range) for op in specials],
            [0] * opcode_base + [line_base + (op - opcode_base) % line_range for op in specials])


