"""Where one run's kernel names come from: the kallsyms of the recording's kernel, chosen by
its build id, and its addresses moved to where that kernel was (`KernelSymbols`)."""

from __future__ import annotations

import sys

from .. import probes
from ..elf.vdso import RUNNING_KERNEL as NOTES
from ..tuples import TYPE_CHECKING
from .kallsyms import EMPTY_MAPPING, Kallsyms, KallsymsError

if TYPE_CHECKING:
    from .worker import KallsymsWorker


def likely_path(kallsyms: str | None, sysroot: str) -> str:
    """The kallsyms file a run will most likely read, known before the recording is:
    `--kallsyms`, else the sysroot's /proc/kallsyms, which is what a recording of the running
    kernel reads (the common case; the run's own choice is KernelSymbols.choose)."""
    # the default sysroot "/" would make it "//proc/kallsyms" in every message naming it
    return sysroot.rstrip("/") + "/proc/kallsyms" if kallsyms is None else kallsyms


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
                 worker: KallsymsWorker | None = None) -> None:
        self._writer = writer
        self._explicit = kallsyms
        self._sysroot = sysroot
        self._debug_paths = debug_paths
        self._worker = worker
        self.recorded_id: bytes | None = None  # the recording's kernel build id
        self._reference: tuple[bytes, int] | None = None  # (symbol, recorded address)
        self._core = (0, 0)  # the kernel MMAP's range: the addresses relocated
        self._table = None  # Kallsyms | RecordedKallsyms once loaded; False: none
        self._delta = 0  # file address - recorded address
        # why kernel frames have no names, when the reason is known: "other kernel" (no
        # kallsyms of the recording's), "hidden" (kptr_restrict zeroed every address),
        # "unreadable" (another kallsyms error)
        self.unnamed_because: str | None = None

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
        delta = self._delta if lo <= ip < hi else 0
        hit = table.lookup(ip + delta)
        if hit is None or not hit[1]:
            return None
        return (hit[0] - delta, hit[1], hit[2]) if delta else hit

    def of_running_kernel(self, recorded: bytes | None, notes_file: str = NOTES) -> bool:
        """Whether a recording whose kernel build id is `recorded` (None: it names none) is
        taken to be of this machine's running kernel: no sysroot and no `--kallsyms`, and
        that id is the running one's or, as `choose` takes /proc/kallsyms then, none."""
        if self._explicit is not None or self._sysroot not in ("", "/"):
            return False
        if recorded is None:
            return True
        running = running_build_id(notes_file)[0]
        return running is not None and _same_build_id(recorded, running)

    def choose(self, notes_file: str = NOTES) -> tuple[str | None, str | None]:
        """(The kallsyms file to read or None, a warning or None) by the rules above;
        `notes_file`: the running kernel's notes (a sysroot has its own beside its /proc)."""
        proc = likely_path(self._explicit, self._sysroot)
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

    def _load(self):
        """The table of the chosen file (with its relocation set), else False."""
        path, warning = self.choose()
        worker = self._worker
        self._worker = None
        if worker is not None and worker.path != path:
            worker.close()  # it parsed another file: end it, not waiting for its table
            worker = None
        if warning:
            self._warn(warning)
        if path is None:
            self.unnamed_because = "other kernel"
            return False
        try:
            table = Kallsyms.load(path, worker)
        except KallsymsError as err:
            self.unnamed_because = "hidden" if str(err) == EMPTY_MAPPING else "unreadable"
            message = f'Failed to parse kernel symbol mapping file "{path}": {err}'
            print(f"PerfUnwind::InvalidKallsyms: {message}", file=sys.stderr)
            self._writer.error(3, message)
            return False
        if self._reference is not None:
            symbol, recorded = self._reference
            at = table.address_of(symbol)
            if at is None:
                self._warn(f"{path} has no {symbol.decode('utf-8', 'replace')} symbol: its "
                           "addresses cannot be moved to where the recording's kernel was "
                           "(KASLR, another boot) and are used as they are")
            else:
                self._delta = at - recorded
        return table

    def _warn(self, message: str) -> None:
        """Once per notice, on stderr and to hotspot (as an InvalidKallsyms error)."""
        print(f"perfparser: {message}", file=sys.stderr)
        self._writer.error(3, message)
