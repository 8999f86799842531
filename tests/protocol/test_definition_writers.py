"""The Location / Symbol / String writers (Location with a one-Struct fast path) write what
the schema encodes, in every flavour and for values that need wrapping."""

from __future__ import annotations

import io

import pytest

from perfparser_py import protocol as P

LOCATIONS = [
    (0, 0x401000, -1, 1234, 10, 3, -1, 0x1000),
    (1, 1 << 63, 2, -1, 0, 0, 0, 0),  # kernel pid -1 as a quint32
    (2, 5, -1, 1 << 31, -1, -1, 1, (1 << 64) - 1),  # pid beyond int32: the schema path
    (3, -1, -1, 7, 1 << 32, 0, 2, -5),  # values to wrap
]
SYMBOLS = [
    (0, 4, 1, 2, False, 0x1000, 32, 3, False),
    (1, -1, -1, -1, True, 0, 0, -1, True),
    (2, 1 << 31, 3, 4, 1, -1, 1 << 64, 5, 0),  # values to wrap
]
STRINGS = [(0, b"main"), (1, b"\0" * 70000), (1 << 31, b"x")]


def _written(flavour: str, call) -> bytes:
    out = io.BytesIO()
    w = P.StreamWriter(out, flavour)
    call(w)
    w.flush()
    return out.getvalue()


@pytest.mark.parametrize("flavour", P.FLAVOURS)
def test_definition_writers_match_the_schema(flavour):
    def write(w):
        for args in LOCATIONS:
            w.location(*args)
        for args in SYMBOLS:
            w.symbol(*args)
        for args in STRINGS:
            w.string(*args)

    expected = b"".join(
        [P.encode(P.Location(*a), flavour) for a in LOCATIONS]
        + [P.encode(P.Symbol(*a), flavour) for a in SYMBOLS]
        + [P.encode(P.String(*a), flavour) for a in STRINGS])
    assert _written(flavour, write) == expected


def test_current_flavour_takes_the_location_fast_path():
    assert P.StreamWriter(io.BytesIO(), "current")._location_prefix is not None
