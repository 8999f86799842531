"""perf.data file header (both byte orders), pipe header, section descriptors (SEMANTICS §2),
read with struct from layout.py's tables: their sizes are checked before, so nothing in them
can fail to parse."""

from __future__ import annotations

import os
import sys
from collections import namedtuple

from . import layout as lay
from .abi import FEAT_BUILD_ID, FEAT_CMDLINE, FEAT_HOSTNAME

MAGIC_LE = b"PERFILE2"
MAGIC_BE = b"2ELIFREP"
PIPE_HEADER_SIZE = 16
FILE_HEADER_SIZE = 104
MIN_ATTR_ENTRY = 80  # the attr section's entry size perf has always written at least
# More attrs than any recording has (perf record -e of hundreds of events: ~100 KB)
_MAX_ATTRS_BYTES = 1 << 20
MAX_HEADER_SIZE = 2**31 - 1
LAST_FEATURE = 28  # bits above are not examined

# What a file that is not a recording most often is, by its first bytes: a recording
# compressed for transfer, the binary recorded instead of the recording, or our own output.
_OTHER_MAGICS = (
    (b"\x1f\x8b", "gzip-compressed: decompress it first"),
    (b"\xfd7zXZ\x00", "xz-compressed: decompress it first"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first"),
    (b"BZh", "bzip2-compressed: decompress it first"),
    (b"\x04\x22\x4d\x18", "lz4-compressed: decompress it first"),
    (b"\x7fELF", "an ELF file, not the recording perf record wrote"),
    (b"QPERFST", "a perfparser stream already, not a recording"),
)


def not_a_recording(magic: bytes) -> str:
    """The one-line error for a file whose first 8 bytes `magic` are no perf.data magic:
    upstream's words, then what the file looks like, when it is a usual mistake."""
    hint = next((what for start, what in _OTHER_MAGICS if magic.startswith(start)), None)
    return f"invalid magic: {magic!r} (not a perf.data file{'; ' + hint if hint else ''})"


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


def excludes_kernel(path: str) -> bool:
    """Whether every event of the perf.data file at `path` excludes the kernel
    (perf_event_attr.exclude_kernel: `:u` events, or `perf record` by a user under
    perf_event_paranoid 2): its samples and call chains then hold no kernel address. False
    when it cannot tell (not a regular file, a header it cannot read, no attrs)."""
    from ..regular import open_regular
    from .attr import parse_attr
    from .errors import PerfDataError

    f = open_regular(path)
    if f is None:
        return False
    try:
        with f:
            head = f.read(FILE_HEADER_SIZE)
            if len(head) < FILE_HEADER_SIZE or head[:8] not in (MAGIC_LE, MAGIC_BE):
                return False
            big = head[:8] == MAGIC_BE
            hdr = file_header(head, big)
            if (hdr.attr_size < MIN_ATTR_ENTRY or not 0 < hdr.attrs_size <= _MAX_ATTRS_BYTES
                    or hdr.attrs_offset + hdr.attrs_size > os.fstat(f.fileno()).st_size):
                return False
            f.seek(hdr.attrs_offset)
            buf = f.read(hdr.attrs_size)
        attrs = [parse_attr(buf, k * hdr.attr_size, big)
                 for k in range(len(buf) // hdr.attr_size)]
    except (OSError, PerfDataError):
        return False
    return bool(attrs) and all(a.exclude_kernel for a in attrs)
