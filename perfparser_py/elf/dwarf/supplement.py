"""The supplementary file of a DWARF file: DIEs and strings that dwz (`-m`, Debian's dh_dwz
and Fedora's debuginfo packages) moves out of several debug files into one, named by
`.gnu_debugaltlink` (GNU) or `.debug_sup` (DWARF 5 §7.3.6).

A file refers to them with DW_FORM_GNU_ref_alt / DW_FORM_ref_sup4/8 (DIEs) and
DW_FORM_GNU_strp_alt / DW_FORM_strp_sup (strings). It is looked for as elfutils does: by its
build id in the debug directories, then by the name the link gives (with the sysroot or a
debug directory for `/usr/lib/debug`, or beside the file holding the link when relative);
the finder adds debuginfod. Only a file with the link's build id (GNU) or checksum (DWARF 5)
is taken."""

from __future__ import annotations

import os

from ..image import ElfImage
from ..leb128 import uleb
from ..notes import SYSTEM_DEBUG, build_id_paths


def reference(holder: ElfImage) -> tuple[str, bytes, bool] | None:
    """(name, identity, identity is a build id) of the supplementary file that the DWARF of
    `holder` (the file holding its .debug_info) refers to; None when it names none."""
    sec = holder.section(".gnu_debugaltlink")
    if sec is not None:
        data = bytes(sec[1])
        end = data.find(0)
        if end > 0:
            return os.fsdecode(data[:end]), data[end + 1:], True
    sec = holder.section(".debug_sup")
    if sec is not None:
        parsed = _debug_sup(bytes(sec[1]))
        if parsed is not None and not parsed[0] and parsed[1]:
            return os.fsdecode(parsed[1]), parsed[2], False
    return None


def _debug_sup(data: bytes) -> tuple[bool, bytes, bytes] | None:
    """(is the supplementary file itself, file name, checksum) of a .debug_sup section."""
    try:
        if int.from_bytes(data[:2], "little") != 5 and int.from_bytes(data[:2], "big") != 5:
            return None
        end = data.index(0, 3)
        size, pos = uleb(data, end + 1)
        return data[2] == 1, data[3:end], data[pos:pos + size]
    except (ValueError, IndexError):
        return None


def candidates(holder_path: str, name: str, identity: bytes, is_build_id: bool,
               debug_dirs: list[str], sysroot: str) -> list[str]:
    """Paths the supplementary file may have, in the order they are tried."""
    out = build_id_paths(identity, debug_dirs) if is_build_id and identity else []
    if name.startswith("/"):
        if sysroot.strip("/"):
            out.append(sysroot.rstrip("/") + name)
        if name.startswith(SYSTEM_DEBUG + "/"):
            out += [d.rstrip("/") + name[len(SYSTEM_DEBUG):] for d in debug_dirs]
        out.append(name)
    else:
        out.append(os.path.join(os.path.dirname(holder_path), name))
    return list(dict.fromkeys(out))


def matches(image: ElfImage, identity: bytes, is_build_id: bool) -> bool:
    """Whether `image` is the supplementary file of that build id or .debug_sup checksum."""
    if is_build_id:
        return not identity or image.build_id == identity
    sec = image.section(".debug_sup")
    parsed = None if sec is None else _debug_sup(bytes(sec[1]))
    return parsed is not None and parsed[0] and parsed[2] == identity


def find(holder: ElfImage, ref: tuple[str, bytes, bool], debug_dirs: list[str], sysroot: str,
         open_image=ElfImage.open) -> ElfImage | None:
    """The supplementary file `ref` (reference) of `holder`'s DWARF among the local
    candidates, or None."""
    name, identity, is_build_id = ref
    for path in candidates(holder.path, name, identity, is_build_id, debug_dirs, sysroot):
        image = open_image(path)
        if image is not None and matches(image, identity, is_build_id):
            return image
    return None
