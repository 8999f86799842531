"""CFI rows (perfparser_py.elf.cfi) against pyelftools' CFI decoding, plus hostile input."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from bisect import bisect_right
from pathlib import Path

import pytest
from elftools.dwarf.callframe import FDE
from elftools.elf.elffile import ELFFile

from perfparser_py.elf.cfi import (
    CFA_EXPR,
    CFA_REG,
    EXPR,
    OFFSET,
    RA_SIGN_STATE,
    REGISTER,
    SAME,
    SIGNED,
    UNDEF,
    VAL_EXPR,
    VAL_OFFSET,
    Cfi,
)
from perfparser_py.elf.constants import EM_AARCH64, EM_X86_64
from perfparser_py.elf.image import ElfImage

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
SYSLIB = CORPUS / "sysroot" / "usr" / "lib" / "x86_64-linux-gnu"

_KINDS = {"UNDEFINED": UNDEF, "SAME_VALUE": SAME, "OFFSET": OFFSET, "VAL_OFFSET": VAL_OFFSET,
          "REGISTER": REGISTER, "EXPRESSION": EXPR, "VAL_EXPRESSION": VAL_EXPR}


def _oracle_rows(path: Path, debug_frame: bool, limit: int):
    """(pc, pc_end, cfa, regs) per pyelftools table row for a sample of FDEs."""
    with open(path, "rb") as f:
        dw = ELFFile(f).get_dwarf_info()
        entries = dw.CFI_entries() if debug_frame else dw.EH_CFI_entries()
        fdes = [e for e in entries if isinstance(e, FDE)]
        random.Random(1).shuffle(fdes)
        out = []
        for fde in fdes[:limit]:
            try:
                table = fde.get_decoded().table
            except Exception:  # pyelftools' own decoding bugs: skip that FDE
                continue
            end = fde.header["initial_location"] + fde.header["address_range"]
            for i, line in enumerate(table):
                nxt = table[i + 1]["pc"] if i + 1 < len(table) else end
                if nxt <= line["pc"]:
                    continue
                rule = line["cfa"]
                if rule.expr is not None:
                    cfa = (CFA_EXPR, bytes(rule.expr), 0)
                else:
                    cfa = (CFA_REG, rule.reg, rule.offset)
                regs = {}
                for k, v in line.items():
                    if isinstance(k, int):
                        arg = bytes(v.arg) if v.type in ("EXPRESSION", "VAL_EXPRESSION") else v.arg
                        regs[k] = (_KINDS[v.type], arg if arg is not None else 0)
                out.append((line["pc"], nxt, cfa, regs))
        return out


def _compare(path: Path, debug_frame: bool = False, limit: int = 300) -> int:
    image = ElfImage.open(str(path))
    assert image is not None
    cfi = Cfi.for_image(image)
    assert cfi is not None
    checked = 0
    for pc, end, cfa, regs in _oracle_rows(path, debug_frame, limit):
        for x in {pc, (pc + end) // 2, end - 1}:
            row = cfi.row(x)
            assert row is not None, hex(x)
            assert row.cfa == cfa, hex(x)
            got = {k: v for k, v in row.regs.items()}
            assert got == regs, hex(x)
            assert row.lo <= x < row.hi
            checked += 1
    return checked


@pytest.mark.parametrize("path", [
    CORPUS / "recorded" / "dwarf" / "hotloop",
    CORPUS / "recorded" / "inline" / "inline",
    CORPUS / "upstream" / "vector_static_gcc" / "vector_static_gcc_v9.1.0",
    SYSLIB / "libc.so.6",
    SYSLIB / "libstdc++.so.6.0.30",
])
def test_eh_frame_rows_match_pyelftools(path: Path) -> None:
    assert _compare(path) > 10


def test_uncovered_addresses_have_no_row() -> None:
    image = ElfImage.open(str(CORPUS / "recorded" / "dwarf" / "hotloop"))
    cfi = Cfi.for_image(image)
    assert cfi.row(0) is None
    assert cfi.row(0xFFFFFFFFFFFF) is None


class _FakeImage:
    """Minimal ElfImage stand-in carrying hand-made sections."""

    def __init__(self, sections: dict[str, tuple[int, bytes]], is_64: bool = True,
                 e_machine: int = EM_X86_64) -> None:
        self._s = sections
        self.is_64 = is_64
        self.e_machine = e_machine
        self.little_endian = True
        self.debug = None

    def section(self, name: str):
        s = self._s.get(name)
        return None if s is None else (s[0], memoryview(s[1]))


def _entry(body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<I", len(body)) + body


def _debug_frame(addr_size: int, ra: int, cie_ops: bytes, fde_ops: bytes, begin: int,
                 size: int) -> bytes:
    fmt = "<Q" if addr_size == 8 else "<I"
    cie = _entry(struct.pack("<I", 0xFFFFFFFF) + bytes([4]) + b"\0" + bytes([addr_size, 0])
                 + bytes([1, 0x7C, ra]) + cie_ops)  # code align 1, data align -4
    fde = _entry(struct.pack("<I", 0) + struct.pack(fmt, begin) + struct.pack(fmt, size) + fde_ops)
    return cie + fde


def test_debug_frame_v4_with_state_stack_and_args_size() -> None:
    # CIE: def_cfa r31+0; FDE: advance 4, def_cfa_offset 16, offset r30 at cfa-8 (data align -4),
    # remember, advance 4, def_cfa_offset 32, GNU_args_size 8, advance 4, restore_state.
    fde_ops = bytes([0x44, 0x0E, 16, 0x80 | 30, 2, 0x0A, 0x44, 0x0E, 32, 0x2E, 8, 0x44, 0x0B])
    data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), fde_ops, 0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
    assert cfi.row(0x1000).cfa == (CFA_REG, 31, 0)
    assert cfi.row(0x1005).cfa == (CFA_REG, 31, 16)
    assert cfi.row(0x1005).regs == {30: (OFFSET, -8)}
    assert cfi.row(0x1008).cfa == (CFA_REG, 31, 32)
    assert cfi.row(0x100C).cfa == (CFA_REG, 31, 16)
    assert cfi.row(0x103F).regs == {30: (OFFSET, -8)}
    assert cfi.row(0x1040) is None


# A pac-ret function's FDE (GCC -mbranch-protection=standard): paciasp, a frame, an early
# return's epilogue (autiasp) between remember_state and restore_state, then the rest.
_PAC_FDE = bytes([0x44, 0x2D,                       # paciasp: the return address signed
                  0x44, 0x0E, 16, 0x80 | 29, 4, 0x80 | 30, 2,  # cfa+16; x29, x30 saved
                  0x44, 0x0A,                       # remember
                  0x44, 0x2D,                       # autiasp: no longer signed
                  0x44, 0x0B])                      # restore_state: signed again


@pytest.mark.parametrize("opcode", [0x2D, 0x2C])
def test_aarch64_rows_say_where_the_return_address_is_signed(opcode: int) -> None:
    """DW_CFA_AARCH64_negate_ra_state (0x2d) and its FEAT_PAuthLR form (0x2c) flip the
    RA_SIGN_STATE pseudo-register, which remember_state and restore_state keep as they keep
    the register rules."""
    data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), _PAC_FDE.replace(b"\x2d", bytes([opcode])),
                        0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}, e_machine=EM_AARCH64))
    signed = {pc: RA_SIGN_STATE in cfi.row(pc).regs for pc in range(0x1000, 0x1040, 4)}
    assert signed == {0x1000: False, 0x1004: True, 0x1008: True, 0x100C: True, 0x1010: False,
                      **{pc: True for pc in range(0x1014, 0x1040, 4)}}
    assert cfi.row(0x1008).regs == {29: (OFFSET, -16), 30: (OFFSET, -8),
                                    RA_SIGN_STATE: (SIGNED, 0)}


def test_opcode_0x2d_is_aarch64s_only() -> None:
    """On another machine 0x2d (SPARC's window_save) changes no rule, and 0x2c is no
    operation at all."""
    data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), _PAC_FDE, 0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
    assert cfi.row(0x1008).regs == {29: (OFFSET, -16), 30: (OFFSET, -8)}
    data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), _PAC_FDE.replace(b"\x2d", b"\x2c"),
                        0x1000, 0x40)
    assert Cfi.for_image(_FakeImage({".debug_frame": (0, data)})).row(0x1008) is None


# An FDE whose rows remember and restore state, and restore a CIE rule, on both sides of
# every row's end: (lo, hi, CFA offset from r31, rules) of each row.
_STATE_CIE = bytes([0x0C, 31, 0, 0x80 | 29, 1])  # def_cfa r31+0; r29 at cfa-4
_STATE_FDE = bytes([0x44,                           # advance 4
                    0x0E, 16, 0x80 | 30, 2, 0x0A,   # cfa+16; r30 at cfa-8; remember
                    0x44,
                    0x0E, 32, 0x80 | 29, 4,         # cfa+32; r29 at cfa-16
                    0x44,
                    0xC0 | 29,                      # restore r29: the CIE's rule
                    0x44,
                    0x0B, 0x08, 30])                # restore_state; r30 same_value
_STATE_ROWS = [(0x1000, 0x1004, 0, {29: (OFFSET, -4)}),
               (0x1004, 0x1008, 16, {29: (OFFSET, -4), 30: (OFFSET, -8)}),
               (0x1008, 0x100C, 32, {29: (OFFSET, -16), 30: (OFFSET, -8)}),
               (0x100C, 0x1010, 32, {29: (OFFSET, -4), 30: (OFFSET, -8)}),
               (0x1010, 0x1040, 16, {29: (OFFSET, -4), 30: (SAME, 0)})]  # to the FDE's end


@pytest.mark.parametrize("order", ["forward", "backward", "shuffled"])
def test_rows_run_to_the_asked_address_in_any_order(order: str) -> None:
    """The program runs only up to the row covering an address, so each address sees the
    state stack and the CIE's rules as a run through the whole FDE would; the rows found
    before are reused, whichever address found them, and the last row ends with the FDE."""
    data = _debug_frame(8, 30, _STATE_CIE, _STATE_FDE, 0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
    pcs = list(range(0x1000, 0x1040))
    if order == "backward":
        pcs.reverse()
    elif order == "shuffled":
        random.Random(3).shuffle(pcs)
    seen = {}
    for pc in pcs:
        row = cfi.row(pc)
        lo, hi, off, regs = next(r for r in _STATE_ROWS if r[0] <= pc < r[1])
        assert (row.lo, row.hi, row.cfa, row.regs) == (lo, hi, (CFA_REG, 31, off), regs), hex(pc)
        assert seen.setdefault(lo, row) is row
    assert cfi.row(0x1040) is None


def test_function_at_is_the_range_of_the_covering_fde() -> None:
    data = _debug_frame(8, 30, _STATE_CIE, _STATE_FDE, 0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
    assert [cfi.function_at(pc) for pc in (0x1000, 0x1020, 0x103F)] == [(0x1000, 0x1040)] * 3
    assert cfi.function_at(0xFFF) is None and cfi.function_at(0x1040) is None


def test_rows_and_steps_hold_one_tuple_for_each_distinct_rule() -> None:
    """Rows repeat their rules (cc1plus: ~80 k in 16 k rows, a few hundred distinct): equal
    rules, CFA rules and compiled steps' rules are one object, whichever row made them."""
    from perfparser_py.unwind.rules import compile_step

    data = _debug_frame(8, 30, _STATE_CIE, _STATE_FDE, 0x1000, 0x40)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
    first, third, fourth = cfi.row(0x1000), cfi.row(0x1008), cfi.row(0x100C)
    assert first.regs[29] == fourth.regs[29] and first.regs[29] is fourth.regs[29]
    assert third.cfa == fourth.cfa and third.cfa is fourth.cfa
    a, b = compile_step(third, 8), compile_step(fourth, 8)
    assert a.rules[1] == b.rules[1] == (30, OFFSET, -8) and a.rules[1] is b.rules[1]


def test_the_shared_rules_are_bounded() -> None:
    """Hostile CFI may make every rule distinct: past the bound a rule is its own tuple."""
    code = ("from perfparser_py.elf.cfi import OFFSET, shared\n"
            "kept = [shared((OFFSET, n)) for n in range(1 << 15)]\n"
            "late = (OFFSET, 1 << 15)\n"
            "assert shared(late) is late and shared((OFFSET, 1 << 15)) is not late\n"
            "assert shared((OFFSET, 5)) is kept[5]\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_damage_past_the_asked_row_leaves_the_rows_before_it() -> None:
    """Rows are made in address order, so an FDE damaged after a row (an unknown operation,
    a set_loc backwards) still gives the rows before the damage, as libgcc and elfutils do."""
    set_back = bytes([0x01]) + struct.pack("<Q", 0x1002)
    for tail in (bytes([0x3F]), set_back):
        ops = bytes([0x44, 0x0E, 16, 0x44]) + tail + bytes([0x0E, 8])
        data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), ops, 0x1000, 0x10)
        cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
        assert cfi.row(0x1009) is None
        assert cfi.row(0x1001).cfa == (CFA_REG, 31, 0)
        assert (cfi.row(0x1007).lo, cfi.row(0x1007).hi) == (0x1004, 0x1008)
        assert cfi.row(0x1007).cfa == (CFA_REG, 31, 16)


