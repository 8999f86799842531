"""perf.data file header (both byte orders), pipe header, section descriptors (SEMANTICS §2),
read with struct from layout.py's tables: their sizes are checked before, so nothing in them
can fail to parse."""

from __future__ import annotations

import sys
from collections import namedtuple

from . import layout as lay
from .abi import FEAT_BUILD_ID, FEAT_CMDLINE, FEAT_HOSTNAME

MAGIC_LE = b"PERFILE2"
MAGIC_BE = b"2ELIFREP"
PIPE_HEADER_SIZE = 16
FILE_HEADER_SIZE = 104
MAX_HEADER_SIZE = 2**31 - 1
LAST_FEATURE = 28  # bits above are not examined

FileHeader = namedtuple("FileHeader", [row[0] for row in lay.FILE_HEADER])


def section(buf, offset: int, big_endian: bool) -> tuple[int, int]:
    """(offset, size) of the perf_file_section at buf[offset:offset + 16]."""
    return lay.layout_struct(lay.SECTION, big_endian).unpack_from(buf, offset)


def pipe_header_size(head: bytes, big_endian: bool) -> int:
    return lay.layout_struct(lay.PIPE_HEADER, big_endian).unpack_from(head)[1]


def file_header(buf, big_endian: bool) -> FileHeader:
    """The perf_file_header at the start of buf (FILE_HEADER_SIZE bytes at least)."""
    return FileHeader._make(lay.layout_struct(lay.FILE_HEADER, big_endian).unpack_from(buf))


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
