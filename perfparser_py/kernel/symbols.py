"""Where one run's kernel names come from: the kallsyms of the recording's kernel, chosen by
its build id, and its addresses moved to where that kernel was (`KernelSymbols`)."""

from __future__ import annotations

import os
import stat
import sys

from .. import probes
from ..elf.vdso import RUNNING_KERNEL as NOTES
from ..tuples import TYPE_CHECKING
from .kallsyms import EMPTY_MAPPING, LIVE, Kallsyms, KallsymsError

if TYPE_CHECKING:
    from ..cache import PersistentCache
    from .worker import KallsymsWorker


class OwnCopy:
    """The persistent cache's copy of the running kernel's kallsyms, named by its build id,
    for a machine where perf's build-id cache has none (recordings made with `perf record
    -N`, or by another user: sudo): written by the first run that reads /proc/kallsyms, whose
    every line the kernel formats (~45 ms of kernel time for 120 k lines), then read by the
    next runs as perf's copy is (`KernelSymbols._image_copy`): a file read. It names the
    kernel image's addresses exactly as /proc/kallsyms does, so whether it exists changes no
    output, and a run does not record looking for it (probes)."""

    def __init__(self, cache: PersistentCache) -> None:
        self._cache = cache
        self._path: str | None = None

    @staticmethod
    def of_running_kernel(cache: PersistentCache | None, kallsyms: str | None,
                          sysroot: str) -> OwnCopy | None:
        """The copy in `cache` (the run's, None when off) for a run with `--kallsyms`
        `kallsyms` and `--sysroot` `sysroot`, which decide whether it reads the running
        kernel's kallsyms."""
        if cache is None or kallsyms is not None or sysroot not in ("", "/"):
            return None
        return OwnCopy(cache)

    @property
    def path(self) -> str:
        """Its file, "" without a usable cache or a known running build id (found on first
        use: a run that names no kernel frame never looks)."""
        if self._path is None:
            from ..cache import KALLSYMS_SUFFIX

            running = running_build_id(NOTES)[0]
            self._path = (os.path.join(self._cache.root,
                                       f"kallsyms-{running.hex()}{KALLSYMS_SUFFIX}")
                          if running is not None and self._cache.usable() else "")
        return self._path

    def exists(self) -> bool:
        """Whether it is there: a regular file, not a link (the cache's files never are)."""
        try:
            return bool(self.path) and stat.S_ISREG(os.lstat(self.path).st_mode)
        except OSError:
            return False

    def used(self) -> None:
        """Mark it recently used, as a cache hit does: trim() removes the oldest first."""
        try:
            os.utime(self.path)
        except OSError:
            pass

    def keep_from(self, path: str, data: bytes) -> None:
        """Keep `data`, the text just read and parsed of the kallsyms file `path`, if that is
        the running kernel's and the copy does not exist yet."""
        if os.path.realpath(path) == LIVE and self.path and not self.exists():
            self._cache.keep(self.path, data)

    def discard(self) -> None:
        """Remove a copy that proved unusable: the next read of /proc/kallsyms replaces it."""
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _named_path(kallsyms: str | None, sysroot: str) -> str:
    """`--kallsyms`, else the sysroot's /proc/kallsyms."""
    # the default sysroot "/" would make it "//proc/kallsyms" in every message naming it
    return sysroot.rstrip("/") + "/proc/kallsyms" if kallsyms is None else kallsyms


def likely_path(kallsyms: str | None, sysroot: str, debug_paths: list[str] = (),
                own: OwnCopy | None = None) -> str:
    """The kallsyms file a run will most likely read, known before the recording is: what a
    recording of the running kernel reads (the common case; the run's own choice is
    KernelSymbols.choose and _image_copy): `--kallsyms`, else perf's build-id cache copy
    of the running kernel's under `debug_paths`, else `own` if it exists, else the sysroot's
    /proc/kallsyms."""
    if kallsyms is None and sysroot in ("", "/") and (debug_paths or own is not None):
        running = running_build_id(NOTES)[0]
        copy = _running_copy(running, debug_paths, own) if running else None
        if copy:
            return copy
    return _named_path(kallsyms, sysroot)


