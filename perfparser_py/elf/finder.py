"""Finding the local ELF file for a recorded path, and its separate debug file (§9).

`ElfFinder` resolves a recorded mmap path to a local file through the perf build-id cache,
a full recursive search of `--app` and each `--extra` directory, and finally the sysroot;
candidates whose GNU build id differs from the recorded one are rejected. It attaches the
separate debug file (`.build-id/xx/yyyy.debug`, `.gnu_debuglink` with CRC/build-id check,
and as the last resort debuginfod, which also supplies a missing main file) when the image
is first read, and keeps one `ElfImage` per real file, shared by every recorded path that
resolves to it.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable

from .. import probes
from ..regular import open_regular
from ..tuples import TYPE_CHECKING
from .compressed import reset_inflate_budget
from .constants import EM_386, EM_X86_64
from .image import ElfImage, warn_once
from .notes import build_id_paths
from .vdso import VDSO_NAME, own_vdso

if TYPE_CHECKING:
    from .debuginfod import DebuginfodClient

# Bounds for walking a user-given search directory (someone may pass their home directory).
_MAX_WALK_ENTRIES = 500_000
# Largest .gnu_debuglink candidate whose whole-file CRC is computed (docs/robustness.md).
MAX_DEBUGLINK_CRC = 4 << 30


def normalize_path(path: str) -> str:
    """Absolute, lexically normalized path (no symlink resolution, no leading `//`)."""
    norm = os.path.normpath(os.path.join(os.getcwd(), path))
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


# perf's names in the build-id table for the compat vDSOs of a 64-bit kernel, by the
# (64-bit, e_machine) of the process's files: i386, x32
_VDSO_NAMES: dict[tuple[bool, int] | None, tuple[bytes, ...]] = {
    (False, EM_386): (b"[vdso32]",), (False, EM_X86_64): (b"[vdsox32]",)}


def build_id_matches(recorded: bytes, actual: bytes | None) -> bool:
    """True if a file's build id equals the recorded one (any length).

    perf stores ids in a 20-byte field; a shorter id may arrive zero-padded.
    """
    if actual is None:
        return False
    if actual == recorded:
        return True
    n = len(actual)
    return len(recorded) == 20 and n < 20 and recorded[:n] == actual and not any(recorded[n:])


def file_crc32(path: str, max_size: int = MAX_DEBUGLINK_CRC) -> int | None:
    """CRC-32 of a file as used by .gnu_debuglink; None if unreadable, not a regular file or
    larger than `max_size` (a huge sparse file would cost a minute of reading)."""
    f = open_regular(path, max_size=max_size)
    if f is None:
        return None
    crc = 0
    try:
        with f:
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc


class _DirIndex:
    """Basename -> files in search order for one directory tree, built once on first use.

    Order: a directory's own files before its subdirectories, subdirectories depth-first in
    case-insensitive name order, each canonical directory visited once (symlink loops).
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._index: dict[str, list[str]] | None = None

    def candidates(self, name: str) -> list[str]:
        if self._index is None:
            self._index = self._build()
        return self._index.get(name, [])

    def _build(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        visited: set[str] = set()
        budget = _MAX_WALK_ENTRIES
        stack = [self.root]
        while stack:
            d = stack.pop()
            real = os.path.realpath(d)
            if real in visited:
                continue
            visited.add(real)
            try:
                entries = probes.scandir(d)
            except OSError:
                continue
            budget -= len(entries)
            if budget < 0:
                warn_once(self.root, "too many files below this search path; search truncated")
                break
            subdirs = []
            for e in entries:
                try:
                    if e.is_dir():
                        subdirs.append(e)
                    elif e.is_file():
                        index.setdefault(e.name, []).append(e.path)
                except OSError:
                    continue
            subdirs.sort(key=lambda e: e.name.lower())
            stack.extend(e.path for e in reversed(subdirs))
        return index


def _view(proc: str) -> tuple[int, ...]:
    """The mount namespace and root directory of a /proc/PID (their device and inode).
    Through probes, which keep no /proc path for the replay cache: a stream made with a
    process's files is right for good (they have its recorded build id or inode), and a
    process gone does not come back."""
    ns, root = probes.stat(proc + "/ns/mnt"), probes.stat(proc + "/root")
    return ns.st_dev, ns.st_ino, root.st_dev, root.st_ino


class ElfFinder:
    """Maps recorded paths to local ELF images (§9.1) with debug files attached (§9.2)."""

    def __init__(
        self,
        app: str,
        extra: list[str],
        sysroot: str,
        debug_paths: list[str],
        build_ids: dict[bytes, bytes],
        use_cache: bool = False,
    ) -> None:
        self.app = app
        self.extra = [e for e in extra if e]
        self.sysroot = sysroot
        self.debug_paths = [d for d in debug_paths if d]
        self.build_ids = build_ids
        self._indexes = {d: _DirIndex(d) for d in ([app] if app else []) + self.extra}
        reset_inflate_budget()  # one budget of decompressed debug data per run
        self._found: dict[bytes, tuple[str, ElfImage | None]] = {}
        # the other build ids of names the build-id table lists more than once (add_build_ids)
        self._more_ids: dict[bytes, set[bytes]] = {}
        # processes with a view of their own (find): pid -> its _view or None, and what a
        # path is in each such view
        self._views: dict[int, tuple[int, ...] | None] = {}
        self._own_view: tuple[int, ...] | None = None
        self._in_views: dict[tuple[bytes, tuple[int, ...]], tuple[str, ElfImage | None]] = {}
        self._vdsos: dict[tuple[bytes | None, tuple[bool, int] | None],
                          tuple[str | None, ElfImage | None]] = {}
        self._images: dict[tuple[int, int, int, int], ElfImage | None] = {}
        self._handed_out: set[ElfImage] = set()  # images _result gave (their debug search is set)
        self.debuginfod: DebuginfodClient | None = None
        if os.environ.get("DEBUGINFOD_URLS", "").strip():
            # its http/urllib/ssl imports cost ~15 ms of every start-up: only when configured
            from .debuginfod import DebuginfodClient

            self.debuginfod = DebuginfodClient.from_env()
        from ..cache import PersistentCache, set_current

        self.cache: PersistentCache | None = PersistentCache.from_env(use_cache)
        set_current(self.cache)  # kallsyms use it too
        # (module file name, url, bytes so far, total) for each debuginfod transfer step
        self.progress: Callable[[bytes, str, int, int], None] | None = None
        # decompress the debug sections of files with samples in the background (set by the
        # process that symbolizes, after its forks)
        self.prefetch = False
        # whether a recording of this kernel build id (None: none recorded) is of the
        # running kernel (reading.finder_for sets the run's rule): a vDSO without a recorded
        # build id is then our own
        self.of_running_kernel: Callable[[bytes | None], bool] = lambda _bid: False

    # ------------------------------------------------------------ main file

    def add_build_ids(self, listed) -> None:
        """The FEATURES build-id table's (pid, build id, file name) rows. A name listed with
        several ids (a container's library at a path this machine's has too: perf tells
        files apart by device and inode) keeps its last in `build_ids`, which picks the file
        here, and all in `_more_ids`: in a process's own root, a file with any of them is
        the one it mapped."""
        for _pid, bid, name in listed:
            old = self.build_ids.get(name)
            if old and old != bid:
                self._more_ids.setdefault(name, {old}).add(bid)
            self.build_ids[name] = bid

    def _ids(self, recorded_path: bytes) -> set[bytes]:
        """The recorded build ids of a path."""
        first = self.build_ids.get(recorded_path)
        return self._more_ids.get(recorded_path, set()) | ({first} if first else set())

    def find(self, recorded_path: bytes, pid: int | None = None, ino: int = 0
             ) -> tuple[str, ElfImage | None]:
        """(path that is or would be used, image or None) for a recorded mmap path, mapped by
        process `pid` from inode `ino` (None, 0: unknown). A process with a view of its own
        (a container's mount namespace, a chroot) that still runs maps its files as it sees
        them, as perf reads them (its nsinfo): /proc/PID/root/PATH, taken when it is the
        mapped inode or has a recorded build id."""
        view = self._view_of(pid)
        if view is not None:
            key = (recorded_path, view)
            hit = self._in_views.get(key)
            if hit is None:
                hit = self._in_views[key] = (self._in_view(recorded_path, pid, ino)
                                             or self._find_here(recorded_path))
            return hit
        return self._find_here(recorded_path)

    def _find_here(self, recorded_path: bytes) -> tuple[str, ElfImage | None]:
        hit = self._found.get(recorded_path)
        if hit is None:
            hit = self._found[recorded_path] = self._find(recorded_path)
        return hit

    def _view_of(self, pid: int | None) -> tuple[int, ...] | None:
        """What running process `pid` sees as its files, its mount namespace and root
        directory, when that is not what this process sees; None for the same, a process
        gone or not ours to look into, or a run with a sysroot (another machine's
        recording). A pid of another boot or machine may name another process: a file is
        taken from its view only when it is the mapped inode or has a recorded build id."""
        if pid is None or pid <= 0 or self.sysroot not in ("", "/"):
            return None
        view = self._views.get(pid, False)
        if view is False:
            try:
                view = _view(f"/proc/{pid}")
                if self._own_view is None:
                    self._own_view = _view("/proc/self")
                if view == self._own_view:
                    view = None
            except OSError:
                view = None
            self._views[pid] = view
        return view

    def _in_view(self, recorded_path: bytes, pid: int, ino: int) -> tuple[str, ElfImage] | None:
        """The file at `recorded_path` as process `pid` sees it, if it is the mapped inode or
        has a recorded build id (perf's table lists one file of a name: this machine's, when
        both had samples)."""
        path = os.fsdecode(recorded_path)
        cand = f"/proc/{pid}/root{path}"
        image = self._load(cand)
        if image is None or image is self._load(normalize_path(self.sysroot + path)):
            return None  # the file here (a service's private /tmp, a read-only view of /usr)
        if not any(build_id_matches(b, image.build_id) for b in self._ids(recorded_path)):
            try:
                if not ino or probes.stat(cand).st_ino != ino:
                    return None
            except OSError:
                return None
        return self._result(cand, path)

    def _find(self, recorded_path: bytes) -> tuple[str, ElfImage | None]:
        path = os.fsdecode(recorded_path)
        build_id = self.build_ids.get(recorded_path) or None
        if build_id is not None:
            hexid = build_id.hex()
            for d in self.debug_paths:
                base = d.rstrip("/") + "/" + path.lstrip("/") + "/" + hexid
                for cand in (base, base + "/elf"):
                    if probes.isfile(cand):
                        return self._result(cand, path)
        cand = self._search_dirs(os.path.basename(path), build_id)
        if cand is not None:
            return self._result(cand, path)
        cand = normalize_path(self.sysroot + path)
        image = self._load(cand)
        if build_id is None or (image is not None and build_id_matches(build_id, image.build_id)):
            return self._result(cand, path)
        fetched = self._debuginfod(build_id, "executable", path)
        if fetched is not None:
            fetched_image = self._load(fetched)
            if fetched_image is not None and build_id_matches(build_id, fetched_image.build_id):
                return self._result(fetched, path)
        if image is None:
            return self._result(cand, path)
        warn_once(cand, f"build id differs from the recorded one ({build_id.hex()}); ignored")
        return (cand, None)

    def find_vdso(self, build_id: bytes | None, kind: tuple[bool, int] | None = None
                  ) -> tuple[str | None, ElfImage | None]:
        """(local path or None, image or None) for a `[vdso]` mapping whose build id is the
        MMAP2 record's or, without one, HEADER_BUILD_ID's: perf's build-id cache copy
        (`D/[vdso]/<id>/vdso`), else this process's own vDSO when its build id is the same
        (a recording of this boot). Never a vDSO of another build id. A recording that names
        none (pipe mode, `perf record -B`, `--switch-output` files) gets our own when it is
        of the running kernel (`of_running_kernel`), as perf takes its own then.

        `kind`: (64-bit, e_machine) of the process's files, None when unknown. A 32-bit
        process on a 64-bit kernel has the kernel's compat vDSO, which perf lists as
        `[vdso32]` (x32: `[vdsox32]`); a vDSO of another kind is never its."""
        if not build_id:
            names = _VDSO_NAMES.get(kind, ()) + (VDSO_NAME,)
            build_id = next((self.build_ids[n] for n in names if self.build_ids.get(n)), None)
        hit = self._vdsos.get((build_id, kind))
        if hit is None:
            local, image = self._find_vdso(build_id)
            if image is not None and kind is not None and (image.is_64, image.e_machine) != kind:
                local, image = None, None
            hit = self._vdsos[(build_id, kind)] = (local, image)
        return hit

    def _find_vdso(self, build_id: bytes | None) -> tuple[str | None, ElfImage | None]:
        if build_id is None:
            this_boot = self.of_running_kernel(self.build_ids.get(b"[kernel.kallsyms]"))
            data = own_vdso() if this_boot else None
            return (None, None if data is None else ElfImage.from_bytes("[vdso]", data))
        for d in self.debug_paths:
            cand = os.path.join(d, "[vdso]", build_id.hex(), "vdso")
            image = self._load(cand)
            if image is not None and build_id_matches(build_id, image.build_id):
                return self._result(cand, "[vdso]")
        data = own_vdso()
        image = None if data is None else ElfImage.from_bytes("[vdso]", data)
        if image is not None and build_id_matches(build_id, image.build_id):
            return (None, image)
        return (None, None)

    def open_listed(self, build_ids) -> None:
        """Open now the files perf lists in the FEATURES build-id table (the files with
        samples), so that their debug sections decompress while the recording is read, and
        build their symbol tables (the first samples' frames need them; a kernel frame
        may have to wait for the kallsyms worker meanwhile). Not memoized: where a path goes
        is still decided when a mapping names it."""
        for _pid, _bid, filename in build_ids:
            if filename[:1] != b"[":  # [kernel.kallsyms], [vdso]: no file
                image = self._find(filename)[1]
                if image is not None:
                    image.load_symbols()

    def find_kernel_module(self, recorded_path: bytes) -> tuple[str, ElfImage | None]:
        """Local file for a kernel mmap (pid -1): `sysroot + path` if it is an ELF (§7.2)."""
        hit = self._found.get(recorded_path)
        if hit is None:
            path = os.fsdecode(recorded_path)
            hit = self._found[recorded_path] = self._result(self.sysroot + path, path)
        return hit

    def _search_dirs(self, name: str, build_id: bytes | None) -> str | None:
        """First file called `name` in --app, then each --extra (recursive)."""
        if not name:
            return None
        for index in self._indexes.values():
            for cand in index.candidates(name):
                if build_id is None:
                    return cand
                image = self._load(cand)
                if image is not None and build_id_matches(build_id, image.build_id):
                    return cand
        return None

    def _result(self, cand: str, recorded: str) -> tuple[str, ElfImage | None]:
        cand = normalize_path(cand)
        image = self._load(cand)
        if image is not None and image not in self._handed_out:
            self._handed_out.add(image)
            # perf lists the build ids of the files with samples: their DWARF will be read
            listed = self.prefetch and os.fsencode(recorded) in self.build_ids
            image.supplement_search = lambda holder, ref: self.find_supplement(holder, ref,
                                                                              recorded)
            image.split_dirs = tuple(d for d in self._absolute_debug_dirs() if d != "/")
            if recorded[:1] != "[":  # [vdso]: no file
                here = normalize_path(self.sysroot + recorded)
                image.recorded_at = here if here != cand else None
            if listed or self.debuginfod is not None:
                # a download reports its progress in the stream: it stays where it was
                self._attach_debug(image, recorded)
            else:
                # looked for when the image is first read (ElfImage.debug): most files of a
                # system-wide recording never get a sample
                image.debug_search = lambda image: self._attach_debug(image, recorded)
            if listed:
                from .dwarf import prefetch_sections

                prefetch_sections(image)
        return (cand, image)

    def done(self) -> None:
        """The run is over: the debug-file searches still pending go. Each holds this finder,
        which holds its image: a cycle that would keep a run's images and their file
        mappings until a full collection, never in a process that runs main() again after
        gc.freeze() (the fuzzer's, which ran out of address space at ~8 MB a run)."""
        for image in self._handed_out:
            image.debug_search = image.supplement_search = None

    def _attach_debug(self, image: ElfImage, recorded: str) -> None:
        """Look for `image`'s debug file (stripped files keep symbols and DWARF in one) and
        make its persistent cache record."""
        if image.section(".symtab") is None or image.section(".debug_info") is None:
            debug = self.find_debug(image, recorded)
            if debug is not None:
                image.attach_debug(debug)
        if self.cache is not None:
            self._attach_record(image)

    def _attach_record(self, image: ElfImage) -> None:
        """The persistent cache record of `image` with the debug file it uses now."""
        from ..cache import file_identity

        main = file_identity(image.path)
        debug = "-" if image.debug is None else file_identity(image.debug.path)
        if main is not None and debug is not None:
            bid = image.build_id.hex() if image.build_id else "-"
            image.cache = self.cache.record("image", main, bid, debug)

    def save_cache(self) -> None:
        """Write what this run added to the persistent cache."""
        if self.cache is not None:
            self.cache.save()

    def _load(self, path: str) -> ElfImage | None:
        """The one shared image for the real file at `path`."""
        try:
            st = probes.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in a recorded name
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in self._images:
            self._images[key] = ElfImage.open(path)
        return self._images[key]

    # ------------------------------------------------------------ debug file

    def _debug_dirs(self) -> list[str]:
        """Elements of the debug search string `:debug:app:extra:sysroot` (§9.2)."""
        return ["", *self.debug_paths, self.app, *self.extra, self.sysroot]

    def _absolute_debug_dirs(self) -> list[str]:
        """The elements of _debug_dirs that are directories of their own (not relative to
        the file's): where files are looked for by build id."""
        return [d for d in self._debug_dirs() if d.startswith("/")]

    def find_debug(self, image: ElfImage, recorded: str) -> ElfImage | None:
        """The separate debug file for `image`, or None (§9.2)."""
        main_real = os.path.realpath(image.path)
        if image.build_id is not None:
            for path in build_id_paths(image.build_id, self._absolute_debug_dirs()):
                debug = self._open_debug(path, image, main_real)
                if debug is not None:
                    return debug
        main_dir = os.path.dirname(os.path.abspath(image.path))
        link = image.debuglink
        name = link[0] if link else os.path.basename(image.path) + ".debug"
        for d in self._debug_dirs():
            if d == "":
                where = main_dir
            elif d.startswith("/"):
                where = d.rstrip("/") + main_dir
            else:
                where = os.path.join(main_dir, d)
            debug = self._open_debug(os.path.join(where, name), image, main_real)
            if debug is not None:
                return debug
        if link is not None:
            for cand in self._debuglink_fallbacks(name, recorded):
                debug = self._open_debug(cand, image, main_real)
                if debug is not None:
                    return debug
        if os.path.basename(image.path) == "elf":
            # perf's build-id cache keeps the unstripped file next to `elf`.
            debug = self._open_debug(os.path.join(main_dir, "debug"), image, main_real)
            if debug is not None:
                return debug
        # Upstream asks debuginfod before the debuglink fallbacks; local files first is
        # cheaper and finds the same file.
        fetched = self._debuginfod(image.build_id, "debuginfo", recorded)
        return None if fetched is None else self._open_debug(fetched, image, main_real)

    def find_supplement(self, holder: ElfImage, ref: tuple[str, bytes, bool],
                        recorded: str) -> ElfImage | None:
        """The supplementary file `ref` (dwarf/supplement.reference) of the DWARF in
        `holder`: in the debug directories and the sysroot, then from debuginfod by its
        build id."""
        from .dwarf import supplement

        # one image per file: the debug files of a package's programs share theirs
        found = supplement.find(holder, ref, self._absolute_debug_dirs(), self.sysroot,
                                self._load)
        if found is None and ref[2]:
            fetched = self._debuginfod(ref[1], "debuginfo", recorded)
            image = None if fetched is None else self._load(fetched)
            if image is not None and supplement.matches(image, ref[1], True):
                found = image
        return found

    def _debuginfod(self, build_id: bytes | None, kind: str, recorded: str) -> str | None:
        """Path of the file debuginfod has for `build_id`, reporting progress for `recorded`."""
        client = self.debuginfod
        if client is None or not build_id:
            return None
        emit = self.progress
        if emit is None:
            return client.find(build_id, kind)
        module = os.fsencode(os.path.basename(recorded))

        def progress(url: str, numerator: int, denominator: int) -> None:
            emit(module, url, numerator, denominator)

        return client.find(build_id, kind, progress)

    def _debuglink_fallbacks(self, name: str, recorded: str) -> list[str]:
        """Extra places upstream tries for a debuglink name, with the sysroot as root."""
        cands = []
        found = self._search_dirs(name, None)
        if found is not None:
            cands.append(found)
        root = self.sysroot.rstrip("/")
        d = os.path.dirname(recorded)
        d_nousr = d.replace("/usr/", "/")
        for sub in (f"{d}/.debug", f"{recorded}/.debug", f"/usr/lib/debug{d_nousr}",
                    f"/usr/lib/debug/usr{d_nousr}", f"/usr/lib/debug{d}", "/usr/lib/debug",
                    d, recorded):
            cands.append(f"{root}{sub}/{name}")
        return cands

    def _open_debug(self, path: str, image: ElfImage, main_real: str) -> ElfImage | None:
        """Open `path` as the debug file of `image` if it exists and belongs to it."""
        if not probes.isfile(path) or os.path.realpath(path) == main_real:
            return None
        debug = ElfImage.open(path)
        if debug is None:
            return None
        if image.build_id is not None and debug.build_id is not None:
            return debug if build_id_matches(image.build_id, debug.build_id) else None
        if image.debuglink is not None:
            return debug if file_crc32(path) == image.debuglink[1] else None
        return None
