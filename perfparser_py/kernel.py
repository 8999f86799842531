"""Kernel symbols from a kallsyms file (SEMANTICS §10.6), plain or gzip-compressed."""

from __future__ import annotations

import bisect
import gzip
import os
import sys
import zlib
from array import array


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


def _regular(lines: list[bytes]) -> array | None:
    """Addresses of `lines` if every one is `<16 hex> <type> <name>...`, else None.

    This is what /proc/kallsyms and perf's copies hold. The first 20 bytes of all lines are
    joined once and checked column by column with strided slices, which is several times
    cheaper than splitting every line.
    """
    n = len(lines)
    heads = b"".join([line[:20] for line in lines])
    if len(heads) != 20 * n or heads[16::20].count(b" ") != n or heads[18::20].count(b" ") != n:
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
    addrs = array("Q", raw)
    if addrs.itemsize != 8:
        return None
    if sys.byteorder == "little":
        addrs.byteswap()
    return addrs


class Kallsyms:
    """Sorted kernel symbol table: address -> (name, module), lines decoded on lookup."""

    def __init__(self, addrs: list[int], lines: list[bytes]) -> None:
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
    def load(path: str) -> Kallsyms | RecordedKallsyms:
        """Parse `path`; raises KallsymsError with upstream's message on failure."""
        try:
            with open(path, "rb") as f:
                data = f.read()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
        except OSError as e:
            raise KallsymsError(e.strerror or str(e)) from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise KallsymsError(f"corrupt gzip data: {e}") from None
        from .cache import current

        cache = current()
        if cache is None:
            return Kallsyms.parse(data)
        # the persistent cache keeps the answers per content: a warm run parses nothing
        import hashlib

        rec = cache.record("kallsyms", hashlib.sha256(data).hexdigest())
        table = None
        if rec.data.get("parsed") is not True:
            table = Kallsyms.parse(data)  # raises for a bad file: nothing is recorded
            rec.data["parsed"] = True
            rec.dirty = True
        return RecordedKallsyms(rec, data, table)

    @staticmethod
    def parse(data: bytes) -> Kallsyms:
        """The table of a kallsyms text; raises KallsymsError with upstream's message."""
        addrs: list[int] | None = None
        if b"\r" not in data:
            lines = data.split(b"\n")
            if lines and not lines[-1]:
                lines.pop()
            regular = _regular(lines) if lines else None
            if regular is not None:
                addrs = regular.tolist()
        if addrs is None:
            lines, addrs = Kallsyms._parse_irregular(data)
        ordered = sorted(addrs)
        if ordered != addrs:
            order = sorted(range(len(addrs)), key=addrs.__getitem__)
            lines = [lines[i] for i in order]
        # address 0 (kptr_restrict, "(null)") is dropped
        first = bisect.bisect_right(ordered, 0)
        if first == len(ordered):
            raise KallsymsError("Mapping is empty.")
        if first:
            del ordered[:first], lines[:first]
        return Kallsyms(ordered, lines)

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

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """(symbol start, name, module or "") of the last symbol at or below `addr`."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        fields, module = _split_line(self._lines[i])
        return (self._addrs[i],
                b" ".join(fields[2:]).decode("utf-8", "surrogateescape"),
                module.strip().decode("utf-8", "surrogateescape"))


class RecordedKallsyms:
    """Lookups answered from a persistent cache record of this kallsyms content; the text
    is parsed on the first address the record does not know."""

    def __init__(self, rec, data: bytes, table: Kallsyms | None) -> None:
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

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """As Kallsyms.lookup."""
        try:
            return self._hits[addr]
        except KeyError:
            pass
        hit = self._hits[addr] = self._parsed().lookup(addr)
        self._rec.dirty = True
        return hit
