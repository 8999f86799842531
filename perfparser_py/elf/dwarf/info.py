"""DwarfInfo, the lookups of one image's DWARF, and RecordedDwarf, its persistent-cache twin."""

from __future__ import annotations

import struct
import weakref
from collections.abc import Callable

from . import supplement
from .constants import _MALFORMED, DwarfError
from .dies import Dies
from .lines import Lines
from .ranges import Ranges
from .scopes import Scope, Scopes
from .split import SplitFiles
from .units import Units, _Cu

# the .debug_* sections DwarfInfo reads
SECTIONS = ("info", "abbrev", "str", "line_str", "str_offsets", "addr", "rnglists", "ranges",
            "line", "aranges")


def prefetch_sections(image) -> None:
    """Start decompressing the sections DwarfInfo.decode will read (ElfImage.prefetch),
    unless the image's persistent cache record already answers without them."""
    rec = image.cache
    if rec is None or "dwarf" not in rec.data:
        image.prefetch([".debug_" + name for name in SECTIONS])


def _answer(memo: dict, compute, vaddr: int):
    """compute(vaddr), memoized; malformed DWARF answers None (and stays so)."""
    try:
        return memo[vaddr]
    except KeyError:
        pass
    try:
        result = compute(vaddr)
    except _MALFORMED:
        result = None
    memo[vaddr] = result
    return result


