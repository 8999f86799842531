"""Kernel symbols from a kallsyms file (SEMANTICS §10.6), plain or gzip-compressed."""

from __future__ import annotations

import bisect
import os
import stat
import struct
import sys
import zlib
from array import array
from itertools import accumulate, islice
from operator import itemgetter, le

from .regular import open_regular

# A kallsyms file (a kernel's has 10-20 MB) is read up to this size, decompressed too
MAX_KALLSYMS = 256 << 20
# upstream's error text for a kallsyms without one non-zero address: what a file read without
# the right to see kernel addresses (kptr_restrict) gives
EMPTY_MAPPING = "Mapping is empty."


class KallsymsError(Exception):
    """The kallsyms file cannot be used; the message is upstream's text."""


def _split_line(line: bytes) -> tuple[list[bytes], bytes]:
    """The whitespace fields before the first TAB and the module text after it."""
    main, _, module = line.partition(b"\t")
    return main.split(), module


def _address(token: bytes) -> int:
    if token == b"(null)":
        return 0
    try:
        return int(token, 16)
    except ValueError:
        raise KallsymsError("Invalid address: " + token.decode("utf-8", "replace")) from None


_HEAD = itemgetter(slice(0, 20))
_CHUNK = 1 << 16  # bytes of text split into lines at a time


