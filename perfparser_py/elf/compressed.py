"""Compressed sections: SHF_COMPRESSED (zlib, zstd) and GNU .zdebug_ ones, and the xz of
MiniDebugInfo (.gnu_debugdata), decompressed within one budget per run against decompression
bombs; and the prefetch thread that decompresses a file's debug sections ahead of their use.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib

from .constants import SHF_COMPRESSED

# Bounds against decompression bombs in hostile files (docs/robustness.md): one section
# inflates to at most its header's size and _MAX_SECTION; all of a run's sections together
# to at most INFLATE_BASE + INFLATE_RATIO times the compressed bytes (DWARF compresses 3-10x).
_MAX_SECTION = 1 << 30
INFLATE_BASE = 256 << 20
INFLATE_RATIO = 64


class _InflateBudget:
    """What the run's decompressed debug data may still grow by (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.compressed = self.inflated = 0

    def take(self, compressed: int, most: int) -> int:
        """Reserve up to `most` bytes of output for `compressed` bytes of input; the bytes
        granted (fewer than `most` when the budget is short: the caller refuses then)."""
        with self._lock:
            self.compressed += compressed
            granted = max(0, min(most, INFLATE_BASE + INFLATE_RATIO * self.compressed
                                 - self.inflated))
            self.inflated += granted
            return granted

    def give_back(self, unused: int) -> None:
        with self._lock:
            self.inflated -= unused


_budget = _InflateBudget()


def reset_inflate_budget() -> None:
    """A new run starts with the whole budget (ElfFinder, once per run)."""
    global _budget
    _budget = _InflateBudget()


_libdeflate = None  # the deflate module (libdeflate) once looked for; False when not installed


def _zlib_inflate(body: memoryview, usize: int) -> bytes:
    """The first `usize` bytes of a zlib stream. libdeflate inflates a whole buffer of known
    size in one call, with the GIL released once: ~2.5x zlib's speed (libc's .debug_info,
    5.8 MB: 20 -> 8 ms). zlib's decompressobj fills its output in steps and takes the GIL
    back after each, and while the main thread is busy each take waits out its switch
    interval (5 ms): 57 ms for that section on the prefetch thread. Its result is taken
    only when it is complete (all `usize` bytes, never more); an error or a short result
    (damaged or truncated data, where the two libraries may stop at different points) is
    decided by zlib, as before."""
    global _libdeflate
    if _libdeflate is None:
        try:
            import deflate as _libdeflate
        except ImportError:
            _libdeflate = False
    if _libdeflate:
        try:
            data = _libdeflate.zlib_decompress(body, usize)
        except _libdeflate.DeflateError:
            data = b""
        if len(data) == usize:
            return data
    return zlib.decompressobj().decompress(body, usize)


def _inflated(addr: int, name: str, body: memoryview, ctype: int, usize: int
              ) -> tuple[int, bytes | None, str | None]:
    """(addr, the decompressed section or None, warning or None); runs on any thread."""
    if usize > _MAX_SECTION:
        return addr, None, f"section {name} too large when decompressed"
    if ctype not in (1, 2):
        return addr, None, f"section {name}: unknown compression type {ctype}"
    budget = _budget
    if budget.take(len(body), usize) < usize:
        return addr, None, (f"section {name} ({usize} bytes decompressed) exceeds the run's "
                            "decompression budget: ignored")
    data = b""
    try:
        if ctype == 1:
            data = _zlib_inflate(body, usize)
        else:
            import zstandard

            # never more than the header's size, however much the stream holds
            with zstandard.ZstdDecompressor().stream_reader(body, read_across_frames=True) as r:
                data = r.read(usize)
    except Exception as e:  # noqa: BLE001 - zlib.error, MemoryError, zstandard.ZstdError...
        return addr, None, f"section {name}: cannot decompress ({e})"
    finally:
        budget.give_back(usize - len(data))
    return addr, data, None


class Inflation:
    """One section's decompression: run by the prefetch thread or by the first caller of
    result(), whichever claims it first; the other waits for it."""

    __slots__ = ("_args", "_claim", "_owner", "_done", "_value")

    def __init__(self, *args) -> None:
        self._args = args
        self._claim = threading.Lock()  # held by whoever runs the job, never released
        self._owner = 0  # pid of the process that claimed it
        self._done = threading.Event()
        self._value: tuple | None = None

    def run(self) -> None:
        if self._claim.acquire(blocking=False):
            self._owner = os.getpid()
            self._value = _inflated(*self._args)
            self._done.set()  # before the arguments go: a fork in between finds one or the other
            self._args = ()

    def result(self) -> tuple:
        self.run()
        if not self._done.is_set() and self._owner != os.getpid():
            # claimed by the prefetch thread of the process this one was forked from: that
            # thread does not exist here
            return _inflated(*self._args)
        self._done.wait()
        return self._value


_queue = None  # the prefetch thread's job queue, once started (in this process)


def prefetch(job: Inflation, size: int) -> None:
    """Queue `job` for the prefetch thread, started on first use; larger sections first (the
    largest take longest to catch up with when needed)."""
    global _queue
    if _queue is None:
        import queue

        from ..cpus import lower_helper_priority

        _queue = queue.PriorityQueue()
        jobs = _queue

        def work() -> None:
            lower_helper_priority()
            for item in iter(jobs.get, None):
                item[2].run()

        threading.Thread(target=work, name="perfparser-prefetch", daemon=True).start()
    _queue.put((-size, id(job), job))


def _forget_queue() -> None:
    global _queue
    _queue = None  # a forked child has no prefetch thread: it starts its own when needed


os.register_at_fork(after_in_child=_forget_queue)


def header(sec, raw: memoryview, is_64: bool, e: str) -> tuple | None:
    """(sh_addr, section name, compressed body, type, size) of section header `sec` (an
    SHF_COMPRESSED section or a GNU .zdebug_ one) whose contents are `raw`, in an ELF file of
    class `is_64` and struct byte order `e`; None if it is uncompressed or has a damaged
    compression header."""
    if sec.name.startswith(".zdebug_"):
        if bytes(raw[:4]) != b"ZLIB" or len(raw) < 12:
            return None
        (usize,) = struct.unpack_from(">Q", raw, 4)
        return (sec.addr, sec.name, raw[12:], 1, usize)
    if not sec.flags & SHF_COMPRESSED:
        return None
    if is_64:
        if len(raw) < 24:
            return None
        ctype, _res, usize, _align = struct.unpack_from(e + "IIQQ", raw, 0)
        return (sec.addr, sec.name, raw[24:], ctype, usize)
    if len(raw) < 12:
        return None
    ctype, usize, _align = struct.unpack_from(e + "III", raw, 0)
    return (sec.addr, sec.name, raw[12:], ctype, usize)


def unxz(raw: bytes) -> tuple[bytes | None, str | None]:
    """(The decompressed .gnu_debugdata (MiniDebugInfo) of contents `raw` or None, a warning
    or None)."""
    import lzma  # only MiniDebugInfo needs it

    budget = _budget
    # an xz-compressed small ELF (a few times its size): never more than the ratio allows
    most = budget.take(len(raw), min(_MAX_SECTION, max(1 << 20, INFLATE_RATIO * len(raw))))
    data = b""
    try:
        dec = lzma.LZMADecompressor()
        data = dec.decompress(raw, most)
    except lzma.LZMAError as e:
        return None, f".gnu_debugdata: cannot decompress ({e})"
    finally:
        budget.give_back(most - len(data))
    if not dec.eof and len(data) >= most:
        return None, ".gnu_debugdata exceeds the run's decompression budget: ignored"
    return data, None
