"""The persistent cache (DESIGN decision 4): per-image results kept between runs.

One file per ELF image under `$XDG_CACHE_HOME/perfparser-py/` (default `~/.cache/...`),
named by a hash of everything the results depend on: the main file and the attached debug
file (real path, size, inode, mtime, ctime), the build id, and the version of the code that
computed them.
A file holds one `marshal`led dict (plain ints, bytes, str, tuples, lists, dicts only), lz4
compressed, behind a header with a magic, the format version, a CRC of the compressed body
and the full key. Anything that does not check out is a miss, never an error.

Writers replace files atomically (write a unique temporary file, then rename), so concurrent
runs see either the old or the new content. After saving, the oldest files (by mtime, which
a hit refreshes) are removed until the directory is under its size bound.
Turned off by `--no-cache` or `PERFPARSER_NO_CACHE` (any value but empty or "0").
"""

from __future__ import annotations

import marshal
import os
import struct
import sys
import zlib
from collections.abc import Mapping

from .regular import read_regular

try:  # what hashlib.blake2b is; importing hashlib itself loads OpenSSL (~3 ms of a start)
    from _blake2 import blake2b
except ImportError:  # an interpreter without the builtin module
    from hashlib import blake2b

FORMAT = 1
_MAGIC = b"PPYCACHE"
_HEAD = struct.Struct("<8sIII")  # magic, format, crc32 of the body, key length
DEFAULT_MAX_BYTES = 256 << 20
_SUFFIX = ".ppc"
MAX_ENTRY = 64 << 20  # the largest entry read back (docs/robustness.md)
# modules whose code decides what an image record holds
_CODE = ("elf/image.py", "elf/dwarf.py", "elf/leb128.py", "cache.py")


def _code_version() -> str:
    """Size/mtime of the modules that compute cached results (of the executable when frozen)."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = [str(FORMAT)]
    for rel in _CODE:
        try:
            st = os.stat(os.path.join(here, rel))
        except OSError:  # frozen: no module files, a new build is a new executable
            parts.append(file_identity(sys.executable) or "-")
            break
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def file_identity(path: str) -> str | None:
    """Real path, size, inode, mtime and ctime of a file (a rewrite in place changes ctime,
    a replacement the inode); None if it cannot be stat'ed."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return stat_identity(real, st)


def stat_identity(real_path: str, st: os.stat_result) -> str:
    """file_identity() of the file at `real_path` whose stat is `st`."""
    return f"{real_path}:{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"


_current: PersistentCache | None = None


def current() -> PersistentCache | None:
    """The cache of the run in progress (set by the run's ElfFinder), None when off."""
    return _current


def set_current(cache: PersistentCache | None) -> None:
    global _current
    _current = cache


class CacheRecord:
    """The cached data of one key: `data` is read and extended in place, `dirty` marks
    that it must be written back."""

    __slots__ = ("path", "key", "data", "dirty")

    def __init__(self, path: str, key: bytes, data: dict) -> None:
        self.path = path
        self.key = key
        self.data = data
        self.dirty = False


class PersistentCache:
    """A directory of records, bounded to `max_bytes` in total."""

    def __init__(self, root: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._records: dict[bytes, CacheRecord] = {}
        self._version: str | None = None

    @staticmethod
    def from_env(enabled: bool = True, env: Mapping[str, str] | None = None
                 ) -> PersistentCache | None:
        """The user's cache, or None when turned off (option or PERFPARSER_NO_CACHE)."""
        env = os.environ if env is None else env
        if not enabled or env.get("PERFPARSER_NO_CACHE", "") not in ("", "0"):
            return None
        base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):  # the XDG spec says relative values are to be ignored
            base = os.path.join(os.path.expanduser("~"), ".cache")
        try:
            max_bytes = int(env.get("PERFPARSER_CACHE_MAX_MB", "")) << 20
        except ValueError:
            max_bytes = DEFAULT_MAX_BYTES
        return PersistentCache(os.path.join(base, "perfparser-py"), max_bytes)

    def record(self, *parts: str) -> CacheRecord:
        """The record for a key made of `parts` (loaded from disk if present and valid)."""
        if self._version is None:
            self._version = _code_version()
        key = "\0".join((self._version, *parts)).encode("utf-8", "surrogateescape")
        rec = self._records.get(key)
        if rec is None:
            name = blake2b(key, digest_size=20).hexdigest() + _SUFFIX
            path = os.path.join(self.root, name)
            rec = self._records[key] = CacheRecord(path, key, _load(path, key))
        return rec

    def save(self) -> None:
        """Write every changed record, then trim the directory to its bound. Never raises
        for file-system trouble: the cache is an optimisation."""
        wrote = False
        for rec in self._records.values():
            if rec.dirty:
                wrote |= _store(self.root, rec)
                rec.dirty = False
        if wrote:
            self.trim()

    def trim(self) -> None:
        """Remove the least recently used files until the total is at most max_bytes."""
        entries = []
        try:
            with os.scandir(self.root) as it:
                for e in it:
                    if e.name.endswith(_SUFFIX) or e.name.startswith(".tmp"):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        entries.append((st.st_mtime_ns, st.st_size, e.path))
        except OSError:
            return
        total = sum(e[1] for e in entries)
        entries.sort()
        for _mtime, size, path in entries:
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
            except OSError:
                pass
            total -= size


def _load(path: str, key: bytes) -> dict:
    """The dict stored for `key` at `path`; empty if absent, stale or corrupt."""
    import lz4.block

    # the cache's own files are never links, FIFOs or devices, nor larger than it may grow
    raw = read_regular(path, MAX_ENTRY, follow=False)
    if raw is None:
        return {}
    try:
        magic, fmt, crc, klen = _HEAD.unpack_from(raw)
        start = _HEAD.size + klen
        if (magic != _MAGIC or fmt != FORMAT or raw[_HEAD.size:start] != key
                or zlib.crc32(raw[start:]) != crc):
            return {}
        data = marshal.loads(lz4.block.decompress(raw[start:]))
    except (struct.error, ValueError, EOFError, TypeError, MemoryError, lz4.block.LZ4BlockError):
        return {}
    if not isinstance(data, dict):
        return {}
    try:
        os.utime(path)  # recently used: kept longest by trim()
    except OSError:
        pass
    return data


def _store(root: str, rec: CacheRecord) -> bool:
    """Write `rec` atomically; False if it could not be written."""
    import lz4.block

    try:
        body = lz4.block.compress(marshal.dumps(rec.data))
    except ValueError:  # a value marshal cannot write: keep the old file
        return False
    blob = _HEAD.pack(_MAGIC, FORMAT, zlib.crc32(body), len(rec.key)) + rec.key + body
    tmp = os.path.join(root, f".tmp{os.getpid()}.{os.urandom(6).hex()}")
    try:
        os.makedirs(root, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, rec.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False
    return True
