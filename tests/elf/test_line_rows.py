"""The line-table rows decoded with C numbers (lines._packed_rows, what a compiled run uses)
against the general decoder (lines._run, its rows sorted and packed: what an interpreted run
uses): the same table, or None where only the general decoder holds the answer."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfparser_py.elf.dwarf import DwarfInfo, lines
from perfparser_py.elf.image import ElfImage
from perfparser_py.elf.leb128 import sleb, sleb_value
from tests.elf.leb import sleb as _sleb
from tests.elf.leb import uleb as _uleb

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"

# the header GCC and clang write: opcode base 13, line range 14, line base -5
_BASE, _RANGE, _LINE_BASE = 13, 14, -5
_STD_LENGTHS = bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])


class _Reader:
    """What _run asks of its DwarfInfo: the byte order, and C strings (define_file)."""

    _e = "<"

    def _cstr(self, data, pos: int) -> tuple[bytes, int]:
        end = bytes(data).index(b"\0", pos)
        return bytes(data[pos:end]), end + 1


class _Unit:
    def __init__(self) -> None:
        self.files: list = []


def _set_address(addr: int, size: int = 8) -> bytes:
    return b"\0" + _uleb(size + 1) + b"\2" + addr.to_bytes(size, "little")


_END = b"\0\1\1"


def _both(program: bytes, version: int = 5, min_inst: int = 1, max_ops: int = 1):
    """(_packed_rows' answer, the general one: its packed rows, None when they need wider
    arrays, or "error" when it raises) for `program` as a whole unit's program."""
    args = (0, len(program), version, min_inst, max_ops, _RANGE, _BASE, _LINE_BASE,
            _STD_LENGTHS)
    packed = lines._packed_rows(program, True, *args)
    try:
        rows = lines._run(_Reader(), _Unit(), program, *args)
    except lines._MALFORMED:
        return packed, "error"
    rows.sort()
    return packed, lines._pack_rows(rows)


def _assert_same(program: bytes, **kw) -> tuple:
    packed, general = _both(program, **kw)
    if packed is not None:
        assert general not in (None, "error")
        assert (packed[0], packed[1]) == general
    return packed, general


def _rows(packed) -> list[tuple]:
    addrs, flat = packed
    return [(addrs[i], *flat[3 * i:3 * i + 3]) for i in range(len(addrs))]


def test_sequences_out_of_order_and_at_the_same_address_sort_as_elfutils() -> None:
    """Hot code after cold code, an end_sequence at the address of its sequence's last row,
    and sequences a linker discarded (all at 0, interleaving) next to real ones."""
    program = (
        _set_address(0x2000) + b"\1" + b"\x21" + b"\x21" + b"\1" + b"\2" + _uleb(0) + _END
        + _set_address(0x1000) + b"\3" + _sleb(40) + b"\1" + b"\x30" + _END
        + _set_address(0) + b"\1" + b"\x21" + b"\x21" + _END
        + _set_address(0) + b"\4" + _uleb(2) + b"\1" + b"\x21" + _END
        + _set_address(0x1002) + b"\1" + b"\2" + _uleb(4) + _END
    )
    packed, general = _assert_same(program)
    assert packed is not None
    rows = _rows(packed)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    # at 0x2002: the end_sequence first, then the two rows of its own sequence there
    at = [r for r in rows if r[0] == 0x2002]
    assert [r[1] for r in at] == [-1, 1, 1]
    # the discarded sequences keep program order on ties: file 1's row at 0 before file 2's
    assert [r[1] for r in rows if r[0] == 0] == [1, 2]


@pytest.mark.parametrize("program, why", [
    (_set_address(0x1000) + b"\0" + _uleb(4) + b"\3x\0" + _uleb(0) + _END, "define_file"),
    (_set_address(0x1000) + b"\3" + _sleb(1 << 40) + b"\1" + _END, "a line beyond 32 bits"),
    (_set_address(0x1000) + b"\4" + _uleb(1 << 31) + b"\1" + _END, "a file beyond 31 bits"),
    (_set_address(1, 16) + b"\1" + _END, "a 16-byte address"),
    (_set_address(0xFFFFFFFFFFFFFFF0) + b"\2" + _uleb(0x20) + b"\1" + _END,
     "an address beyond 64 bits"),
    (_set_address(0x10) + b"\2" + _uleb(1 << 63) + b"\1" + _END, "an advance beyond 63 bits"),
])
def test_what_c_numbers_cannot_hold_is_left_to_the_general_decoder(program: bytes,
                                                                   why: str) -> None:
    packed, _general = _both(program, version=4)
    assert packed is None, why


