"""Raw tracepoint sample bytes -> QVariants (SEMANTICS §13.3, PROTOCOL §2.1)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from perfparser_py.perfdata.tracing import parse_format
from perfparser_py.protocol import INVALID_VARIANT, Variant
from perfparser_py.tracepoints import compile_plan, decode_raw

HEAD = b"name: t\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"


def fields(*lines: tuple[bytes, int, int, int]):
    text = HEAD + b"".join(b"\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n" % line
                           for line in lines) + b"\n"
    return parse_format(text, b"s").fields


def decode(fs, raw: bytes, big_endian: bool = False):
    plan = compile_plan(fs, list(range(len(fs))), big_endian)
    return [v for _k, v in decode_raw(plan, raw)]


def test_scalars_get_the_type_of_their_size_and_sign() -> None:
    fs = fields((b"s8 a", 0, 1, 1), (b"u8 b", 1, 1, 0), (b"short c", 2, 2, 1),
                (b"u16 d", 4, 2, 0), (b"int e", 8, 4, 1), (b"u32 f", 12, 4, 0),
                (b"long g", 16, 8, 1), (b"u64 h", 24, 8, 0))
    raw = struct.pack("<bBhH2xiIqQ", -1, 255, -2, 65535, -3, 2**32 - 1, -4, 2**64 - 1)
    assert decode(fs, raw) == [
        Variant(40, -1), Variant(37, 255), Variant(33, -2), Variant(36, 65535),
        Variant(2, -3), Variant(3, 2**32 - 1), Variant(4, -4), Variant(5, 2**64 - 1)]


def test_big_endian_raw_data() -> None:
    fs = fields((b"int e", 0, 4, 1), (b"u16 v[2]", 4, 4, 0))
    raw = struct.pack(">iHH", -5, 1, 2)
    assert decode(fs, raw, big_endian=True) == [
        Variant(2, -5), Variant(9, [Variant(36, 1), Variant(36, 2)])]


def test_out_of_bounds_and_odd_sizes_are_invalid() -> None:
    fs = fields((b"int a", 0, 4, 1), (b"u64 far", 8, 8, 0), (b"char odd", 0, 3, 0),
                (b"char neg[4]", 0, -4, 0), (b"int before", -4, 4, 1))
    assert decode(fs, b"\1\0\0\0\0\0\0\0") == [Variant(2, 1)] + [INVALID_VARIANT] * 4


def test_char_arrays_are_byte_arrays_with_nuls() -> None:
    fs = fields((b"char comm[8]", 0, 8, 0),)
    assert decode(fs, b"ab\0\0\0\0\0\0") == [Variant(12, b"ab\0\0\0\0\0\0")]


def test_data_loc_string_is_decoded() -> None:
    # upstream sends the locator integer; we send the bytes it points at
    fs = fields((b"__data_loc char[] filename", 0, 4, 0), (b"int pid", 4, 4, 1))
    raw = struct.pack("<Ii", 8 | (9 << 16), 42) + b"/bin/sh\0\0\0\0"
    assert decode(fs, raw) == [Variant(12, b"/bin/sh\0\0"), Variant(2, 42)]
    # a locator pointing outside the data
    bad = struct.pack("<Ii", 8 | (90 << 16), 42) + b"x"
    assert decode(fs, bad)[0] == INVALID_VARIANT


def test_rel_loc_counts_from_the_end_of_the_field() -> None:
    fs = fields((b"__rel_loc char[] name", 0, 4, 0),)
    raw = struct.pack("<I", 0 | (3 << 16)) + b"abc"
    assert decode(fs, raw) == [Variant(12, b"abc")]


def test_dynamic_numeric_arrays() -> None:
    fs = fields((b"__data_loc unsigned int[] lengths", 0, 4, 0),
                (b"__data_loc unsigned long[] ips", 4, 4, 0))
    raw = struct.pack("<II", 8 | (8 << 16), 16 | (16 << 16)) + struct.pack("<IIQQ", 1, 2, 3, 4)
    assert decode(fs, raw) == [
        Variant(9, [Variant(3, 1), Variant(3, 2)]),
        Variant(9, [Variant(5, 3), Variant(5, 4)])]


def test_unknown_element_size_is_invalid_not_a_hang() -> None:
    fs = fields((b"struct foo items[]", 0, 8, 0),)
    assert decode(fs, bytes(8)) == [INVALID_VARIANT]


def test_keys_are_the_name_ids_in_format_order() -> None:
    fs = fields((b"int a", 0, 4, 1), (b"int b", 4, 4, 1))
    plan = compile_plan(fs, [17, 3], False)
    assert [k for k, _v in decode_raw(plan, bytes(8))] == [17, 3]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.booleans())
def test_any_raw_bytes_decode(raw: bytes, big_endian: bool) -> None:
    fs = fields((b"__data_loc char[] s", 0, 4, 0), (b"__rel_loc u16[] v", 4, 4, 0),
                (b"long x", 8, 8, 1), (b"u32 arr[3]", 16, 12, 0))
    out = decode(fs, memoryview(raw), big_endian)
    assert len(out) == 4


DECLS = [b"int x", b"char x[4]", b"__data_loc char[] x", b"__rel_loc u16[] x", b"long x[]",
         b"struct s x[]", b"u8 x[0]", b"unsigned long x[2]", b"void *x", b"__data_loc int[] x"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DECLS), st.integers(-8, 80), st.integers(-8, 80),
                          st.integers(0, 1)), max_size=6),
       st.binary(max_size=96), st.booleans())
def test_any_format_on_any_raw_bytes(lines, raw: bytes, big_endian: bool) -> None:
    fs = fields(*lines)
    out = decode(fs, raw, big_endian)
    assert len(out) == len(lines)
    assert all(isinstance(v, Variant) for v in out)
