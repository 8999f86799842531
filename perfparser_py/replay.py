"""The replay cache: a run's whole stream, given again while nothing it depends on changed.

hotspot users open the same recording again and again (after a restart, to compare, from the
recent-files list), and CI pipelines re-read the same file: without this, each open unwinds
and symbolizes everything anew. A run that ends well leaves its stream, what it printed on
stderr and its exit code under the persistent cache's directory (cache.py), named by a hash
of what selects it: the command line (every option but --output), the protocol flavour
chosen, the working directory, the user, whether stderr is a terminal and the environment
variables the run reads. Beside them it keeps what the run found on the file system
(probes.py): the input, every ELF and debug file and search directory, the paths looked for
and not found, the kallsyms and JIT maps, and the files of the code that ran (modules and
shared libraries). The next run with the same selection replays the stream only if every one
of them still looks the same; otherwise it runs, and stores anew.

Turned off with the persistent cache (--no-cache, PERFPARSER_NO_CACHE), or alone by
PERFPARSER_NO_REPLAY (any value but empty or "0").
Not stored: a run that reads stdin or a socket, asks debuginfod (a server's answers change),
failed, demangled C++ names approximately (cache.py's rule), saw a file modified within a
second of its start (a change within the file system's timestamp granularity would not
show), or wrote more than a quarter of the cache's bound. A damaged entry is a miss, never an
error.
The file: the stream, then the key, the marshalled dependencies and stderr, and a trailer
with their lengths and CRCs (the stream is written while it is produced, into a temporary
file the end renames, so it costs no memory).
"""

from __future__ import annotations

import marshal
import os
import struct
import sys
import zlib

from . import probes
from .cache import REPLAY_SUFFIX, PersistentCache, blake2b

FORMAT = 1
_MAGIC = b"PPYREPLY"
# magic, format, key length, meta length, stream length, crc of stream, crc of key + meta
_TRAILER = struct.Struct("<8sIIIQII")
MAX_STREAM = 256 << 20  # the largest entry read back; a run stores at most a quarter of
# the cache's bound (PERFPARSER_CACHE_MAX_MB), so one entry never evicts all the others
_MAX_META = 64 << 20
_RECENT_NS = 1_000_000_000
# environment variables a run reads that change what it writes (options aside)
_ENVIRONMENT = ("HOME", "TMPDIR", "PERFPARSER_PROTOCOL", "PERFPARSER_PY_PURE")


def _selection(options, cwd: str) -> bytes | None:
    """What selects a stored run (see the module docstring), None for a run never stored."""
    env = os.environ
    if (options.input is None or options.host is not None or options.print_stats
            or env.get("DEBUGINFOD_URLS", "").strip()
            or env.get("PERFPARSER_NO_REPLAY", "") not in ("", "0")):
        return None
    stderr = sys.stderr
    # the program: the same options run by another script (a wrapper), or with other module
    # paths, are another run
    parts = [str(FORMAT), os.path.realpath(sys.argv[0]) if sys.argv else "", *sys.path, cwd,
             str(os.geteuid()),
             str(stderr is not None and stderr.isatty()), ":".join(options.debug_paths()),
             *(f"{name}={getattr(options, name)!r}" for name in sorted(type(options).__annotations__)
               if name not in ("output", "no_cache")),
             *(f"{name}={env.get(name)!r}" for name in _ENVIRONMENT)]
    if getattr(sys, "frozen", False):  # the executable holds the code (see _code)
        parts.append(probes.identity_of(os.stat(sys.executable)))
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def _entry_path(root: str, key: bytes) -> str:
    return os.path.join(root, blake2b(key, digest_size=20).hexdigest() + REPLAY_SUFFIX)


def _root(options):
    """The persistent cache when it may be used, else None."""
    cache = PersistentCache.from_env(not options.no_cache)
    return cache if cache is not None and cache.usable() else None


def replayed(options, out) -> int | None:
    """Write the stored run for `options` to `out` (and its stderr), returning its exit code;
    None when there is none that still holds."""
    try:
        key = _selection(options, os.getcwd())
    except OSError:
        return None
    if key is None:
        return None
    cache = _root(options)
    if cache is None:
        return None
    path = _entry_path(cache.root, key)
    entry = _read(path, key)
    if entry is None:
        return None
    stream, seen, err, code = entry
    if not probes.unchanged(seen):
        return None
    out.write(stream)
    out.flush()
    if err and sys.stderr is not None:
        sys.stderr.write(err.decode("utf-8", "replace"))  # what _ErrTee encoded
        sys.stderr.flush()
    try:
        os.utime(path)  # recently used: kept longest by trim()
    except OSError:
        pass
    return code


