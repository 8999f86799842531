"""The persistent cache (DESIGN decision 4): per-image results kept between runs.

One file per ELF image under `$XDG_CACHE_HOME/perfparser-py/` (default `~/.cache/...`),
named by a hash of everything the results depend on: the main file and the attached debug
file (real path, size, inode, mtime, ctime), the build id, and the version of the code that
computed them.
A file holds one `marshal`led dict (plain ints, bytes, str, tuples, lists, dicts only), lz4
compressed, behind a header with a magic, the format version, a CRC of the compressed body
and the full key. Anything that does not check out is a miss, never an error: an entry that is not a regular
file (a link, a FIFO) or is too large, a record whose values are not of the shapes the code
writes. The directory is created 0700 and refused, with one warning, when another user owns
it or others may write it.

Writers replace files atomically (write a unique temporary file, then rename), so concurrent
runs see either the old or the new content. After saving, the oldest files (by mtime, which
a hit refreshes) are removed until the directory is under its size bound.
Turned off by `--no-cache` or `PERFPARSER_NO_CACHE` (any value but empty or "0").
"""

from __future__ import annotations

import marshal
import os
import stat
import struct
import sys
import zlib
from collections.abc import Mapping
from itertools import chain
from operator import itemgetter

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
REPLAY_SUFFIX = ".ppr"  # replay.py's entries, in the same directory and bound
# kernel/symbols.py's copies of the running kernel's kallsyms (OwnCopy), there too
KALLSYMS_SUFFIX = ".ppk"
_OWN = (_SUFFIX, REPLAY_SUFFIX, KALLSYMS_SUFFIX)
MAX_ENTRY = 64 << 20  # the largest entry read back (docs/robustness.md), and decompressed:
# marshal loads a 1-byte None or True as an 8-byte pointer, so what an entry decodes to may
# take 9 times its size; 64 MB stays under 600 MB (4766 real entries decoded to 80 KB at most)
MAX_DECODED = 64 << 20
# modules whose code decides what a record holds: an image's (symbols, names, lines,
# scopes) or a kallsyms file's
_CODE = ("elf/image.py", "elf/constants.py", "elf/compressed.py", "elf/symtab.py",
         "elf/dwarf/__init__.py", "elf/dwarf/constants.py", "elf/dwarf/units.py",
         "elf/dwarf/dies.py", "elf/dwarf/ranges.py", "elf/dwarf/lines.py", "elf/dwarf/scopes.py",
         "elf/dwarf/info.py", "elf/dwarf/split.py", "elf/dwarf/supplement.py", "elf/leb128.py",
         "demangle.py", "demangle_fallback.py", "kernel/kallsyms.py", "cache.py")


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
        self._trusted: bool | None = None  # usable(), decided on first use

    def usable(self) -> bool:
        """Whether the directory may be read and written: ours, and writable by nobody else
        (anyone who can write it decides what our symbols say). Missing: created 0700."""
        if self._trusted is None:
            self._trusted = _check_directory(self.root)
        return self._trusted

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
            data = _load(path, key) if self.usable() else {}
            rec = self._records[key] = CacheRecord(path, key, data)
        return rec

    def save(self) -> None:
        """Write every changed record, then trim the directory to its bound. Never raises
        for file-system trouble: the cache is an optimisation."""
        from . import demangle

        wrote = False
        if not self.usable() or demangle.approximate():
            return
        for rec in self._records.values():
            if rec.dirty:
                wrote |= _store(self.root, rec)
                rec.dirty = False
        if wrote:
            self.trim()

    def keep(self, path: str, data: bytes) -> None:
        """Write `data` as the file `path` of this directory (atomically), then trim the
        directory to its bound; nothing when it cannot be written."""
        if self.usable() and _write_atomically(self.root, path, data):
            self.trim()

    def trim(self) -> None:
        """Remove the least recently used files until the total is at most max_bytes."""
        entries = []
        try:
            with os.scandir(self.root) as it:
                for e in it:
                    if e.name.endswith(_OWN) or e.name.startswith(".tmp"):
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


