"""One loaded ELF file: headers, PT_LOAD layout, load bias, sections, symbol table.

`ElfImage` is the per-file object shared by every process that maps the file. Opening reads
only the ELF/program/section headers and the notes (build id, debug link); the symbol table,
PLT map and section contents are built on first use. A malformed file never raises: `open()`
returns None or the affected feature returns nothing, with one warning per file on stderr.
Compressed sections are decompressed by `compressed`, names for addresses without a symbol
come from `plt` (mixed into ElfImage).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import sys

from ..demangle import demangle
from ..regular import open_regular
from ..tuples import TYPE_CHECKING
from . import compressed
from .constants import (
    EM_ARM,
    MACHINES,
    PF_W,
    PF_X,
    PT_LOAD,
    PT_NOTE,
    SHF_ALLOC,
    SHF_COMPRESSED,
    SHT_DYNSYM,
    SHT_NOBITS,
    SHT_NOTE,
    SHT_SYMTAB,
)
from .notes import gnu_build_id
from .plt import FallbackNames
from .symtab import (
    MAPPING_SYMBOLS,
    SymbolTable,
    enclosing_sized,
    name_at,
    sorted_table,
    table_rows,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..cache import CacheRecord

PROT_WRITE = 2
PROT_EXEC = 4

# Page sizes a kernel may have used to round a segment's file offset down for mmap.
_PAGE_SIZES = (0x1000, 0x4000, 0x10000)

_warned: set[str] = set()


class ElfFormatError(Exception):
    """Internal: the file is not a well-formed ELF (never leaves this module)."""


def warn_once(path: str, message: str) -> None:
    """Print one warning per file on stderr."""
    if path not in _warned:
        _warned.add(path)
        print(f"perfparser: warning: {path}: {message}", file=sys.stderr)


class _Section:
    __slots__ = ("name", "type", "flags", "addr", "offset", "size", "link", "info", "entsize")

    def __init__(self, name, type_, flags, addr, offset, size, link, info, entsize):
        self.name: str = name
        self.type: int = type_
        self.flags: int = flags
        self.addr: int = addr
        self.offset: int = offset
        self.size: int = size
        self.link: int = link
        self.info: int = info
        self.entsize: int = entsize


class ElfImage(FallbackNames):
    """A parsed ELF file (or in-memory ELF, e.g. the .gnu_debugdata mini image)."""

    def __init__(self, path: str, data: bytes | mmap.mmap | memoryview) -> None:
        self.path = path
        self._data = memoryview(data)
        self._map = data if isinstance(data, mmap.mmap) else None  # for _drop_pages
        self._debug: ElfImage | None = None
        # the finder's search for the debug file (and the cache record that names it), run on
        # first use of `debug` or `cache`: most mapped files never get a sample
        self.debug_search: Callable[[ElfImage], None] | None = None
        # the finder's search for the supplementary file of the DWARF of a file, this one or
        # its debug file (dwarf/supplement.py); None: without the finder's directories
        self.supplement_search: Callable[[ElfImage, tuple], ElfImage | None] | None = None
        # the DWARF of this file as the supplementary file of others (a DwarfInfo), shared
        # by the files that refer to it
        self.supplement_dwarf = None
        # the finder's search directories (--debug, --app, --extra, the sysroot), where split
        # DWARF files are looked for after the places the file's DWARF names (dwarf/split.py)
        self.split_dirs: tuple[str, ...] = ()
        # where the recording's path is on this machine, when this image is a copy read from
        # elsewhere (perf's build-id cache, --app): a .dwp or .dwo beside the program stays
        # there, not beside the copy (dwarf/split.py); None when it is this file
        self.recorded_at: str | None = None
        self.build_id: bytes | None = None
        self.debuglink: tuple[str, int] | None = None
        self.segments: list[tuple[int, int, int, int]] = []
        self._flags: list[int] = []
        # [start, end) of the executable PT_LOAD segments: the DWARF walk asks in_code() of
        # each return address taken from another sample's stack words
        self._code: list[tuple[int, int]] = []
        self._sections: list[_Section] = []
        self._by_name: dict[str, _Section] = {}
        self._section_cache: dict[str, tuple[int, memoryview] | None] = {}
        self._inflations: dict[str, compressed.Inflation] = {}  # prefetch() jobs not yet taken
        self._syms: SymbolTable | None = None
        self._sym_answers: dict[int, tuple[str, int, int]] = {}  # symbol_at per table index
        self._enclosing: list[int] | None = None  # symtab.enclosing_sized, on first need
        self._alloc: tuple[list[int], list[_Section]] | None = None
        self._plt: tuple[int, dict[int, str | tuple[int, int]], bytes] | None = None
        self._plt_entries: dict[str, tuple[list[int], list[int]]] = {}  # aarch64's, Arm's, by section
        self._fde_functions = None  # plt.FallbackNames.unnamed_function's elf.cfi.Cfi, or False
        self._cache: CacheRecord | None = None
        self._parse_headers()

    @property
    def debug(self) -> ElfImage | None:
        """The separate debug file (attach_debug), None when there is none."""
        if self.debug_search is not None:
            self._search_debug()
        return self._debug

    @property
    def cache(self) -> CacheRecord | None:
        """The persistent cache record, set by the finder with the debug file it found."""
        if self.debug_search is not None:
            self._search_debug()
        return self._cache

    @cache.setter
    def cache(self, record: CacheRecord | None) -> None:
        self._cache = record

    def _search_debug(self) -> None:
        search, self.debug_search = self.debug_search, None
        search(self)

    # ----------------------------------------------------------------- opening

    @staticmethod
    def open(path: str) -> ElfImage | None:
        """Map and parse `path`; None if missing, unreadable, not ELF, or malformed."""
        f = open_regular(path)
        if f is None:  # missing, or a FIFO, device, our own stdout...: never read
            return None
        try:
            with f:
                if f.read(4) != b"\x7fELF":
                    return None
                size = os.fstat(f.fileno()).st_size
                data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        try:
            return ElfImage(path, data)
        except (ElfFormatError, struct.error, ValueError, IndexError) as e:
            warn_once(path, f"malformed ELF ignored ({e})")
            return None

    @staticmethod
    def from_bytes(path: str, data: bytes) -> ElfImage | None:
        """Parse an in-memory ELF; None if it is not well-formed."""
        if data[:4] != b"\x7fELF":
            return None
        try:
            return ElfImage(path, data)
        except (ElfFormatError, struct.error, ValueError, IndexError):
            return None

    def _parse_headers(self) -> None:
        d = self._data
        if len(d) < 52 or bytes(d[:4]) != b"\x7fELF":
            raise ElfFormatError("no ELF header")
        cls, enc = d[4], d[5]
        if cls not in (1, 2) or enc not in (1, 2):
            raise ElfFormatError("bad class or data encoding")
        self.is_64 = cls == 2
        self.little_endian = enc == 1
        e = "<" if self.little_endian else ">"
        self._e = e
        if self.is_64:
            if len(d) < 64:
                raise ElfFormatError("truncated ELF header")
            (etype, mach, _v, _entry, phoff, shoff, _fl, _ehs, phentsize, phnum, shentsize,
             shnum, shstrndx) = struct.unpack_from(e + "HHIQQQIHHHHHH", d, 16)
        else:
            (etype, mach, _v, _entry, phoff, shoff, _fl, _ehs, phentsize, phnum, shentsize,
             shnum, shstrndx) = struct.unpack_from(e + "HHIIIIIHHHHHH", d, 16)
        self.elf_type = etype
        self.e_machine = mach
        self.machine = MACHINES.get(mach, f"em{mach}")
        self._parse_segments(phoff, phentsize, phnum)
        try:
            self._parse_sections(shoff, shentsize, shnum, shstrndx)
        except (ElfFormatError, struct.error, ValueError, IndexError) as ex:
            # Segments are enough to place and read the file; sections are optional.
            self._sections, self._by_name = [], {}
            warn_once(self.path, f"section headers ignored ({ex})")
        self._parse_notes()

    def _check_range(self, off: int, size: int, what: str) -> None:
        if off < 0 or size < 0 or off + size > len(self._data):
            raise ElfFormatError(f"{what} outside the file")

    def _entry_format(self, wide: str, narrow: str, entsize: int, what: str) -> str:
        """The struct format of one program or section header (ELF64 or ELF32), which the
        header's entry size must hold."""
        fmt = self._e + (wide if self.is_64 else narrow)
        if entsize < struct.calcsize(fmt):
            raise ElfFormatError(f"bad {what} size")
        return fmt

    def _parse_segments(self, phoff: int, phentsize: int, phnum: int) -> None:
        if phnum == 0:
            return
        fmt = self._entry_format("IIQQQQQQ", "IIIIIIII", phentsize, "program header")
        self._check_range(phoff, phentsize * phnum, "program headers")
        self._notes_ph: list[tuple[int, int]] = []
        for i in range(phnum):
            f = struct.unpack_from(fmt, self._data, phoff + i * phentsize)
            if self.is_64:
                ptype, flags, off, vaddr, _paddr, filesz, memsz, _align = f
            else:
                ptype, off, vaddr, _paddr, filesz, memsz, flags, _align = f
            if ptype == PT_LOAD:
                self.segments.append((vaddr, memsz, off, filesz))
                self._flags.append(flags)
                if flags & PF_X:
                    self._code.append((vaddr, vaddr + memsz))
            elif ptype == PT_NOTE:
                self._notes_ph.append((off, filesz))

    def _parse_sections(self, shoff: int, shentsize: int, shnum: int, shstrndx: int) -> None:
        if shoff == 0:
            return
        fmt = self._entry_format("IIQQQQIIQQ", "IIIIIIIIII", shentsize, "section header")
        self._check_range(shoff, struct.calcsize(fmt), "section headers")
        if shnum == 0 or shstrndx == 0xFFFF:
            # Extended numbering: real values live in section 0.
            s0 = struct.unpack_from(fmt, self._data, shoff)
            shnum = shnum or s0[5]
            if shstrndx == 0xFFFF:
                shstrndx = s0[6]
        self._check_range(shoff, shentsize * shnum, "section headers")
        raw = [struct.unpack_from(fmt, self._data, shoff + i * shentsize) for i in range(shnum)]
        names = b""
        if 0 < shstrndx < shnum:
            s = raw[shstrndx]
            self._check_range(s[4], s[5], "section name table")
            names = bytes(self._data[s[4]:s[4] + s[5]])
        size_of_file = len(self._data)
        for name_off, stype, flags, addr, off, size, link, info, _align, entsize in raw:
            end = names.find(b"\0", name_off)
            name = names[name_off:end if end >= 0 else len(names)].decode("utf-8", "replace")
            if stype != SHT_NOBITS and (off > size_of_file or off + size > size_of_file):
                # Truncated file: keep the header but make the contents unavailable.
                warn_once(self.path, f"section {name} extends past the end of the file")
                stype = SHT_NOBITS
            sec = _Section(name, stype, flags, addr, off, size, link, info, entsize)
            self._sections.append(sec)
            self._by_name.setdefault(name, sec)

    def _parse_notes(self) -> None:
        ranges = [(s.offset, s.size) for s in self._sections
                  if s.type == SHT_NOTE and s.name == ".note.gnu.build-id"]
        ranges += [(s.offset, s.size) for s in self._sections
                   if s.type == SHT_NOTE and s.name != ".note.gnu.build-id"]
        ranges += getattr(self, "_notes_ph", [])
        for off, size in ranges:
            bid = gnu_build_id(self._data, off, size, self._e)
            if bid is not None:
                self.build_id = bid
                break
        sec = self._by_name.get(".gnu_debuglink")
        if sec is not None and sec.type != SHT_NOBITS:
            raw = bytes(self._data[sec.offset:sec.offset + sec.size])
            end = raw.find(b"\0")
            crc_off = (end + 4) & ~3
            if end > 0 and crc_off + 4 <= len(raw):
                (crc,) = struct.unpack_from(self._e + "I", raw, crc_off)
                self.debuglink = (raw[:end].decode("utf-8", "surrogateescape"), crc)

    # ------------------------------------------------------------------ layout

    def load_bias(self, map_addr: int, map_pgoff: int, prot: int | None = None) -> int | None:
        """Bias (runtime = vaddr + bias) for a mapping of file offset `map_pgoff` at `map_addr`.

        The PT_LOAD whose file range covers the offset decides, so split mappings of any
        layout (separate-code, differing offset/vaddr deltas) agree on one bias. Segments can
        share a file page; then the mapping's `prot` (MMAP2 PROT_* bits, if known) picks one
        by its exec/write bits, and a segment starting exactly at the offset wins.

        The rule is the same for ET_EXEC: the kernel's mapping at the link address gets bias
        0, and a second mapping of the file elsewhere (V8 remaps node's embedded builtins
        from /usr/bin/node) gets its own bias, never addr - pgoff.
        """
        for page in _PAGE_SIZES:
            best = None
            best_rank = None
            for (vaddr, _memsz, off, filesz), flags in zip(self.segments, self._flags, strict=True):
                first_page = off & ~(page - 1)
                if not first_page <= map_pgoff < off + filesz:
                    continue
                if prot is not None and (
                    bool(prot & PROT_EXEC) != bool(flags & PF_X)
                    or (prot & PROT_WRITE and not flags & PF_W)
                ):
                    continue
                rank = (off == map_pgoff, first_page == map_pgoff, off)
                if best_rank is None or rank > best_rank:
                    best, best_rank = (vaddr, off), rank
            if best is not None:
                vaddr, off = best
                return map_addr - (vaddr + map_pgoff - off)
        return None

    def span(self) -> tuple[int, int]:
        """[lowest p_vaddr, highest p_vaddr + p_memsz) of the PT_LOAD segments."""
        if not self.segments:
            return (0, 0)
        return (min(s[0] for s in self.segments), max(s[0] + s[1] for s in self.segments))

    def in_code(self, vaddr: int) -> bool:
        """Whether ELF virtual address `vaddr` lies in an executable PT_LOAD segment, as a
        return address must; True for an image without segments (nothing known)."""
        if not self.segments:
            return True
        for start, end in self._code:
            if start <= vaddr < end:
                return True
        return False

    def read(self, vaddr: int, size: int) -> bytes | None:
        """File-backed bytes at ELF virtual address `vaddr`, None if not in the file."""
        for seg_vaddr, _memsz, off, filesz in self.segments:
            if seg_vaddr <= vaddr and vaddr + size <= seg_vaddr + filesz:
                start = off + vaddr - seg_vaddr
                if start + size <= len(self._data):
                    return bytes(self._data[start:start + size])
                return None
        return None

    # ---------------------------------------------------------------- sections

    def _raw_section(self, sec: _Section) -> memoryview:
        return self._data[sec.offset:sec.offset + sec.size]

    def section(self, name: str) -> tuple[int, memoryview] | None:
        """(sh_addr, contents) of section `name`, decompressed; None if absent.

        Debug sections and .symtab come from the attached debug file when this file lacks
        them (or has them as NOBITS).
        """
        try:
            return self._section_cache[name]
        except KeyError:
            pass
        result = self._own_section(name)
        if result is None and self.debug is not None and (
            name.startswith(".debug_") or name in (".symtab", ".strtab")
        ):
            result = self.debug.section(name)
        self._section_cache[name] = result
        return result

    def holder_of(self, name: str) -> ElfImage:
        """The file whose section `name` section() gives: this one, or its debug file."""
        if self._holder(name) is None and self.debug is not None and self.section(name):
            return self.debug
        return self

    def _own_section(self, name: str) -> tuple[int, memoryview] | None:
        sec = self._holder(name)
        if sec is None:
            return None
        if sec.name == name and not sec.flags & SHF_COMPRESSED:
            return (sec.addr, self._raw_section(sec))
        job = self._inflations.pop(name, None)
        if job is None:
            packed = self._compressed(sec)
            if packed is None:
                return None
            job = compressed.Inflation(*packed)
        addr, data, warning = job.result()
        if warning is not None:
            warn_once(self.path, warning)
        if data is None:
            return None
        self._drop_pages(sec.offset, sec.size)  # the compressed body is not read again
        return (addr, memoryview(data))

    def _drop_pages(self, offset: int, size: int) -> None:
        """Let the pages of bytes [offset, offset + size) of the mapped file go from this
        process's RSS (those wholly inside: a neighbour's bytes keep theirs); a later read
        faults them back in from the page cache."""
        if self._map is None:
            return
        start = -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE
        end = (offset + size) // mmap.PAGESIZE * mmap.PAGESIZE
        if end > start:
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)

    def _compressed(self, sec: _Section) -> tuple | None:
        """compressed.header of `sec` (a _holder)."""
        return compressed.header(sec, self._raw_section(sec), self.is_64, self._e)

    def prefetch(self, names) -> None:
        """Start decompressing sections `names` (where section() would take them: this file,
        else the attached debug file) on the prefetch thread; zlib runs without the GIL, so
        this overlaps the run's other work. section() takes over a job not yet started."""
        for name in names:
            owner = self
            sec = self._holder(name)
            if sec is None and self.debug is not None:
                owner = self.debug
                sec = owner._holder(name)
            if sec is None or name in owner._inflations or name in owner._section_cache:
                continue
            packed = owner._compressed(sec)
            if packed is not None:
                job = owner._inflations[name] = compressed.Inflation(*packed)
                compressed.prefetch(job, len(packed[2]))

    def _holder(self, name: str) -> _Section | None:
        """The section holding `name` in this file (its .zdebug_ form included), if any."""
        sec = self._by_name.get(name)
        if sec is None and name.startswith(".debug_"):
            sec = self._by_name.get(".zdebug_" + name[7:])
        return None if sec is None or sec.type == SHT_NOBITS else sec

    def _alloc_sections(self) -> tuple[list[int], list[_Section]]:
        if self._alloc is None:
            secs = sorted((s for s in self._sections if s.flags & SHF_ALLOC and s.size),
                          key=lambda s: s.addr)
            self._alloc = ([s.addr for s in secs], secs)
        return self._alloc

    def _section_containing(self, vaddr: int) -> _Section | None:
        addrs, secs = self._alloc_sections()
        i = bisect.bisect_right(addrs, vaddr) - 1
        # Overlapping sections (.tbss) may hide the real one; look back a little.
        while i >= 0:
            s = secs[i]
            if s.addr <= vaddr < s.addr + s.size:
                return s
            if i == 0 or addrs[i - 1] + 0x1000000 < vaddr:
                break
            i -= 1
        return None

    def attach_debug(self, debug: ElfImage) -> None:
        """Use `debug` (a separate debug file) for symbols and debug sections from now on."""
        self._debug = debug
        self._section_cache.clear()
        self._syms = None
        self._sym_answers.clear()
        self._enclosing = None

    # ----------------------------------------------------------------- symbols

    def load_symbols(self) -> SymbolTable:
        """The symbol table, built now if it is not yet (open_listed: before the first
        symbol_at)."""
        if self._syms is None:
            self._syms = self._symbols()
        return self._syms

    def symbol_at(self, vaddr: int) -> tuple[str, int, int] | None:
        """(demangled name, st_value, st_size) of the symbol covering ELF address `vaddr`."""
        values, sizes, name_offs, strings = self._syms or self.load_symbols()
        i = bisect.bisect_left(values, vaddr)
        if i < len(values) and values[i] == vaddr:
            # Section symbols (no name) share their address with the first function of the
            # section, and labels (clang's `.LBB0_1` on RISC-V) with a function: an exact
            # hit takes the first named entry there with a size, else the first named one,
            # as perf prefers a sized symbol
            n = len(values)
            first = -1
            while i < n and values[i] == vaddr:
                if strings[name_offs[i]]:
                    if sizes[i]:
                        first = i
                        break
                    if first < 0:
                        first = i
                i += 1
            i = first if first >= 0 else i - 1
        elif i == 0:
            return None
        else:
            i -= 1
            size = sizes[i]
            if size and vaddr >= values[i] + size:
                return None
        if not sizes[i]:
            # a label inside a sized function: the function (symtab.enclosing_sized)
            if self._enclosing is None:
                self._enclosing = enclosing_sized(values, sizes)
            j = self._enclosing[i]
            if j >= 0 and vaddr < values[j] + sizes[j] and strings[name_offs[j]]:
                i = j
            elif vaddr != values[i]:
                # a label reaches up to the next symbol but never past its section, as
                # elfutils' same_section rule has it: `_init` (.init) does not name the .plt
                # after it, whose slots perf and §10.8 name `puts@plt`; nor does one at a
                # section's end (`_end`, `_etext`) name what lies in no section at all (a
                # junk return address past .bss: perf has no name there either)
                sec = self._section_containing(vaddr)
                if sec is None or sec is not self._section_containing(values[i]):
                    return None
        # addresses of one function share the answer (decoding and demangling it once)
        hit = self._sym_answers.get(i)
        if hit is None:
            name = name_at(strings, name_offs[i])
            if not name:
                return None
            hit = self._sym_answers[i] = (
                demangle(name.decode("utf-8", "surrogateescape")), values[i], sizes[i])
        return hit

    def _symbol_tables(self) -> list[tuple[memoryview, memoryview]]:
        """(symbols, strings) pairs in upstream's order of preference."""
        for img in (self, self.debug):  # elfutils: own .symtab first
            if img is None:
                continue
            tab = img._table(SHT_SYMTAB)
            if tab is not None:
                return [tab]
        tables = []
        tab = self._table(SHT_DYNSYM)
        if tab is not None:
            tables.append(tab)
        mini = self._minidebug()
        if mini is not None:
            tab = mini._table(SHT_SYMTAB)
            if tab is not None:
                tables.append(tab)
        return tables

    def _table(self, stype: int) -> tuple[memoryview, memoryview] | None:
        for s in self._sections:
            if s.type == stype:
                if not 0 < s.link < len(self._sections):
                    return None
                strs = self._sections[s.link]
                if strs.type == SHT_NOBITS:
                    return None
                return (self._raw_section(s), self._raw_section(strs))
        return None

    def _minidebug(self) -> ElfImage | None:
        sec = self._by_name.get(".gnu_debugdata")
        if sec is None or sec.type == SHT_NOBITS:
            return None
        data, warning = compressed.unxz(bytes(self._raw_section(sec)))
        if warning is not None:
            warn_once(self.path, warning)
        if data is None:
            return None
        return ElfImage.from_bytes(self.path + "[.gnu_debugdata]", data)

    def _symbols(self) -> SymbolTable:
        """The sorted symbol table, from the persistent cache record when it has one."""
        rec = self.cache
        if rec is not None:
            syms = rec.data.get("symbols")
            if (type(syms) is tuple and len(syms) == 4
                    and len(syms[0]) == len(syms[1]) == len(syms[2])
                    and type(syms[3]) is bytes and max(syms[2], default=0) < len(syms[3])):
                return syms
        syms = self._build_symbols()
        if rec is not None:
            rec.data["symbols"] = syms
            rec.dirty = True
        return syms

    def _build_symbols(self) -> SymbolTable:
        mapping = MAPPING_SYMBOLS.get(self.e_machine)
        return sorted_table([
            (table_rows(symtab, self.is_64, self._e == ">", self.e_machine == EM_ARM,
                        None if mapping is None else (bytes(strtab), mapping)),
             bytes(strtab)) for symtab, strtab in self._symbol_tables()])
