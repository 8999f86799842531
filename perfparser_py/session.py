"""Processes and their address spaces, rebuilt from FORK / COMM / EXIT / MMAP records.

Session.mmap and Session.task are the one place where a time-ordered record changes a process
or an address space; the file behind a mapping is looked up by the caller's find_elf.

The rules (DESIGN.md decision 6) are what the kernel did, not what upstream perfparser does:
* a FORK that perf synthesized for an already running process (time 0, FORK_EXEC misc bit,
  or a child that already has mappings) only creates the process; it never replaces the
  child's maps with the parent's (upstream bug, hotspot #783);
* a real fork copies the parent's maps; the child's own later mmaps override them;
* an exec (COMM with COMM_EXEC for the main thread) drops every user mapping; until the new
  program's first user-mode sample, an address none of its mappings covers is looked up in
  the old ones (the kernel is still in execve, with the old program's user registers);
* a mapping replaces whatever it overlaps (the overlapped parts of older mappings survive
  as fragments);
* a mapping is placed by the PT_LOAD segment that covers its file offset (ElfImage.load_bias),
  executables too: the pieces of one file with one bias form one module, and a second
  placement of the file (V8 remapping node's builtins) is a module of its own.
"""

from __future__ import annotations

import bisect
import itertools
import os

from .perfdata import events as ev
from .perfdata.abi import (
    RECORD_KSYMBOL_FLAGS_UNREGISTER,
    RECORD_MISC_COMM_EXEC,
    RECORD_MISC_FORK_EXEC,
)

KERNEL_PID = -1
# exited processes kept for the samples of their exit path (Session.exited)
MAX_EXITED = 64
# Process.generation's values, unique across all processes of the run
_generations = itertools.count(1)
# AddressSpace.overlap
NOTHING, DATA, IMAGE = 0, 1, 2
# Process.fresh: ranges kept before a change counts as one of mapped addresses
MAX_FRESH = 4096


def is_special(path: bytes) -> bool:
    """Mappings with no file behind them (SEMANTICS §7.2), and an anonymous inode's
    (`anon_inode:[perf_event]`: perf's own ring buffer in every `perf record -a`, which
    upstream reports as a missing ELF file)."""
    return (
        not path
        or (path.startswith(b"[") and b"]" in path)
        or path.startswith((b"/dev/", b"/memfd:", b"/SYSV", b"/anon_hugepage", b"anon_inode:"))
        or path == b"//anon"
    )


class Mapping:
    """One mapped range. `image`/`bias` are set when the ELF file was found locally.

    The shared location cache (SEMANTICS §10.1) is keyed by (path, base_vaddr, ip - base):
    upstream's (path, ip - elfStart) names one ELF address only while every module of the
    file starts at the same ELF address; base_vaddr keeps modules that start elsewhere (a
    piece without a pgoff-0 piece, a second placement) apart and changes nothing else.
    """

    __slots__ = ("base", "base_vaddr", "bias", "end", "image", "local", "path", "pgoff",
                 "start", "symbols")

    def __init__(self, start, end, pgoff, path, local, image, bias, base):
        self.start = start
        self.end = end
        self.pgoff = pgoff
        self.path = path  # bytes, as recorded
        self.local = local  # str | None: the local candidate path (actualPath)
        self.image = image  # ElfImage | None
        self.bias = bias  # runtime address = ELF vaddr + bias
        self.base = base  # start of the module's pgoff-0 piece, else start (elfStart)
        self.base_vaddr = None if bias is None else base - bias  # ELF address at base
        # the symbolizer's location ids of the module's addresses, shared by every mapping
        # of the module (symbolize.Symbolizer._frame)
        self.symbols = None

    def piece(self, start: int, end: int) -> Mapping:
        return Mapping(start, end, self.pgoff + (start - self.start), self.path, self.local,
                       self.image, self.bias, self.base)

    @property
    def binary(self) -> bytes:
        return b"" if is_special(self.path) else os.path.basename(self.path)


