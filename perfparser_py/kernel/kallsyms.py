"""A kallsyms file (SEMANTICS §10.6), plain or gzip-compressed, read and parsed: the sorted
table of its symbols (`Kallsyms`), looked up by address or name, and its answers kept in the
persistent cache (`RecordedKallsyms`)."""

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

from ..regular import open_regular

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
    def load(path: str, worker=None) -> Kallsyms | RecordedKallsyms:
        """Parse `path` (or take `worker`'s table of it: a worker.KallsymsWorker, not imported
        here, as it imports this module); raises KallsymsError with upstream's message on
        failure."""
        done = worker.table(path) if worker is not None else None
        if done is None:
            data, identity = read(path)
            key, table = None, None
        else:
            data = identity = None
            key, table = done
        from ..cache import current

        cache = current()
        if cache is None:
            return Kallsyms.parse(data) if table is None else table
        # the persistent cache keeps the answers per content: a warm run parses nothing
        if key is None:
            key = cache_key(data, identity)
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


def read(path: str) -> tuple[bytes, str | None]:
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
            from ..cache import stat_identity

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


def cache_key(data: bytes, identity: str | None) -> str:
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
        from ..cache import ADDRESS_OF  # loaded already: this record came from it

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