class DwarfInfo(Units, Dies, Ranges, Lines, Scopes):
    """Line tables and inline scopes of one image's DWARF.

    Made of the package's parts (units, DIEs, ranges, lines, scopes): they call each other
    through self and share this object's per-image caches, so a lookup's calls from one part
    to another cost what they cost inside one module."""

    def __init__(self, secs: dict[str, memoryview], little: bool,
                 split_files: SplitFiles | None = None,
                 supplement_ref: tuple[str, Callable] | None = None) -> None:
        self._s = secs
        self._e = "<" if little else ">"
        self._byteorder = "little" if little else "big"
        self._unit_offsets: list[int] | None = None
        self._headers: dict[int, tuple] = {}  # offset -> Units._header_at's header
        self._cus: dict[int, _Cu] = {}
        # the abbreviation tables parsed last, by offset: units may share one (DWARF 7.5.3),
        # and a walk over the unit DIEs of every unit (_unlisted) keeps none of its own
        self._abbrev_tables: dict[int, dict] = {}
        self._cu_starts: list[int] = []  # offsets of self._cus, ascending
        self._index: tuple[list[int], list[int], list[int]] | None = None
        self._unlisted_index: tuple[list[int], list[int], list[int]] | None = None
        self._listed: dict[int, list[tuple[int, int]]] | None = None  # .debug_aranges read
        self._last_cu_addr = -1  # the address _cu_for answered last, and its unit
        self._last_cu: _Cu | None = None
        e = self._e
        self._length_version = struct.Struct(e + "IH").unpack_from
        self._wide_length_version = struct.Struct(e + "QH").unpack_from
        self._v5_fields = struct.Struct(e + "BBI").unpack_from  # type, address size, abbrevs
        self._dies: dict[int, tuple[int, bool, dict, int]] = {}
        self._names: dict[int, str | None] = {}
        self._closure_sigs: dict[int, str | None] = {}
        self._unit_flags: dict[int, tuple[bool, bool]] = {}
        self._scopes: dict[int, tuple[Scope, list[Scope]] | None] = {}
        self._line_cache: dict[int, tuple[bytes, int, int] | None] = {}
        self._parents: dict[int, int] = {}
        self._scope_objs: dict[int, Scope] = {}
        # split DWARF: where skeleton units' split units are looked for, and each one found
        self._split_files = split_files
        self._splits: dict[int, tuple[DwarfInfo, _Cu] | None] = {}
        self._dwo_missing: list[bytes] = []  # the names of those not found
        # set on a split unit's DwarfInfo (_split_in): the skeleton's address base, base
        # address and compilation directory (Units._cu_top); and what its DIE offsets are
        # told from the program's and other split units' by (Scope.die_offset)
        self._inherited: tuple | None = None
        self._die_base = 0
        # the supplementary file (supplement.py): its name and how it is found, its
        # DwarfInfo once it was, and whether it was looked for without success
        self._sup_ref = supplement_ref
        self._sup: DwarfInfo | None = None
        self._sup_missing = False

    @staticmethod
    def for_image(image) -> DwarfInfo | RecordedDwarf | None:
        """DWARF of `image` (its separate debug file when attached); None without .debug_info.

        With a persistent cache record on the image, a RecordedDwarf answering from it."""
        rec = getattr(image, "cache", None)
        if rec is None:
            return DwarfInfo.decode(image)
        has = rec.data.get("dwarf")
        if has is False:
            return None
        info = None
        if has is not True:
            info = DwarfInfo.decode(image)
            rec.data["dwarf"] = info is not None
            rec.dirty = True
            if info is None:
                return None
        return RecordedDwarf(image, rec, info)

    @staticmethod
    def decode(image, supplementary: bool = False) -> DwarfInfo | None:
        """DwarfInfo over the image's debug sections; None without .debug_info. A
        supplementary file has neither split units nor a supplementary file of its own."""
        secs: dict[str, memoryview] = {}
        for name in SECTIONS:
            try:
                sec = image.section(".debug_" + name)
            except Exception:  # noqa: BLE001 - a broken section is an absent section
                sec = None
            if sec is not None:
                secs[name] = sec[1]
        if "info" not in secs or "abbrev" not in secs:
            return None
        if supplementary:
            return DwarfInfo(secs, image.little_endian)
        paths = [image.path]
        if image.debug is not None:
            paths.append(image.debug.path)
        if image.recorded_at is not None:
            paths.append(image.recorded_at)
        holder = image.holder_of(".debug_info")
        ref = supplement.reference(holder)
        sup = None
        if ref is not None:
            search = image.supplement_search or _local_supplement
            sup = (ref[0], lambda: search(holder, ref))
        return DwarfInfo(secs, image.little_endian, SplitFiles(paths, image.split_dirs), sup)

    # ------------------------------------------------------------------ public

    def line_at(self, vaddr: int) -> tuple[bytes, int, int] | None:
        """(absolute file path, line, column) of the line-table row for `vaddr`."""
        return _answer(self._line_cache, self._line_at, vaddr)

    def scopes_at(self, vaddr: int) -> tuple[Scope, list[Scope]] | None:
        """(subprogram containing `vaddr`, inlined scopes containing it, outermost first)."""
        return _answer(self._scopes, self._scopes_at, vaddr)

    def incomplete(self, vaddr: int) -> bool:
        """Whether the answer of scopes_at(vaddr) lacked a file it needed: the supplementary
        file, or the split unit of the skeleton unit `vaddr` is in. It would change once the
        file is there."""
        if self._sup_missing:
            return True
        try:
            cu = self._cu_for(vaddr)
        except _MALFORMED:
            return False
        return cu is not None and cu.dwo_name is not None and self._splits.get(cu.offset) is None

    def missing_files(self) -> tuple[list[bytes], str | None]:
        """What lookups so far lacked: the .dwo names of the split units not found, and
        the supplementary file's name when it was not found."""
        missing = self._sup_missing and self._sup_ref is not None
        return self._dwo_missing, self._sup_ref[0] if missing else None

    # ------------------------------------------------------- supplementary file

    def _supplement(self) -> DwarfInfo | None:
        """The DwarfInfo of the supplementary file, looked for on first need."""
        if self._sup is None and not self._sup_missing:
            image = None if self._sup_ref is None else self._sup_ref[1]()
            if image is not None and image.supplement_dwarf is None:
                image.supplement_dwarf = DwarfInfo.decode(image, supplementary=True)
            self._sup = None if image is None else image.supplement_dwarf
            self._sup_missing = self._sup is None
        return self._sup

    def _sup_part(self) -> DwarfInfo:
        """_supplement, for a reference into it that cannot be followed without it."""
        sup = self._supplement()
        if sup is None:
            raise DwarfError("reference into a missing supplementary file")
        return sup

    # ------------------------------------------------------------- split DWARF

    def _split_unit(self, cu: _Cu) -> tuple[DwarfInfo, _Cu] | None:
        """The split unit holding the DIEs of skeleton unit `cu` and the DwarfInfo reading
        it (split.py), found once; None when no file has it."""
        try:
            return self._splits[cu.offset]
        except KeyError:
            pass
        found = None
        name = self._string(cu, cu.dwo_name)
        if name and self._split_files is not None:
            for secs in self._split_files.candidates(name, cu.comp_dir, cu.dwo_id):
                found = self._split_in(secs, cu)
                if found is not None:
                    break
            if found is None:
                self._dwo_missing.append(name)
        self._splits[cu.offset] = found
        return found

    def _split_in(self, secs: dict[str, memoryview], skeleton: _Cu
                  ) -> tuple[DwarfInfo, _Cu] | None:
        """The unit of `secs` (a .dwo's sections or a package's contribution) whose id is
        the skeleton's, read with what it takes from the program: .debug_addr, GCC's DWARF 4
        .debug_ranges from the skeleton's ranges base, and the skeleton's file names when
        the split unit has no line table of its own (LLVM's)."""
        if "info" not in secs or "abbrev" not in secs:
            return None
        mine = self._s
        if "addr" in mine:
            secs["addr"] = mine["addr"]
        if skeleton.version < 5 and "ranges" in mine:
            secs["ranges"] = mine["ranges"][skeleton.rnglists_base or 0:]
        if "line" in secs:
            split = DwarfInfo(secs, self._e == "<")
        else:
            split = _NamesFilesBySkeleton(secs, self._e == "<", self, skeleton)
        split._inherited = (skeleton.addr_base, skeleton.low_pc, skeleton.comp_dir)
        split._die_base = (skeleton.offset + 1) << 64
        for off in split._units():
            cu = split._unit(off)
            if (cu is not None and split._top_usable(cu)
                    and (skeleton.dwo_id is None or cu.dwo_id == skeleton.dwo_id)):
                return split, cu
        return None