class SymbolMapping(Mapping):
    """Code announced by name instead of by a file: a BPF program's JIT image or a trampoline
    (PERF_RECORD_KSYMBOL), a JIT-compiled function (jitdump.py). One symbol, `name`, starting
    at `base`; `path` names its binary (perf's dso: the symbol's name, or the dump); `lines`
    are its source lines as (offset from base, line, file) in address order; `ident` keeps
    functions of one binary apart in the shared location cache."""

    __slots__ = ("lines", "name")

    def __init__(self, start: int, end: int, name: bytes, path: bytes | None = None,
                 lines: tuple = (), ident: int | None = None, base: int | None = None) -> None:
        super().__init__(start, end, 0, name if path is None else path, None, None, None,
                         start if base is None else base)
        self.name = name
        self.lines = lines
        self.base_vaddr = ident

    def piece(self, start: int, end: int) -> SymbolMapping:
        return SymbolMapping(start, end, self.name, self.path, self.lines, self.base_vaddr,
                             self.base)

    def line_at(self, addr: int) -> tuple[bytes, int] | None:
        """(file, line) of addr as perf has it from the line table perf inject writes: the last
        entry at or below addr, where the table ends at the last entry's address."""
        lines = self.lines
        i = bisect.bisect_right(lines, addr - self.base, key=lambda e: e[0]) - 1
        if i < 0 or i == len(lines) - 1:
            return None
        return lines[i][2], lines[i][1]


class AddressSpace:
    """Non-overlapping mappings sorted by start address."""

    __slots__ = ("_maps", "_starts")

    def __init__(self, maps: list[Mapping] | None = None) -> None:
        self._maps = list(maps or ())
        self._starts = [m.start for m in self._maps]

    def copy(self) -> AddressSpace:
        return AddressSpace(self._maps)

    def __len__(self) -> int:
        return len(self._maps)

    def __iter__(self):
        return iter(self._maps)

    def contains(self, addr: int) -> bool:
        """Whether addr lies between the first mapping's start and the last one's end."""
        maps = self._maps
        return bool(maps) and maps[0].start <= addr < maps[-1].end

    def _index(self, addr: int) -> int:
        """bisect.bisect_right(self._starts, addr) - 1: a C loop when compiled."""
        starts = self._starts
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if addr < starts[mid]:
                hi = mid
            else:
                lo = mid + 1
        return lo - 1

    def find(self, addr: int) -> Mapping | None:
        i = self._index(addr)
        if i >= 0:
            m = self._maps[i]
            if addr < m.end:
                return m
        return None

    def span_at(self, addr: int) -> tuple[int, int, Mapping | None]:
        """(start, end, mapping) of the mapping holding `addr`, else of the gap around it
        (mapping None; the address space's ends bound the first and last gaps)."""
        maps = self._maps
        i = self._index(addr)
        if i >= 0:
            m = maps[i]
            if addr < m.end:
                return m.start, m.end, m
        return (maps[i].end if i >= 0 else 0,
                maps[i + 1].start if i + 1 < len(maps) else 1 << 64, None)

    def base_for(self, path: bytes, start: int, bias: int | None) -> int:
        """Start of the nearest pgoff-0 piece of the same module (file and bias) below
        `start`, else `start`. A piece of another placement of the file is not the base."""
        i = self._index(start)
        while i >= 0:
            m = self._maps[i]
            if m.path == path and m.pgoff == 0 and m.bias == bias:
                return m.start
            i -= 1
        return start

    def overlap(self, start: int, end: int) -> int:
        """What overlaps [start, end): NOTHING, DATA (only mappings without an ELF image)
        or IMAGE."""
        maps = self._maps
        i = max(self._index(start), 0)
        found = NOTHING
        while i < len(maps) and maps[i].start < end:
            if maps[i].end > start:
                if maps[i].image is not None:
                    return IMAGE
                found = DATA
            i += 1
        return found

    def holds(self, mapping: Mapping) -> bool:
        """Whether `mapping` is one already in place, field by field (a process's [heap] is
        recorded again on every brk, unchanged)."""
        m = self.find(mapping.start)
        return (m is not None and type(m) is Mapping and type(mapping) is Mapping
                and m.start == mapping.start and m.end == mapping.end
                and m.pgoff == mapping.pgoff and m.path == mapping.path
                and m.local == mapping.local and m.image is mapping.image
                and m.bias == mapping.bias and m.base == mapping.base)

    def insert(self, new: Mapping) -> None:
        """Insert `new`, cutting what it overlaps."""
        self._replace(new.start, new.end, [new])

    def remove(self, start: int, end: int) -> None:
        """Unmap [start, end)."""
        self._replace(start, end, [])

    def _replace(self, start: int, end: int, new: list[Mapping]) -> None:
        maps, starts = self._maps, self._starts
        lo = self._index(start)
        if lo < 0 or maps[lo].end <= start:
            lo += 1
        hi = lo
        keep: list[Mapping] = []
        while hi < len(maps) and maps[hi].start < end:
            old = maps[hi]
            if old.start < start:
                keep.append(old.piece(old.start, start))
            if old.end > end:
                keep.append(old.piece(end, old.end))
            hi += 1
        # nothing cut (most mappings are placed over nothing): `new` is in order
        pieces = sorted([*keep, *new], key=lambda m: m.start) if keep else new
        maps[lo:hi] = pieces
        starts[lo:hi] = [m.start for m in pieces]


