"""Compressed sections: libdeflate gives exactly zlib's result, damaged data included."""

from __future__ import annotations

import random
import zlib

from perfparser_py.elf import compressed


def zlib_only(body: bytes, usize: int):
    try:
        return zlib.decompressobj().decompress(body, usize)
    except zlib.error:
        return "error"


def ours(body: bytes, usize: int):
    try:
        return compressed._zlib_inflate(memoryview(body), usize)
    except zlib.error:
        return "error"


def test_libdeflate_is_used_and_agrees_with_zlib() -> None:
    rng = random.Random(4)
    text = b"".join(b"%d:%s\n" % (i, bytes(rng.choice(b"abcdef") for _ in range(i % 40)))
                    for i in range(3000))
    good = zlib.compress(text, 6)
    assert ours(good, len(text)) == text
    assert compressed._libdeflate  # the dependency is installed and was taken
    for _ in range(600):
        body = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        if rng.random() < 0.3:
            body = body[:rng.randrange(len(body))]
        usize = len(text) if rng.random() < 0.7 else rng.randrange(2 * len(text))
        assert ours(bytes(body), usize) == zlib_only(bytes(body), usize)
