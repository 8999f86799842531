"""Split DWARF (`-gsplit-dwarf`): where the DIEs of a skeleton unit are, in its .dwo file or
in the program's .dwp package (DWARF 5 §3.1.3 and §7.3.5, and GCC's DWARF 4 extension that
preceded them, whose package index is version 2).

A skeleton unit in the program keeps the addresses (its ranges, line table and .debug_addr);
the subprograms and inlined subroutines are in the split unit of the same unit id. Files are
looked for where elfutils looks: the package `<file>.dwp` beside the file holding the
skeletons, then the .dwo name beside that file, then in the unit's compilation directory;
where that file is a copy (perf's build-id cache keeps no .dwp), beside the recorded program
too."""

from __future__ import annotations

import os

from ..image import ElfImage
from ..leb128 import uint_at

# the .debug_*.dwo sections a split unit's DIEs are read from, as DwarfInfo names them
DWO_SECTIONS = ("info", "abbrev", "str", "str_offsets", "rnglists", "line")
# .debug_cu_index columns (DW_SECT_*) read; 8 is .debug_rnglists.dwo from version 5 on
_COLUMNS = {1: "info", 3: "abbrev", 4: "line", 6: "str_offsets"}
_COLUMNS_5 = {**_COLUMNS, 8: "rnglists"}


def read_cu_index(sec, little: bool) -> dict[int, dict[str, tuple[int, int]]]:
    """Unit id -> {section: (offset, size)} of a .dwp's .debug_cu_index; {} when it is of
    an unknown version or does not fit in the section."""
    version = uint_at(sec, 0, 4, little)
    columns = _COLUMNS if version == 2 else _COLUMNS_5 if version & 0xFFFF == 5 else None
    if columns is None or len(sec) < 16:
        return {}
    ncols, nunits, nslots = (uint_at(sec, at, 4, little) for at in (4, 8, 12))
    rows = 16 + 8 * nslots
    ids = rows + 4 * nslots
    offsets = ids + 4 * ncols
    sizes = offsets + 4 * ncols * nunits
    if sizes + 4 * ncols * nunits > len(sec):
        return {}
    names = [columns.get(uint_at(sec, ids + 4 * c, 4, little)) for c in range(ncols)]
    units = {}
    for slot in range(nslots):
        row = uint_at(sec, rows + 4 * slot, 4, little)
        if not 0 < row <= nunits:  # 0: an empty slot
            continue
        at = 4 * ncols * (row - 1)
        units[uint_at(sec, 16 + 8 * slot, 8, little)] = {
            name: (uint_at(sec, offsets + at + 4 * c, 4, little),
                   uint_at(sec, sizes + at + 4 * c, 4, little))
            for c, name in enumerate(names) if name is not None}
    return units


class SplitFiles:
    """The .dwo files and .dwp packages of one image's skeleton units, each opened once,
    when a skeleton unit's address is first asked for."""

    def __init__(self, paths: list[str], dirs: tuple[str, ...] = ()) -> None:
        """`paths`: the files holding the skeleton units (the program, its debug file), and
        the recorded program's path here when the program read is a copy (recorded_at);
        `dirs`: the run's search directories (ElfImage.split_dirs)."""
        self._paths = paths
        self._dirs = dirs
        self._files: dict[str, ElfImage | None] = {}
        self._packages: list[tuple[ElfImage, dict]] | None = None

    def candidates(self, name: bytes, comp_dir: bytes | None, dwo_id: int | None):
        """Section sets ({DwarfInfo's name: contents}) that may hold the split unit named
        `name` of id `dwo_id`; DwarfInfo picks the unit by its id. In elfutils' order: the
        name beside each file, then in the compilation directory (a relative one from
        the file's directory too, as elfutils does, and from the working directory, as GDB
        and LLVM do: reproducible builds record `.`); then, as GDB searches its
        debug-file-directory, in each search directory: the name, the compilation
        directory below it (a copy of the build tree, a sysroot), the name's last part."""
        if dwo_id is not None:
            for image, index in self._package_indexes():
                columns = index.get(dwo_id)
                found = None if columns is None else _dwo_sections(image, columns)
                if found is not None:
                    yield found
        local = os.fsdecode(name)
        built = os.fsdecode(comp_dir) if comp_dir else ""
        tried = [os.path.join(os.path.dirname(p), local) for p in self._paths]
        if built:
            if not os.path.isabs(built):
                tried += [os.path.join(os.path.dirname(p), built, local) for p in self._paths]
            tried.append(os.path.join(built, local))
        for d in self._dirs:
            tried += [os.path.join(d, local), os.path.join(d, built.lstrip("/"), local),
                      os.path.join(d, os.path.basename(local))]
        for path in dict.fromkeys(tried):
            image = self._open(path)
            if image is not None:
                yield _dwo_sections(image)

    def _package_indexes(self) -> list[tuple[ElfImage, dict]]:
        if self._packages is None:
            self._packages = []
            for path in dict.fromkeys(p + ".dwp" for p in self._paths):
                image = self._open(path)
                sec = None if image is None else image.section(".debug_cu_index")
                if sec is not None:
                    try:
                        index = read_cu_index(sec[1], image.little_endian)
                    except IndexError:
                        index = {}
                    self._packages.append((image, index))
        return self._packages

    def _open(self, path: str) -> ElfImage | None:
        try:
            return self._files[path]
        except KeyError:
            pass
        if not self._files:
            _allow_open_files()
        image = self._files[path] = ElfImage.open(path)
        return image


def _dwo_sections(image: ElfImage, columns: dict | None = None
                  ) -> dict[str, memoryview] | None:
    """The .debug_*.dwo sections of a .dwo file, or with `columns` (read_cu_index's) of a
    package, cut to one unit's contributions (.debug_str.dwo is shared); None when one does
    not fit in its section."""
    secs = {}
    for key in DWO_SECTIONS:
        sec = image.section(f".debug_{key}.dwo")
        if sec is None:
            continue
        data = sec[1]
        if columns is not None:
            if key in columns:
                off, size = columns[key]
                if off + size > len(data):
                    return None
                data = data[off:off + size]
            elif key != "str":  # another unit's: this one has none
                continue
        secs[key] = data
    return secs


def _allow_open_files() -> None:
    """Raise the soft limit of open files to the hard one: every mapped .dwo keeps a file
    descriptor (Python's mmap holds a duplicate), and a program has one .dwo per unit, often
    more than the usual soft limit of 1024."""
    import resource

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        pass
