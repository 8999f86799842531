"""The struct readers of the attrs and the feature sections (attr.parse_attr, features.py)
agree with the construct declarations (declare.py) on every corpus file; on cut or corrupted
bytes the feature reader never reads what construct would not: it reads the same values or
leaves the section to construct, whose error the user then sees."""

from __future__ import annotations

import random
import struct

import pytest

from perfparser_py.perfdata import features as feat
from perfparser_py.perfdata import header as h
from perfparser_py.perfdata import layout as lay
from perfparser_py.perfdata.attr import _ATTR_FIELDS, PerfEventAttr, parse_attr
from perfparser_py.perfdata.declare import attr_struct, feature_structs
from tests.perfdata.perfdata_corpus import corpus_id, good_files


def _file_mode(path) -> tuple[bytes, bool] | None:
    data = path.read_bytes()
    if data[:8] not in (h.MAGIC_LE, h.MAGIC_BE) or len(data) < h.FILE_HEADER_SIZE:
        return None
    big_endian = data[:8] == h.MAGIC_BE
    return (data, big_endian) if h.pipe_header_size(data, big_endian) > 16 else None


FILES = [p for p in good_files() if _file_mode(p)]


def _sections(data: bytes, big_endian: bool):
    """(bit, section bytes) of each feature of layout.FEATURES the file has."""
    hdr = h.file_header(data, big_endian)
    words = [hdr.features0, hdr.features1, hdr.features2, hdr.features3]
    at = hdr.data_offset + hdr.data_size
    for n, bit in enumerate(h.feature_bits(words, big_endian)):
        offset, size = h.section(data, at + 16 * n, big_endian)
        if bit in lay.FEATURES and size and offset + size <= len(data):
            yield bit, data[offset:offset + size]


def _fields(bit: int, values) -> dict:
    f: dict = {}
    feat._apply(f, bit, values)
    return f


def _construct(bit: int, data: bytes, big_endian: bool):
    rows = lay.FEATURES[bit]
    try:
        parsed = feature_structs(big_endian)[bit].parse(data)
    except Exception as exc:  # construct's many error types
        return type(exc), str(exc).splitlines()[0]
    return _fields(bit, parsed if len(rows) > 1 else {rows[0][0]: parsed})


def _reader(bit: int, data: bytes, big_endian: bool):
    try:
        got, _end = feat._read(lay.FEATURES[bit], data, 0, ">" if big_endian else "<", {})
    except feat._Odd:
        return feat._Odd
    return _fields(bit, got)


@pytest.mark.parametrize("path", FILES, ids=corpus_id)
def test_features_read_as_construct_reads_them(path):
    data, big_endian = _file_mode(path)
    sections = list(_sections(data, big_endian))
    assert sections
    for bit, section in sections:
        assert _reader(bit, section, big_endian) == _construct(bit, section, big_endian), bit


@pytest.mark.parametrize("path", FILES, ids=corpus_id)
def test_odd_features_are_left_to_construct(path):
    data, big_endian = _file_mode(path)
    rng = random.Random(path.name)
    for bit, section in _sections(data, big_endian):
        variants = [section[:n] for n in sorted(rng.sample(range(len(section)),
                                                           min(len(section), 12)))]
        for _ in range(12):
            b = bytearray(section)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.choice((0, 0xFF, rng.randrange(256)))
            variants.append(bytes(b))
        for v in variants:
            by_construct, by_reader = _construct(bit, v, big_endian), _reader(bit, v, big_endian)
            assert by_reader in (by_construct, feat._Odd), (bit, v)
            if isinstance(by_construct, tuple):  # construct fails: so does the reader
                assert by_reader is feat._Odd, (bit, v)
            # what the run makes of it either way: construct's values or its error
            try:
                parsed = _fields(bit, feat.parse_feature(bit, v, big_endian))
            except Exception as exc:
                parsed = type(exc), str(exc).splitlines()[0]
            assert parsed == by_construct


def _construct_attr(buf: bytes, big_endian: bool) -> PerfEventAttr:
    c = attr_struct(big_endian).parse(buf)
    return PerfEventAttr(**{name: c[name] for name in _ATTR_FIELDS}, big_endian=big_endian)


@pytest.mark.parametrize("path", FILES, ids=corpus_id)
def test_attrs_read_as_construct_reads_them(path):
    data, big_endian = _file_mode(path)
    hdr = h.file_header(data, big_endian)
    for k in range(hdr.attrs_size // hdr.attr_size):
        at = hdr.attrs_offset + k * hdr.attr_size
        attr = parse_attr(data, at, big_endian)
        assert attr == _construct_attr(data[at:at + attr.size], big_endian)


@pytest.mark.parametrize("big_endian", [False, True])
def test_attrs_of_every_size_read_as_construct_reads_them(big_endian):
    rng = random.Random(1)
    e = ">" if big_endian else "<"
    for size in (64, 65, 71, 72, 80, 88, 96, 100, 104, 106, 112, 120, 128, 136, 200):
        for _ in range(4):
            buf = bytearray(rng.randbytes(size))
            struct.pack_into(e + "I", buf, 4, size)
            attr = parse_attr(buf, 0, big_endian)
            assert attr == _construct_attr(bytes(buf), big_endian)


# construct's messages name the path of the field that failed: a feature of one row is that
# row's construct alone, as its declaration always was (the warnings are the same as before)
CUT = [
    (3, struct.pack("<I", 40) + b"host", "Error in path (parsing) -> data"),
    (14, struct.pack("<I", 2**31) + b"\0" * 24, "Error in path (parsing)"),
    (12, struct.pack("<IIQ", 1, 16, 0), "Error in path (parsing) -> events -> attr"),
    (7, struct.pack("<I", 2), "Error in path (parsing) -> avail"),
]


@pytest.mark.parametrize(("bit", "data", "message"), CUT)
def test_odd_features_get_constructs_messages(bit, data, message):
    with pytest.raises(Exception) as info:
        feat.parse_feature(bit, data, False)
    assert str(info.value).splitlines()[0] == message