def _regular(data: bytes) -> tuple[array, array] | None:
    """(Addresses, start offset of each line and one past the last) of `data` if it is not
    empty and every line is `<16 hex> <type> <name>...`, else None.

    This is what /proc/kallsyms and perf's copies hold. ~64 KiB of lines at a time, the
    first 20 bytes of the lines are joined once and checked column by column with strided
    slices, which is several times cheaper than splitting every line; and each chunk's
    per-line objects reuse the memory of the one before (the whole text at once touched
    ~35 MB more: 9 k page faults, ~15 ms of a 120 k-line parse).
    """
    addrs = array("Q")
    starts = array("Q", [0])
    if addrs.itemsize != 8 or not data:
        return None
    pos = 0
    while pos < len(data):
        cut = data.find(b"\n", pos + _CHUNK)
        cut = len(data) if cut < 0 else cut + 1
        lines = data[pos:cut].split(b"\n")
        if not lines[-1]:
            lines.pop()
        n = len(lines)
        heads = b"".join(map(_HEAD, lines))
        if (len(heads) != 20 * n or heads[16::20].count(b" ") != n
                or heads[18::20].count(b" ") != n):
            return None
        for col in (heads[17::20], heads[19::20]):
            if col.split() != [col]:
                return None
        digits = bytearray(16 * n)
        for k in range(16):
            digits[k::16] = heads[k::20]
        try:
            raw = bytes.fromhex(digits.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            return None
        if len(raw) != 8 * n:  # fromhex skips whitespace: a short result had some
            return None
        addrs.frombytes(raw)
        starts.extend(islice(accumulate(map((1).__add__, map(len, lines)), initial=starts[-1]),
                             1, None))
        pos = cut
    if sys.byteorder == "little":
        addrs.byteswap()
    return addrs, starts


class Kallsyms:
    """Sorted kernel symbol table: address -> (name, module), lines decoded on lookup."""

    def __init__(self, addrs: list[int] | array, lines: list[bytes] | _Lines) -> None:
        self._addrs = addrs  # ascending; equal addresses keep file order
        self._lines = lines  # the raw line of each entry

    def __len__(self) -> int:
        return len(self._addrs)

    @staticmethod
    def cached_path(debug_paths: list[str], build_id: bytes) -> str | None:
        """First `D/[kernel.kallsyms]/<hex id>/kallsyms` (perf's build-id cache) that exists."""
        for d in debug_paths:
            cand = os.path.join(d, "[kernel.kallsyms]", build_id.hex(), "kallsyms")
            if d and os.path.isfile(cand):
                return cand
        return None

    @staticmethod
    def load(path: str, worker: KallsymsWorker | None = None) -> Kallsyms | RecordedKallsyms:
        """Parse `path` (or take `worker`'s table of it); raises KallsymsError with upstream's
        message on failure."""
        done = worker.table(path) if worker is not None else None
        if done is None:
            data, identity = _read(path)
            key, table = None, None
        else:
            data = identity = None
            key, table = done
        from .cache import current

        cache = current()
        if cache is None:
            return Kallsyms.parse(data) if table is None else table
        # the persistent cache keeps the answers per content: a warm run parses nothing
        if key is None:
            key = _cache_key(data, identity)
        rec = cache.record("kallsyms", key)
        if rec.data.get("parsed") is not True:
            if table is None:
                table = Kallsyms.parse(data)  # raises for a bad file: nothing is recorded
            rec.data["parsed"] = True
            rec.dirty = True
        return RecordedKallsyms(rec, data, table)

    @staticmethod
    def parse(data: bytes) -> Kallsyms:
        """The table of a kallsyms text; raises KallsymsError with upstream's message."""
        return Kallsyms(*Kallsyms._sorted(data))

    @staticmethod
    def _sorted(data: bytes) -> tuple[list[int] | array, list[bytes] | _Lines]:
        """(Ascending addresses, their lines) of a kallsyms text; raises KallsymsError. The
        lines are a `_Lines` view of `data` when they are its lines in file order."""
        regular = _regular(data) if b"\r" not in data else None
        if regular is not None:
            addrs, starts = regular
            # the usual case, ascending without address 0: the text is the table as it is
            if addrs[0] and all(map(le, addrs, islice(addrs, 1, None))):
                return addrs, _Lines(data, 0, starts)
            lines = data.split(b"\n")
            if not lines[-1]:
                lines.pop()
            addrs = addrs.tolist()
        else:
            lines, addrs = Kallsyms._parse_irregular(data)
        ordered = sorted(addrs)
        if ordered != addrs:
            order = sorted(range(len(addrs)), key=addrs.__getitem__)
            lines = [lines[i] for i in order]
        # address 0 (kptr_restrict, "(null)") is dropped
        first = bisect.bisect_right(ordered, 0)
        if first == len(ordered):
            raise KallsymsError(EMPTY_MAPPING)
        if first:
            del ordered[:first], lines[:first]
        return ordered, lines

    @staticmethod
    def _parse_irregular(data: bytes) -> tuple[list[bytes], list[int]]:
        """Line by line: blank and short lines skipped, any bad address is an error."""
        lines: list[bytes] = []
        addrs: list[int] = []
        for line in data.splitlines():
            fields, _ = _split_line(line)
            if not fields:
                continue
            addr = _address(fields[0])
            if addr and len(fields) >= 3:
                lines.append(line)
                addrs.append(addr)
        return lines, addrs

    @staticmethod
    def write_table(f, data: bytes) -> None:
        """The table of kallsyms text `data` as `from_buffer` reads it (count, addresses,
        line offsets, lines); raises KallsymsError."""
        addrs, lines = Kallsyms._sorted(data)
        f.write(_TABLE_HEAD.pack(len(addrs)))
        f.write(addrs if type(addrs) is array else array("Q", addrs))
        if type(lines) is _Lines:
            f.write(lines._starts)
            f.write(lines._buf)
        else:
            f.write(array("Q", accumulate(map((1).__add__, map(len, lines)), initial=0)))
            f.write(b"\n".join(lines))

    @staticmethod
    def from_buffer(buf) -> Kallsyms:
        """The table `write_table` wrote into `buf` (an mmap), used in place: no line is split or
        address converted until a lookup reads it."""
        (n,) = _TABLE_HEAD.unpack_from(buf)
        view = memoryview(buf)
        at = _TABLE_HEAD.size
        addrs = view[at:at + 8 * n].cast("Q")
        starts = view[at + 8 * n:at + 16 * n + 8].cast("Q")
        return Kallsyms(addrs, _Lines(buf, at + 16 * n + 8, starts))  # type: ignore[arg-type]

    def address_of(self, name: bytes) -> int | None:
        """The address of the core-kernel symbol `name` (a line without module), else None."""
        lines = self._lines
        if type(lines) is _Lines:
            return _symbol_address(lines._buf, lines._base, name)
        return _symbol_address(b"\n".join(lines) + b"\n", 0, name)

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """(symbol start, name, module or "") of the last symbol at or below `addr`."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        fields, module = _split_line(self._lines[i])
        return (self._addrs[i],
                b" ".join(fields[2:]).decode("utf-8", "surrogateescape"),
                module.strip().decode("utf-8", "surrogateescape"))


_TABLE_HEAD = struct.Struct("=Q")


def _symbol_address(text, start: int, name: bytes) -> int | None:
    """The address on the first line `<address> <type> <name>` of the lines in text[start:]
    (bytes or an mmap), else None: a search for the name, not a parse of every line."""
    needle = b" " + name + b"\n"
    end = len(text)
    at = text.find(needle, start)
    while True:
        if at < 0:  # the last line may have no newline
            at = end - len(needle) + 1
            if at < start or text[at:end] != needle[:-1]:
                return None
        line_at = text.rfind(b"\n", start, at) + 1 or start
        fields = text[line_at:at + len(needle)].split()
        if len(fields) == 3 and fields[2] == name:
            try:
                return int(fields[0], 16) or None
            except ValueError:
                pass
        if at + len(needle) > end:
            return None
        at = text.find(needle, at + 1)


class _Lines:
    """Line i of the text in `buf` from `base`, as bytes: `starts` holds the offset of each
    line and one past the last (a `Kallsyms.write_table` table, or a text as it is)."""

    __slots__ = ("_buf", "_base", "_starts")

    def __init__(self, buf, base: int, starts: memoryview | array) -> None:
        self._buf = buf
        self._base = base
        self._starts = starts

    def __getitem__(self, i: int) -> bytes:
        base, starts = self._base, self._starts
        return self._buf[base + starts[i]:base + starts[i + 1] - 1]


def _read(path: str) -> tuple[bytes, str | None]:
    """(The text of a kallsyms file, gunzipped; the file's identity (cache.file_identity)
    when it is a regular file of the size that was read, else None); KallsymsError with
    upstream's message. /proc/kallsyms has no identity: its size reads 0 and a module load
    changes its content."""
    f = open_regular(path, max_size=MAX_KALLSYMS)
    if f is None:
        try:
            st = os.stat(path)
        except OSError as e:
            raise KallsymsError(e.strerror or str(e)) from None
        if not stat.S_ISREG(st.st_mode):
            return b"", None  # a FIFO, a device (/dev/null): never read, nothing in it
        raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB"
                            if st.st_size > MAX_KALLSYMS else "cannot be opened")
    try:
        with f:
            data = f.read(MAX_KALLSYMS + 1)
            st = os.fstat(f.fileno())
        if len(data) > MAX_KALLSYMS:
            raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB")
        identity = None
        if st.st_size == len(data):
            from .cache import stat_identity

            identity = stat_identity(os.path.realpath(path), st)
        if data[:2] == b"\x1f\x8b":
            # a gzipped copy: bounded like a plain one (wbits 31: the gzip format)
            inflater = zlib.decompressobj(31)
            data = inflater.decompress(data, MAX_KALLSYMS + 1)
            if len(data) > MAX_KALLSYMS:
                raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB when decompressed")
            if not inflater.eof:
                raise KallsymsError("corrupt gzip data: truncated")
    except OSError as e:
        raise KallsymsError(e.strerror or str(e)) from None
    except zlib.error as e:
        raise KallsymsError(f"corrupt gzip data: {e}") from None
    return data, identity


def _cache_key(data: bytes, identity: str | None) -> str:
    """The persistent cache's key of a kallsyms text: the identity of the file that held it
    where it has one (perf's build-id cache copy: nothing to hash), else its SHA-256."""
    if identity is not None:
        return "file:" + identity
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


class RecordedKallsyms:
    """Lookups answered from a persistent cache record of this kallsyms content; the text
    is parsed on the first address the record does not know."""

    def __init__(self, rec, data: bytes | None, table: Kallsyms | None) -> None:
        self._rec = rec
        self._data = data
        self._table = table
        hits = rec.data.get("lookups")
        if type(hits) is not dict:
            hits = rec.data["lookups"] = {}
        self._hits: dict[int, tuple[int, str, str] | None] = hits

    def _parsed(self) -> Kallsyms:
        if self._table is None:
            self._table = Kallsyms.parse(self._data)
        return self._table

    def __len__(self) -> int:
        return len(self._parsed())

    def address_of(self, name: bytes) -> int | None:
        """As Kallsyms.address_of, kept in the record like the lookups."""
        from .cache import ADDRESS_OF  # loaded already: this record came from it

        key = ADDRESS_OF + name.decode("utf-8", "surrogateescape")
        try:
            return self._rec.data[key]
        except KeyError:
            pass
        addr = self._rec.data[key] = self._parsed().address_of(name)
        self._rec.dirty = True
        return addr

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """As Kallsyms.lookup."""
        try:
            return self._hits[addr]
        except KeyError:
            pass
        hit = self._hits[addr] = self._parsed().lookup(addr)
        self._rec.dirty = True
        return hit


def likely_path(kallsyms: str | None, sysroot: str) -> str:
    """The kallsyms file a run will most likely read, known before the recording is:
    `--kallsyms`, else the sysroot's /proc/kallsyms, which is what a recording of the running
    kernel reads (the common case; the run's own choice is KernelSymbols.choose)."""
    # the default sysroot "/" would make it "//proc/kallsyms" in every message naming it
    return sysroot.rstrip("/") + "/proc/kallsyms" if kallsyms is None else kallsyms


def running_build_id(notes_file: str) -> tuple[bytes | None, str]:
    """(The GNU build id in a kernel's ELF notes file (/sys/kernel/notes), else None; why
    there is none)."""
    from .elf.notes import gnu_build_id

    try:
        with open(notes_file, "rb") as f:
            notes = f.read()
    except OSError as e:
        return None, f"{notes_file}: {e.strerror or e}"
    bid = gnu_build_id(notes, 0, len(notes), "=")
    return bid, "" if bid else f"{notes_file} holds no GNU build-id note"


def _same_build_id(recorded: bytes, running: bytes) -> bool:
    # HEADER_BUILD_ID always holds 20 bytes: a shorter id comes zero-padded
    return recorded.rstrip(b"\0") == running.rstrip(b"\0")


KERNEL_MAP = b"[kernel.kallsyms]"  # the kernel MMAP's name, before perf's reference symbol
NOTES = "/sys/kernel/notes"


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
        if running is None and not host and os.path.exists(proc):
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


class KallsymsWorker:
    """A forked process that reads and parses the kallsyms file a run will most likely use
    (`likely_path`) while the run imports its modules and reads the recording: the parse
    (~40 ms for 120 k lines) otherwise sits in front of the first kernel frame. Forked at
    start-up, while this process is small (every page this one has then counts in the
    worker's RSS too). Not niced: on a busy machine this process would wait for it. The table
    comes back in a memfd this process maps and uses in place. If the run settles on another
    file, or anything goes wrong with the worker, `table` says None and the caller reads the
    file itself, as without a worker."""

    _open: list[KallsymsWorker] = []  # workers whose descriptors a later fork must not keep
    _fork_hook = False  # _forget_all registered

    def __init__(self, path: str, pid: int, replies: int, memfd: int) -> None:
        self.path = path
        self._pid = pid
        self._replies = replies
        self._memfd = memfd

    @staticmethod
    def start(path: str) -> KallsymsWorker | None:
        """A worker parsing `path`, or None without two CPUs, fork or memfd."""
        from . import cpus

        if cpus.usable() < 2 or not hasattr(os, "memfd_create"):
            return None
        fds: list[int] = []
        try:
            fds.append(os.memfd_create("perfparser-kallsyms", os.MFD_CLOEXEC))
            fds.extend(os.pipe())
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        memfd, replies, to_parent = fds
        if pid == 0:  # never returns: the worker's only way out is _exit
            try:
                os.close(replies)
                _serve(path, to_parent, memfd)
            finally:
                os._exit(0)
        os.close(to_parent)
        if not KallsymsWorker._fork_hook:
            os.register_at_fork(after_in_child=KallsymsWorker._forget_all)
            KallsymsWorker._fork_hook = True
        worker = KallsymsWorker(path, pid, replies, memfd)
        KallsymsWorker._open.append(worker)
        return worker

    def table(self, path: str) -> tuple[str, Kallsyms] | None:
        """(persistent cache key, table) of `path` once the worker has it; None if it parses
        another file or cannot answer. Raises KallsymsError for a file it could not use."""
        if path != self.path or self._replies < 0:
            return None
        try:
            reply = _read_to_end(self._replies)
            if reply[:1] == b"E":
                raise KallsymsError(reply[1:].decode("utf-8", "surrogateescape"))
            if reply[:1] != b"T":
                return None
            import mmap

            buf = mmap.mmap(self._memfd, 0, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return None
        finally:
            self.close()
        return reply[1:].decode("utf-8", "surrogateescape"), Kallsyms.from_buffer(buf)

    def close(self) -> None:
        """End the worker wherever it is and release its descriptors."""
        if self._pid > 0:
            import signal

            try:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            except OSError:
                pass
            self._pid = 0
        self._forget()
        if self in KallsymsWorker._open:
            KallsymsWorker._open.remove(self)

    def _forget(self) -> None:
        for fd in (self._replies, self._memfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._replies = self._memfd = -1

    @staticmethod
    def _forget_all() -> None:
        """In a freshly forked child: the workers belong to the parent."""
        for worker in KallsymsWorker._open:
            worker._pid = 0
            worker._forget()
        KallsymsWorker._open.clear()


def _read_to_end(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _serve(path: str, to_parent: int, memfd: int) -> None:
    """The worker: put the table of `path` into `memfd`, then say how it went."""
    for fd in (0, 1):  # nothing to read; and a parent that dies leaves no stdout open here
        try:
            os.close(fd)
        except OSError:
            pass
    from .cpus import lower_helper_priority

    lower_helper_priority()
    try:
        data, identity = _read(path)
        key: list[str] = []
        hashing = None
        if identity is None:  # a content hash releases the GIL: it runs beside the parse
            import threading

            hashing = threading.Thread(target=lambda: key.append(_cache_key(data, None)))
            hashing.start()
        with open(memfd, "wb", closefd=False) as f:
            Kallsyms.write_table(f, data)
        if hashing is None:
            key.append(_cache_key(data, identity))
        else:
            hashing.join()
        reply = b"T" + key[0].encode("utf-8", "surrogateescape")
    except KallsymsError as err:
        reply = b"E" + str(err).encode("utf-8", "surrogateescape")
    except Exception:  # noqa: BLE001 - whatever it is, the parent reads the file itself
        reply = b"F"
    while reply:  # the exit that follows ends the stream
        reply = reply[os.write(to_parent, reply):]