def parsed_ahead(kallsyms: str | None, sysroot: str, debug_paths: list[str] = (),
                 own: OwnCopy | None = None) -> str | None:
    """The kallsyms file worth a worker's parse ahead of the run (KallsymsWorker): the one
    likely_path names, unless that is a copy of the running kernel's, which the run
    searches in place (Kallsyms.load's in_place) without parsing it."""
    path = likely_path(kallsyms, sysroot, debug_paths, own)
    return path if path == _named_path(kallsyms, sysroot) else None


def _running_copy(running: bytes, debug_paths: list[str], own: OwnCopy | None) -> str | None:
    """perf's build-id cache copy of the kallsyms of the running kernel, whose build id is
    `running`, else `own` if it exists."""
    copy = Kallsyms.cached_path(debug_paths, running)
    if copy is None and own is not None and own.exists():
        return own.path
    return copy


def running_build_id(notes_file: str) -> tuple[bytes | None, str]:
    """(The GNU build id in a kernel's ELF notes file (/sys/kernel/notes), else None; why
    there is none)."""
    from ..elf.notes import gnu_build_id

    try:
        notes = probes.content(notes_file)
    except OSError as e:
        return None, f"{notes_file}: {e.strerror or e}"
    bid = gnu_build_id(notes, 0, len(notes), "=")
    return bid, "" if bid else f"{notes_file} holds no GNU build-id note"


def _same_build_id(recorded: bytes, running: bytes) -> bool:
    # HEADER_BUILD_ID always holds 20 bytes: a shorter id comes zero-padded
    return recorded.rstrip(b"\0") == running.rstrip(b"\0")


def of_running_kernel(kallsyms: str | None, sysroot: str, recorded: bytes | None,
                      notes_file: str = NOTES) -> bool:
    """Whether a recording whose kernel build id is `recorded` (None: it names none) is taken
    to be of this machine's running kernel, for a run with `--kallsyms` `kallsyms` and
    `--sysroot` `sysroot`: no sysroot and no `--kallsyms`, and that id is the running one's
    or, as KernelSymbols.choose takes /proc/kallsyms then, none."""
    if kallsyms is not None or sysroot not in ("", "/"):
        return False
    if recorded is None:
        return True
    running = running_build_id(notes_file)[0]
    return running is not None and _same_build_id(recorded, running)


KERNEL_MAP = b"[kernel.kallsyms]"  # the kernel MMAP's name, before perf's reference symbol


