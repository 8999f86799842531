"""ELF notes (gABI "Note Sections"): the GNU build id among them."""

from __future__ import annotations

import struct

NT_GNU_BUILD_ID = 3


def gnu_build_id(data, off: int, size: int, endian: str) -> bytes | None:
    """The NT_GNU_BUILD_ID descriptor among the notes in data[off:off + size], None if
    there is none or the notes are damaged; `endian` is a struct prefix ("<", ">", "=")."""
    head = struct.Struct(endian + "III")
    end = min(off + size, len(data))
    while off + 12 <= end:
        namesz, descsz, ntype = head.unpack_from(data, off)
        name_at = off + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        nxt = desc_at + ((descsz + 3) & ~3)
        if nxt > end:
            return None
        if ntype == NT_GNU_BUILD_ID and bytes(data[name_at:name_at + namesz]) == b"GNU\0":
            return bytes(data[desc_at:desc_at + descsz]) or None
        off = nxt
    return None