def _read(path: str, key: bytes):
    """(stream, dependencies, stderr bytes, exit code) stored at `path` for `key`, or None."""
    from .regular import open_regular

    f = open_regular(path, follow=False, max_size=MAX_STREAM + _MAX_META)
    if f is None:
        return None
    try:
        with f:
            data = f.read()
        magic, fmt, klen, mlen, slen, scrc, mcrc = _TRAILER.unpack_from(
            data, len(data) - _TRAILER.size)
        if (magic != _MAGIC or fmt != FORMAT or slen + klen + mlen + _TRAILER.size != len(data)
                or data[slen:slen + klen] != key):
            return None
        meta = memoryview(data)[slen + klen:slen + klen + mlen]
        if zlib.crc32(meta, zlib.crc32(key)) != mcrc:
            return None
        stream = memoryview(data)[:slen]
        if zlib.crc32(stream) != scrc:
            return None
        seen, err, code = marshal.loads(meta)
    except (OSError, struct.error, ValueError, EOFError, TypeError):
        return None
    if not (type(seen) is dict and type(err) is bytes and type(code) is int
            and all(type(k) is str and k and type(v) in (str, bytes, type(None))
                    for k, v in seen.items())):
        return None
    return stream, seen, err, code


class _StreamTee:
    """The run's output: what is written goes to `out` and into the entry being made."""

    def __init__(self, out, fd: int, limit: int) -> None:
        self.out = out
        self.fd = fd
        self.limit = limit
        self.size = 0
        self.crc = 0
        self.whole = True  # every byte went to the entry too

    def write(self, data) -> int:
        n = self.out.write(data)
        written = data if n is None or n == len(data) else memoryview(data)[:n]
        if self.whole:
            self.size += len(written)
            self.crc = zlib.crc32(written, self.crc)
            try:
                if self.size > self.limit:
                    raise OSError("too large")
                view = memoryview(written)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                self.whole = False
        return n

    def flush(self) -> None:
        self.out.flush()


class _ErrTee:
    """sys.stderr during a recorded run: text goes to the terminal or pipe as before and, as
    bytes, to a file the run's forked processes share (their sys.stderr is this too)."""

    def __init__(self, err, fd: int) -> None:
        self.err = err
        self.fd = fd

    def write(self, text: str) -> int:
        n = self.err.write(text)
        try:
            os.write(self.fd, text.encode("utf-8", "backslashreplace"))
        except OSError:
            pass
        return n

    def flush(self) -> None:
        self.err.flush()

    def isatty(self) -> bool:
        return self.err.isatty()

    def fileno(self) -> int:
        return self.err.fileno()


class Recorder:
    """Makes the entry of one run: start() before it, store() after it."""

    def __init__(self, options, out) -> None:
        self.out = out  # what the run writes to: the tee once started
        self._key: bytes | None = None
        self._cache = None
        self._tmp: str | None = None
        self._err_fd = -1
        self._stderr = None
        self._tee: _StreamTee | None = None
        try:
            self._key = _selection(options, os.getcwd())
        except OSError:
            return
        if self._key is None or sys.stderr is None:
            return
        cache = _root(options)
        if cache is None:
            return
        import time

        self._started = time.time_ns()
        tmp = os.path.join(cache.root, f".tmp{os.getpid()}.{os.urandom(6).hex()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return
        self._cache, self._tmp = cache, tmp
        self._tee = self.out = _StreamTee(out, fd, min(MAX_STREAM, cache.max_bytes // 4))
        self._err_fd = os.memfd_create("perfparser-stderr", os.MFD_CLOEXEC)
        self._stderr, sys.stderr = sys.stderr, _ErrTee(sys.stderr, self._err_fd)
        probes.start()

    def store(self, code: int) -> None:
        """End the recording; keep the entry when the run may be replayed (module docstring)."""
        if self._tee is None:
            return
        from . import demangle

        sys.stderr = self._stderr
        seen = probes.taken()
        tee = self._tee
        try:
            if (code == 0 and tee.whole and not demangle.approximate()
                    and not probes.recent(seen, self._started - _RECENT_NS)):
                err = os.pread(self._err_fd, _MAX_META, 0)
                meta = marshal.dumps((seen, err, code))
                trailer = _TRAILER.pack(_MAGIC, FORMAT, len(self._key), len(meta), tee.size,
                                        tee.crc, zlib.crc32(meta, zlib.crc32(self._key)))
                os.write(tee.fd, self._key + meta + trailer)
                os.close(tee.fd)
                tee.fd = -1
                os.replace(self._tmp, _entry_path(self._cache.root, self._key))
                self._tmp = None
                self._cache.trim()
        except (OSError, ValueError):  # the cache is an optimisation
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Drop an entry not stored (a run that raised)."""
        if self._tee is None:
            return
        if sys.stderr is not self._stderr and self._stderr is not None:
            sys.stderr = self._stderr
            probes.taken()
        for fd in (self._tee.fd, self._err_fd):
            if fd >= 0:
                os.close(fd)
        self._tee.fd = self._err_fd = -1
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None
        self._tee = None