def _check_directory(root: str) -> bool:
    """usable() of `root`, creating it (mode 0700, whatever the umask) when missing; one
    warning when it exists but is refused."""
    try:
        os.makedirs(root, mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return False  # cannot be created (read-only home...): no cache, quietly as before
    else:
        try:
            os.chmod(root, 0o700)  # makedirs' mode is filtered by the umask
        except OSError:
            return False
    try:
        st = os.stat(root)
    except OSError:
        return False
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "not a directory"
    elif st.st_uid != os.geteuid():
        problem = "owned by another user"
    elif st.st_mode & 0o022:
        problem = f"writable by others (mode {stat.S_IMODE(st.st_mode):o}; chmod 700 to use it)"
    if problem is None:
        return True
    print(f"perfparser: warning: the cache directory {root} is {problem}: not used",
          file=sys.stderr)
    return False


def _rows_of(rows: list, types: tuple[set, ...]) -> bool:
    """Whether every row is a tuple of len(types) whose i-th item's type is in types[i]
    (checked column by column in C: a warm run's records have 10^4-10^5 rows)."""
    if not set(map(type, rows)) <= {tuple} or not set(map(len, rows)) <= {len(types)}:
        return False
    return all(set(map(type, map(itemgetter(i), rows))) <= t for i, t in enumerate(types))


_NONE = type(None)
_INT = {int}
# dwarf._pack_scope: name, entry_pc, decl_file, decl_line, decl_column, call_file, call_line,
# call_column, die_offset
_SCOPE = ({str, _NONE}, {int, _NONE}, {bytes, _NONE}, _INT, _INT, {bytes, _NONE}, _INT, _INT,
          _INT)


def _answers(v, check) -> bool:
    """An int-keyed dict of answers, None or what `check` accepts (a list of the others)."""
    return type(v) is dict and set(map(type, v)) <= _INT and check(
        [a for a in v.values() if a is not None])  # (not filter(None): () is falsy too)


def _lines(rows: list) -> bool:  # (file, line, column)
    return _rows_of(rows, ({bytes}, _INT, _INT))


def _scopes(rows: list) -> bool:  # (subprogram, inlined scopes)
    if not _rows_of(rows, ({tuple}, {tuple})):
        return False
    scopes = [*map(itemgetter(0), rows), *chain.from_iterable(map(itemgetter(1), rows))]
    return _rows_of(scopes, _SCOPE)


def _lookups(rows: list) -> bool:  # kallsyms (start, name, module)
    return _rows_of(rows, (_INT, {str}, {str}))


def _symbols(v) -> bool:
    """An elf.symtab SymbolTable: three int lists of one length and the strings."""
    return (type(v) is tuple and len(v) == 4 and all(type(x) is list for x in v[:3])
            and len(v[0]) == len(v[1]) == len(v[2]) and type(v[3]) is bytes
            and all(set(map(type, x)) <= _INT for x in v[:3]))


# What each key of a record holds, as the modules that use it write it (elf/image.py,
# elf/dwarf/info.py, kernel/kallsyms.py): a record with anything else is a miss, never an
# error later.
_SHAPES = {
    "symbols": _symbols,
    "dwarf": lambda v: type(v) is bool,
    "lines": lambda v: _answers(v, _lines),
    "scopes": lambda v: _answers(v, _scopes),
    "parsed": lambda v: type(v) is bool,
    "lookups": lambda v: _answers(v, _lookups),
    # kallsyms addresses -> whether they are the kernel image's (Kallsyms.in_image)
    "image": lambda v: (type(v) is dict and set(map(type, v)) <= _INT
                        and set(map(type, v.values())) <= {bool}),
}


# a kallsyms record's "address of <symbol>" keys (kernel.kallsyms.RecordedKallsyms.address_of):
# the address or None
ADDRESS_OF = "address of "


def _shape(key: str):
    if key.startswith(ADDRESS_OF):
        return lambda v: v is None or type(v) is int
    return _SHAPES.get(key)


def valid_record(data) -> bool:
    """Whether `data` (a loaded record) has only the keys and value shapes of _SHAPES."""
    return type(data) is dict and all(
        type(k) is str and (check := _shape(k)) is not None and check(v)
        for k, v in data.items())


def _load(path: str, key: bytes) -> dict:
    """The dict stored for `key` at `path`; empty if absent, stale or corrupt."""
    # the cache's own files are never links, FIFOs or devices, nor larger than it may grow
    raw = read_regular(path, MAX_ENTRY, follow=False)
    if raw is None:
        return {}
    import lz4.block  # not before: a cold run's lookups find no file (~0.8 ms a process)
    try:
        magic, fmt, crc, klen = _HEAD.unpack_from(raw)
        start = _HEAD.size + klen
        if (magic != _MAGIC or fmt != FORMAT or raw[_HEAD.size:start] != key
                or zlib.crc32(raw[start:]) != crc):
            return {}
        # lz4's block header: the decompressed size, allocated up front
        if int.from_bytes(raw[start:start + 4], "little") > MAX_DECODED:
            return {}
        data = marshal.loads(lz4.block.decompress(raw[start:]))
    except (struct.error, ValueError, EOFError, TypeError, MemoryError, lz4.block.LZ4BlockError):
        return {}
    if not valid_record(data):
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
    return _write_atomically(root, rec.path, blob)


def _write_atomically(root: str, path: str, blob: bytes) -> bool:
    """Write `blob` as `path` through a unique temporary file in `root`: concurrent runs see
    the old content or the new; False if it could not be written."""
    tmp = os.path.join(root, f".tmp{os.getpid()}.{os.urandom(6).hex()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False
    return True