class Process:
    """A process: its pid, address space and first image, plus one slot per later stage
    (`unwind`, `symbols`) that the stage makes, fills and checks against the generations.

    `generation` changes with every change of the address space; `mapped_generation` with
    every change of what an address mapped before maps to (an exec's end included), while a
    mapping placed where nothing was is only added to `fresh`; `image_generation` with every
    change where a mapping with an ELF image is or was (only those change what the unwinder's
    module lookups answer). They are unique across processes, so a stage's record of one
    names this process's space as it was."""

    __slots__ = ("before_exec", "first_image", "fresh", "generation", "image_generation",
                 "mapped_generation", "pid", "space", "symbols", "unwind")

    def __init__(self, pid: int, space: AddressSpace | None = None) -> None:
        self.pid = pid
        self.space = space if space is not None else AddressSpace()
        self.first_image = None  # first ELF mapped: picks the unwinder's machine
        self.generation = self.image_generation = self.mapped_generation = next(_generations)
        # [start, end) of the mappings placed over nothing since mapped_generation moved
        self.fresh: list[tuple[int, int]] = []
        # the address space before the exec that made this process, while the kernel may
        # still be in execve: samples there have the old program's user registers
        self.before_exec: AddressSpace | None = None
        self.unwind = None  # unwind.process.ProcessUnwind, made by the DWARF unwinder
        self.symbols = None  # symbolize.ProcessSymbols, made by the symbolizer

    def exec_done(self) -> None:
        """The new program runs in user mode: the old address space names nothing more."""
        self.before_exec = None
        self._remapped()

    def changed(self, start: int, end: int, overlap: int, image: bool) -> None:
        """[start, end), where `overlap` (AddressSpace.overlap) was mapped, maps anew;
        `image`: to a mapping with an ELF image."""
        if overlap != NOTHING or len(self.fresh) >= MAX_FRESH:
            self._remapped()
        else:
            self.generation = next(_generations)
            self.fresh.append((start, end))
        if image or overlap == IMAGE:
            self.image_generation = self.generation

    def _remapped(self) -> None:
        self.generation = self.mapped_generation = next(_generations)
        self.fresh.clear()