def test_vliw_programs_are_left_to_the_general_decoder() -> None:
    packed, general = _both(_set_address(0x1000) + b"\x21\x21" + _END, max_ops=3)
    assert packed is None and general not in (None, "error")


def test_a_program_of_one_row_a_byte_gets_room_for_all() -> None:
    """Hand-written assembly: one special opcode a row, more rows than the first guess."""
    program = _set_address(0x1000) + b"\x21" * 5000 + _END
    packed, _ = _assert_same(program)
    assert packed is not None and len(packed[0]) == 5001


def test_room_for_rows_grows_with_the_rows_not_with_the_programs_length() -> None:
    """A long program with few rows (a hostile unit length over a section of padding, here
    2 MB of negate_stmt) costs memory for its rows, not for the rows it could hold."""
    import tracemalloc

    program = _set_address(0x1000) + b"\x21" + b"\6" * (2 << 20) + _END
    args = (0, len(program), 5, 1, 1, _RANGE, _BASE, _LINE_BASE, _STD_LENGTHS)
    tracemalloc.start()
    try:
        packed = lines._packed_rows(program, True, *args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert packed is not None and len(packed[0]) == 2
    assert peak < 1 << 20


def test_malformed_programs_fail_as_the_general_decoder_does() -> None:
    good = _set_address(0x1000) + b"\3" + _sleb(-300) + b"\1" + b"\2" + _uleb(300) + _END
    for cut in range(1, len(good)):
        packed, general = _assert_same(good[:cut])
        if general == "error":
            assert packed is None
    packed, general = _both(b"\0" + _uleb(50) + b"\2")  # an extended opcode past the end
    assert packed is None and general == "error"


_OPS = st.one_of(
    st.integers(_BASE, 255).map(lambda op: bytes([op])),  # special
    st.just(b"\1"),  # copy
    st.integers(0, 1 << 20).map(lambda v: b"\2" + _uleb(v)),
    st.integers(-(1 << 20), 1 << 20).map(lambda v: b"\3" + _sleb(v)),
    st.integers(0, 300).map(lambda v: b"\4" + _uleb(v)),
    st.integers(0, 1 << 16).map(lambda v: b"\5" + _uleb(v)),
    st.sampled_from([b"\6", b"\7", b"\x0a", b"\x0b", b"\x08", b"\x0c\x05"]),
    st.integers(0, 0xFFFF).map(lambda v: b"\x09" + struct.pack("<H", v)),
    st.sampled_from([0, 0x10, 0x1000, 0x1004, 0x2000]).map(_set_address),
    st.just(_END),
    st.just(b"\0\3\x80\1\2"),  # an unknown extended opcode, skipped
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_OPS, max_size=60), st.sampled_from([0, 1, 4]), st.sampled_from([4, 5]),
       st.integers(0, 3))
def test_random_programs_decode_as_the_general_decoder(ops: list[bytes], min_inst: int,
                                                       version: int, cut: int) -> None:
    program = b"".join(ops)
    _assert_same(program[:len(program) - cut], version=version, min_inst=min_inst)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-(1 << 55), (1 << 55) - 1), st.integers(-(1 << 80), 1 << 80)))
def test_sleb_value_is_slebs_value_up_to_eight_bytes(v: int) -> None:
    data = _sleb(v) + b"\0"
    assert sleb_value(data, 0) == (sleb(data, 0)[0] if len(data) <= 9 else (1 << 63) - 1)


_BINARIES = [
    CORPUS / "recorded" / "inline" / "inline",
    CORPUS / "recorded" / "dwarf" / "hotloop",
    CORPUS / "upstream" / "cpp-inlining" / "cpp-inlining",
    CORPUS / "upstream" / "vector_static_gcc" / "vector_static_gcc_v9.1.0",
]


@pytest.mark.parametrize("path", _BINARIES, ids=lambda p: p.name)
def test_every_unit_of_real_binaries_decodes_with_c_numbers(path: Path) -> None:
    """Compilers' line programs (GCC, clang; C, C++, static libc) never need the general
    decoder, and give its tables."""
    info = DwarfInfo.for_image(ElfImage.open(str(path)))
    data = info._s["line"]
    checked = 0
    for off in info._units():
        cu = info._unit(off)
        info._cu_top(cu)
        if not isinstance(cu.stmt_list, int):
            continue
        program = info._line_program(cu, data, cu.stmt_list)
        packed = lines._packed_rows(data, True, *program)
        rows = lines._run(info, cu, data, *program)
        rows.sort()
        assert packed is not None
        assert (packed[0], packed[1]) == lines._pack_rows(rows)
        checked += 1
    assert checked
