"""ELF notes (gABI "Note Sections"): the GNU build id among them, and where the debug file
of a build id is."""

from __future__ import annotations

import os
import struct

NT_GNU_BUILD_ID = 3
SYSTEM_DEBUG = "/usr/lib/debug"  # where the distribution's debug packages install


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


def build_id_paths(build_id: bytes, debug_dirs: list[str]) -> list[str]:
    """Where a debug file is by its build id (§9.2): `.build-id/xx/rest.debug` under each of
    `debug_dirs`, then the system's debug packages', whatever --debug says, as perf report
    does (expected_differences 8); the build id decides, so only the right file matches."""
    hexid = build_id.hex()
    rel = f".build-id/{hexid[:2]}/{hexid[2:]}.debug"
    return [os.path.join(d, rel) for d in [*debug_dirs, SYSTEM_DEBUG]]
