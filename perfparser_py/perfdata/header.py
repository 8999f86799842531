"""perf.data file header (both byte orders), pipe header, section descriptors (SEMANTICS §2)."""

from __future__ import annotations

import sys
from functools import cache

from construct import Array, Bytes, Construct, Struct

from .ints import ints

MAGIC_LE = b"PERFILE2"
MAGIC_BE = b"2ELIFREP"
PIPE_HEADER_SIZE = 16
FILE_HEADER_SIZE = 104
MAX_HEADER_SIZE = 2**31 - 1

# feature bits (SEMANTICS §2.3)
FEAT_TRACING_DATA = 1
FEAT_BUILD_ID = 2
FEAT_HOSTNAME = 3
FEAT_CMDLINE = 11
FEAT_EVENT_DESC = 12
FEAT_COMPRESSED = 27
LAST_FEATURE = 28  # bits above are not examined


@cache
def section_struct(big_endian: bool) -> Construct:
    i = ints(big_endian)
    return Struct("offset" / i.u64, "size" / i.u64)


@cache
def pipe_header_struct(big_endian: bool) -> Construct:
    return Struct("magic" / Bytes(8), "size" / ints(big_endian).u64)


@cache
def file_header_struct(big_endian: bool) -> Construct:
    i = ints(big_endian)
    sec = section_struct(big_endian)
    return Struct(
        "magic" / Bytes(8),
        "size" / i.u64,
        "attr_size" / i.u64,
        "attrs" / sec,
        "data" / sec,
        "event_types" / sec,
        "features" / Array(4, i.u64),
    )


def feature_bits(words: list[int], big_endian: bool) -> list[int]:
    """Set feature bits in increasing order, with perf's repair of swapped 32-bit halves."""

    def bits(ws: list[int]) -> list[int]:
        return [n for n in range(256) if ws[n // 64] >> (n % 64) & 1]

    found = bits(words)
    if big_endian or FEAT_HOSTNAME in found or FEAT_CMDLINE in found:
        return found
    swapped = [((w & 0xFFFFFFFF) << 32) | (w >> 32) for w in words]
    found = bits(swapped)
    if FEAT_HOSTNAME in found or FEAT_CMDLINE in found:
        return found
    print("bad feature data", file=sys.stderr)
    return [FEAT_BUILD_ID]