class Session:
    """All processes, plus the kernel's address space under pid -1."""

    def __init__(self) -> None:
        self.processes: dict[int, Process] = {}
        # Processes after their EXIT, newest last: a task still runs its exit path after the
        # record (a system-wide recording samples it there, in _exit), and its user frames
        # are named from its maps, as perf does. A reused pid starts anew with its FORK.
        self.exited: dict[int, Process] = {}
        self.kernel = Process(KERNEL_PID)
        # (first kernel mapping's start, last one's end); (0, 0) while there is none
        self.kernel_range = (0, 0)

    def process(self, pid: int) -> Process:
        if pid == KERNEL_PID:
            return self.kernel
        proc = self.processes.get(pid)
        if proc is None:
            proc = self.exited.get(pid)
            if proc is None:
                proc = self.processes[pid] = Process(pid)
        return proc

    def fork(self, pid: int, ppid: int, time: int, misc: int) -> None:
        if pid == ppid:
            return  # a new thread shares its process's state
        self.exited.pop(pid, None)
        child = self.processes.get(pid)
        synthesized = time == 0 or misc & RECORD_MISC_FORK_EXEC or (child is not None and len(child.space))
        if synthesized:
            self.process(pid)
            return
        parent = self.processes.get(ppid)
        child = self.processes[pid] = Process(pid, parent.space.copy() if parent else None)
        if parent is not None:
            child.first_image = parent.first_image

    def exec(self, pid: int) -> None:
        """The process image was replaced: nothing mapped before survives (but for the
        samples still in execve, Process.before_exec)."""
        self.exited.pop(pid, None)
        old = self.processes.get(pid)
        new = self.processes[pid] = Process(pid)
        if old is not None and len(old.space):
            new.before_exec = old.space

    def exit(self, pid: int) -> None:
        proc = self.processes.pop(pid, None)
        if proc is not None:
            self.exited.pop(pid, None)
            self.exited[pid] = proc
            if proc.unwind is not None:
                proc.unwind.exited()
            if len(self.exited) > MAX_EXITED:
                del self.exited[next(iter(self.exited))]

    def mmap(self, e, find_elf) -> None:
        """What a time-ordered MMAP / MMAP2, KSYMBOL or jitdump code event (jitdump.py) maps.
        find_elf(pid, path, build_id, inode) -> (local path, ElfImage), each None when there
        is none, looks the file up."""
        kind = type(e)
        if kind is ev.KsymbolEvent:
            # kernel code named by a KSYMBOL record: a map of its own, or gone (as perf does)
            if e.flags & RECORD_KSYMBOL_FLAGS_UNREGISTER:
                self.remove_kernel_range(e.addr, e.addr + e.len)
            else:
                self.add_mapping(KERNEL_PID, SymbolMapping(e.addr, e.addr + e.len, e.name))
            return
        if kind is ev.JitCodeEvent:
            self.add_mapping(e.pid, SymbolMapping(e.addr, e.addr + e.len, e.name, e.dump,
                                                  e.lines, e.code_index))
            return
        path = e.filename
        local, image = find_elf(e.pid, path, e.build_id, e.ino)
        bias = None
        if image is not None:
            bias = image.load_bias(e.addr, e.pgoff, e.prot)
            if bias is None:
                image = None  # no PT_LOAD covers this piece: not code we can place
        proc = self.process(e.pid)
        base = proc.space.base_for(path, e.addr, bias) if e.pgoff else e.addr
        self.add_mapping(
            e.pid, Mapping(e.addr, e.addr + e.len, e.pgoff, path, local, image, bias, base)
        )

    def task(self, e) -> None:
        """What a time-ordered FORK, EXIT or COMM event does to the processes."""
        kind = type(e)
        if kind is ev.ForkEvent:
            self.fork(e.pid, e.ppid, e.time or e.record_time, e.misc)
        elif kind is ev.ExitEvent:
            if e.pid == e.tid:  # a thread's exit ends nothing of its process
                self.exit(e.pid)
        elif kind is ev.CommEvent:
            if e.misc & RECORD_MISC_COMM_EXEC and e.pid == e.tid:
                self.exec(e.pid)

    def add_mapping(self, pid: int, mapping: Mapping) -> None:
        proc = self.process(pid)
        space = proc.space
        start, end = mapping.start, mapping.end
        overlap = space.overlap(start, end)
        if overlap != NOTHING and space.holds(mapping):  # one in place overlaps its range
            return
        if mapping.image is not None and proc.first_image is None:
            proc.first_image = mapping.image
        proc.changed(start, end, overlap, mapping.image is not None)
        space.insert(mapping)
        self._changed(pid, proc)

    def remove_kernel_range(self, start: int, end: int) -> None:
        """Kernel code at [start, end) is gone (a BPF program unloaded)."""
        kernel = self.kernel
        overlap = kernel.space.overlap(start, end)
        if overlap == NOTHING:
            return
        kernel.changed(start, end, overlap, False)
        kernel.space.remove(start, end)
        self._changed(KERNEL_PID, kernel)

    def _changed(self, pid: int, proc: Process) -> None:
        if pid == KERNEL_PID:
            maps = proc.space._maps
            self.kernel_range = (maps[0].start, maps[-1].end) if maps else (0, 0)