@pytest.mark.parametrize("cut", range(1, 40, 3))
def test_truncated_tables_give_no_row(cut: int) -> None:
    data = _debug_frame(4, 14, bytes([0x0C, 13, 0]), bytes([0x44, 0x0E, 8, 0x8E, 1]), 0x100, 0x20)
    cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data[:-cut])}, is_64=False))
    if cfi is not None:
        row = cfi.row(0x104)
        assert row is None or row.cfa[0] == CFA_REG


def test_hostile_state_stack_and_unknown_op() -> None:
    for ops in (bytes([0x0B]), bytes([0x0A] * 100), bytes([0x3F])):
        data = _debug_frame(8, 30, bytes([0x0C, 31, 0]), ops, 0x1000, 0x10)
        cfi = Cfi.for_image(_FakeImage({".debug_frame": (0, data)}))
        assert cfi.row(0x1000) is None



# DW_EH_PE table encodings of .eh_frame_hdr: (low nibble, struct code), signed ones too
_TABLE_FIELDS = [(0x02, "H"), (0x03, "I"), (0x04, "Q"), (0x0A, "h"), (0x0B, "i"), (0x0C, "q")]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(("nibble", "code"), _TABLE_FIELDS)
@pytest.mark.parametrize("datarel", [False, True])
def test_eh_frame_hdr_table_read_in_place(order: str, nibble: int, code: str,
                                          datarel: bool) -> None:
    """find() gives the FDE address of the greatest initial location <= pc, whatever the
    field width, signedness and byte order; the sum of a field and the section address
    (datarel) wraps at the address size, as struct's signed values masked do."""
    from perfparser_py.elf.cfi import _Frames, _HdrTable

    rng = random.Random(nibble * 2 + datarel)
    bits = 8 * struct.calcsize(code)
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if code.islower() else (0, 1 << bits)
    fields = [(rng.randrange(lo, hi), rng.randrange(lo, hi)) for _ in range(40)]
    vaddr = 0xFFFF_F000 if datarel else 0  # datarel sums pass 2**32 with the wide fields
    for addr_size, mask in ((8, (1 << 64) - 1), (4, (1 << 32) - 1)):
        # the table as the linker sorts it: by the initial locations as addresses
        rows = sorted(fields, key=lambda f: (f[0] + vaddr) & mask)
        header = struct.pack(order + "BBBBI", 1, 0xFF, 0x03, nibble | (0x30 if datarel else 0),
                             len(rows))
        body = header + b"".join(struct.pack(order + code * 2, s, f) for s, f in rows)
        frames = _Frames(0, memoryview(b"\0" * 8), True, order == "<", addr_size)
        table = _HdrTable(vaddr, memoryview(body), frames)
        keys = [(s + vaddr) & mask for s, _f in rows]
        for pc in [0, mask, 1 << 70, *keys, *(k - 1 for k in keys), *(k + 1 for k in keys)]:
            i = bisect_right(keys, pc)
            assert table.find(pc) == (None if i == 0 else (rows[i - 1][1] + vaddr) & mask)
        assert table.find(-1) is None