def _local_supplement(holder, ref):
    """The supplementary file of an image the finder did not give (no search directories)."""
    return supplement.find(holder, ref, [], "")


class _NamesFilesBySkeleton(DwarfInfo):
    """A split unit's DwarfInfo whose file numbers are the skeleton's line table's."""

    def __init__(self, secs: dict[str, memoryview], little: bool, program: DwarfInfo,
                 skeleton: _Cu) -> None:
        super().__init__(secs, little)
        # weak: the program's DwarfInfo holds this one, and a run is freed by reference
        # counts (tests/test_memory_bounds.py)
        self._program = weakref.ref(program)
        self._skeleton = skeleton

    def _file_path(self, cu: _Cu, idx: int) -> bytes | None:
        return self._program()._file_path(self._skeleton, idx)


class RecordedDwarf:
    """line_at/scopes_at answered from a persistent cache record (DESIGN decision 4).

    Answers missing from the record are computed by a DwarfInfo, opened on the first miss,
    and added to the record, so a warm run never decompresses or walks the DWARF.
    """

    def __init__(self, image, rec, info: DwarfInfo | None) -> None:
        self._image = image
        self._rec = rec
        self._info = info
        lines = rec.data.get("lines")
        scopes = rec.data.get("scopes")
        if type(lines) is not dict or type(scopes) is not dict:
            lines = rec.data["lines"] = {}
            scopes = rec.data["scopes"] = {}
        self._lines: dict[int, tuple[bytes, int, int] | None] = lines
        self._packed: dict[int, tuple | None] = scopes
        self._scopes: dict[int, tuple[Scope, list[Scope]] | None] = {}

    def missing_files(self) -> tuple[list[bytes], str | None]:
        """DwarfInfo.missing_files of the answers not in the record."""
        return ([], None) if self._info is None else self._info.missing_files()

    def _decoder(self) -> DwarfInfo | None:
        if self._info is None:
            self._info = DwarfInfo.decode(self._image)
        return self._info

    def line_at(self, vaddr: int) -> tuple[bytes, int, int] | None:
        try:
            return self._lines[vaddr]
        except KeyError:
            pass
        info = self._decoder()
        row = None if info is None else info.line_at(vaddr)
        self._lines[vaddr] = row
        self._rec.dirty = True
        return row

    def scopes_at(self, vaddr: int) -> tuple[Scope, list[Scope]] | None:
        try:
            return self._scopes[vaddr]
        except KeyError:
            pass
        packed = self._packed.get(vaddr, _MISSING)
        if packed is _MISSING:
            info = self._decoder()
            result = None if info is None else info.scopes_at(vaddr)
            # not kept without a file it needed: the record's key covers only the program
            # and its debug file
            if info is None or not info.incomplete(vaddr):
                # plain tuples: marshal (the cache's format) takes no tuple subclass
                self._packed[vaddr] = None if result is None else (
                    tuple(result[0]), tuple(tuple(s) for s in result[1]))
                self._rec.dirty = True
        else:
            try:
                result = None if packed is None else (
                    Scope(*packed[0]), [Scope(*s) for s in packed[1]])
            except TypeError:  # not what this code writes: answer from the DWARF
                del self._packed[vaddr]
                return self.scopes_at(vaddr)
        self._scopes[vaddr] = result
        return result


_MISSING = object()