class KernelSymbols:
    """Where one run's kernel names come from (DESIGN.md decision 6, SEMANTICS §10.6): only a
    kallsyms of the recording's kernel, placed where that kernel was. Chosen and loaded on the
    first kernel address, when the recording's build ids and kernel map are known:

    * `--kallsyms FILE`, trusted;
    * a recording without a kernel build id: the sysroot's /proc/kallsyms, with a warning;
    * the sysroot's /proc/kallsyms when the kernel whose notes sit beside it (the running
      kernel's /sys/kernel/notes, or the sysroot's copy) has the recording's build id;
    * perf's build-id cache copy, `D/[kernel.kallsyms]/<id>/kallsyms` over the debug paths;
    * a sysroot's /proc/kallsyms without notes beside it: a copy put there for upstream's
      default path, trusted as the recording machine's (the sysroot is that machine's root);
    * else nothing: kernel frames stay unnamed, as upstream leaves a kallsyms miss, and one
      warning names both build ids and the fix. perf does the same (`[unknown]`).

    Like perf with its reference relocation symbol, the file's core kernel addresses are
    moved by the difference between its `_text` (the symbol the kernel MMAP names) and the
    address the recording gave it (the MMAP's pgoff): another boot's KASLR offset. Module
    symbols are not moved: perf places them by the modules' own MMAPs as the file has them."""

    def __init__(self, writer, kallsyms: str | None, sysroot: str, debug_paths: list[str],
                 worker: KallsymsWorker | None = None, own: OwnCopy | None = None) -> None:
        self._writer = writer
        self._own = own  # the run's own copy of the running kernel's kallsyms
        self._explicit = kallsyms
        self._sysroot = sysroot
        self._debug_paths = debug_paths
        self._worker = worker
        self.recorded_id: bytes | None = None  # the recording's kernel build id
        self._reference: tuple[bytes, int] | None = None  # (symbol, recorded address)
        self._core = (0, 0)  # the kernel MMAP's range: the addresses relocated
        self._table = None  # Kallsyms | RecordedKallsyms once loaded; False: none
        self._delta = 0  # file address - recorded address
        # the running kernel's /proc/kallsyms (a KernelSymbols of it), when the table is perf's
        # build-id cache copy of that kernel's (_image_copy): it names what is not the image's
        self._live: KernelSymbols | None = None
        self._unnamed_because: str | None = None

    @property
    def unnamed_because(self) -> str | None:
        """Why kernel frames have no names, when the reason is known: "other kernel" (no
        kallsyms of the recording's), "hidden" (kptr_restrict zeroed every address),
        "unreadable" (another kallsyms error); the live /proc/kallsyms's reason when the
        image's names come from perf's copy."""
        if self._unnamed_because is None and self._live is not None:
            return self._live.unnamed_because
        return self._unnamed_because

    def build_ids(self, entries) -> None:
        """The recording's HEADER_BUILD_ID entries (pid, id, filename)."""
        for _pid, bid, filename in entries:
            if filename == KERNEL_MAP:
                self.recorded_id = bid
                return

    def kernel_mmap(self, filename: bytes, start: int, end: int, pgoff: int,
                    build_id: bytes | None = None) -> None:
        """A kernel MMAP: `[kernel.kallsyms]<symbol>` gives that symbol's address as its pgoff
        (0 when kptr_restrict hid it at record time: nothing to relocate by). An MMAP2 of
        `perf record --buildid-mmap` names the kernel's build id, which such a recording's
        header (it has no build-id table) does not."""
        if not filename.startswith(KERNEL_MAP):
            return  # a module
        self._core = (start, end)
        if build_id and self.recorded_id is None:
            self.recorded_id = build_id
        symbol = filename[len(KERNEL_MAP):]
        if symbol and pgoff:
            self._reference = (symbol, pgoff)

    def lookup(self, ip: int) -> tuple[int, str, str] | None:
        """(symbol start, name, module or "") of a kernel address, None without a name."""
        table = self._table
        if table is None:
            table = self._table = self._load()
        if table is False:
            return None
        lo, hi = self._core
        inside = lo <= ip < hi
        delta = self._delta if inside else 0
        live = self._live
        if live is not None and not (inside and table.in_image(ip + delta)):
            return live.lookup(ip)
        hit = table.lookup(ip + delta)
        if hit is None or not hit[1]:
            return None
        return (hit[0] - delta, hit[1], hit[2]) if delta else hit

    def choose(self, notes_file: str = NOTES) -> tuple[str | None, str | None]:
        """(The kallsyms file to read or None, a warning or None) by the rules above;
        `notes_file`: the running kernel's notes (a sysroot has its own beside its /proc)."""
        proc = _named_path(self._explicit, self._sysroot)
        if self._explicit is not None:
            return proc, None
        recorded = self.recorded_id
        if recorded is None:
            return proc, (f"the recording names no kernel build-id: kernel symbols are read from "
                          f"{proc}, which is right only if it is the recording machine's, "
                          "from the boot that recorded")
        host = self._sysroot in ("", "/")
        notes = notes_file if host else self._sysroot + NOTES
        running, why = running_build_id(notes)
        if running is not None and _same_build_id(recorded, running):
            return proc, None
        cached = Kallsyms.cached_path(self._debug_paths, recorded)
        if cached:
            return cached, None
        if running is None and not host and probes.exists(proc):
            return proc, None
        theirs = f"build-id {running.hex()}" if running is not None else f"no known one ({why})"
        which = "the running kernel" if host else f"the kernel of the sysroot {self._sysroot}"
        return None, (f"kernel frames stay unnamed: the recording's kernel has build-id "
                      f"{recorded.hex()}, {which} has {theirs}, and perf's build-id cache "
                      "under the debug paths has no kallsyms of the recording's. To name them, "
                      "copy /proc/kallsyms from the recording machine (same boot) and pass it "
                      "with --kallsyms")

    def _image_copy(self, path: str | None, warning: str | None) -> str | None:
        """perf's build-id cache copy of the running kernel's kallsyms (else the run's own
        copy, OwnCopy), to name the kernel image's own symbols by instead of `path` (chosen:
        /proc/kallsyms), else None.

        The copy may be of another boot, but the image's symbols and their distances are the
        build's: moved by `_text` as any file is, they name each address as /proc/kallsyms
        would, and a file read costs a fraction of /proc/kallsyms, whose every line the kernel
        formats (~50 ms for 120 k lines). What a boot adds around the image (modules, BPF
        programs, trampolines) is named from /proc/kallsyms, read then (`lookup`)."""
        # /proc/kallsyms without a warning: the recording names the running kernel's build id
        if (warning is None and self._explicit is None and self._sysroot in ("", "/")
                and self._reference is not None and path == _named_path(None, self._sysroot)):
            return _running_copy(self.recorded_id, self._debug_paths, self._own)
        return None

    def _load(self):
        """The table of the chosen file (with its relocation set), else False."""
        path, warning = self.choose()
        copy = self._image_copy(path, warning)
        table = self._copy_table(copy) if copy is not None else None
        if table is not None:
            live = self._live = KernelSymbols(self._writer, path, self._sysroot,
                                              self._debug_paths)
            live.recorded_id, live._reference, live._core = (
                self.recorded_id, self._reference, self._core)
            return table
        # no usable copy: /proc/kallsyms names every address
        worker = self._worker
        self._worker = None
        if worker is not None and worker.path != path:
            worker.close()  # it parsed another file: end it, not waiting for its table
            worker = None
        if warning:
            self._warn(warning)
        if path is None:
            self._unnamed_because = "other kernel"
            return False
        try:
            # perf's build-id cache copy of the recording's kernel (`perf archive`'s, from
            # another machine) is the kernel's text as a copy of the running one's is
            copied = path != _named_path(self._explicit, self._sysroot)
            table = Kallsyms.load(path, worker, self._own, in_place=copied)
        except KallsymsError as err:
            self._unnamed_because = "hidden" if str(err) == EMPTY_MAPPING else "unreadable"
            message = f'Failed to parse kernel symbol mapping file "{path}": {err}'
            print(f"PerfUnwind::InvalidKallsyms: {message}", file=sys.stderr)
            self._writer.error(3, message)
            return False
        if self._reference is not None:
            delta = self._delta_of(table)
            if delta is None:
                self._warn(f"{path} has no {self._reference[0].decode('utf-8', 'replace')} "
                           "symbol: its addresses cannot be moved to where the recording's "
                           "kernel was (KASLR, another boot) and are used as they are")
            else:
                self._delta = delta
        return table

    def _delta_of(self, table) -> int | None:
        """File address - recorded address of the reference symbol, None if `table` lacks it."""
        symbol, recorded = self._reference
        at = table.address_of(symbol)
        return None if at is None else at - recorded

    def _copy_table(self, copy: str):
        """The table of the build-id cache copy `copy` with its relocation set, else None (it
        cannot be read, or has not the reference symbol to move it by): no notice, as
        /proc/kallsyms is read instead."""
        worker = self._worker
        if worker is not None and worker.path != copy:
            return None  # it parsed /proc/kallsyms: that table names every address
        self._worker = None
        try:
            table = Kallsyms.load(copy, worker, in_place=True)
            delta = self._delta_of(table)
        except KallsymsError:
            delta = None
        own = self._own if self._own is not None and copy == self._own.path else None
        if delta is None:
            if own is not None:
                own.discard()
            return None
        if own is not None:
            own.used()
        self._delta = delta
        return table

    def _warn(self, message: str) -> None:
        """Once per notice, on stderr and to hotspot (as an InvalidKallsyms error)."""
        print(f"perfparser: {message}", file=sys.stderr)
        self._writer.error(3, message)
