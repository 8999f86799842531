"""perf-PID.map files written by JITs (SEMANTICS §10.7), read incrementally."""

from __future__ import annotations

import bisect
import os

from . import probes
from .regular import open_regular

# Bounds for a hostile map (docs/robustness.md): the longest line kept, and how much of one
# file is read at most.
MAX_LINE = 64 << 10
MAX_BYTES = 256 << 20
_CHUNK = 1 << 20


def _hex(token: bytes) -> int | None:
    token = token.strip()
    if token[:2] in (b"0x", b"0X"):
        token = token[2:]
    try:
        return int(token, 16) if token else None
    except ValueError:
        return None


class PerfMap:
    """The symbols of one perf-PID.map; `refresh()` picks up lines appended since last time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._pending = b""
        self._skipping = False  # inside a line longer than MAX_LINE
        self._entries: list[tuple[int, int, str]] = []
        self._starts: list[int] = []
        self.refresh()

    @staticmethod
    def path_for(pid: int, perf_map_path: str | None) -> str | None:
        """The map file for `pid` that exists now: --perf-map-path first, then $TMPDIR."""
        name = f"perf-{pid}.map"
        if perf_map_path:
            cand = os.path.join(perf_map_path, name)
            if probes.isfile(cand):
                return cand
        cand = os.path.join(os.environ.get("TMPDIR") or "/tmp", name)
        return cand if probes.isfile(cand) else None

    def refresh(self) -> None:
        """Read lines appended since the last call (an unterminated last line waits), in
        chunks: a map of gigabytes is never held whole, a line longer than MAX_LINE is
        skipped, and reading stops at MAX_BYTES in all."""
        f = open_regular(self.path)
        if f is None:
            return
        added = False
        try:
            with f:
                f.seek(self._offset)
                while self._offset < MAX_BYTES:
                    chunk = f.read(min(_CHUNK, MAX_BYTES - self._offset))
                    if not chunk:
                        break
                    self._offset += len(chunk)
                    added |= self._add_lines(chunk)
        except OSError:
            pass
        if added:
            self._entries.sort(key=lambda e: e[0])  # stable: a later line wins on equal start
            self._starts = [e[0] for e in self._entries]

    def _add_lines(self, chunk: bytes) -> bool:
        """Parse the complete lines of pending + chunk; whether an entry was added."""
        data = self._pending + chunk
        end = data.rfind(b"\n") + 1
        self._pending = data[end:]
        if self._skipping:  # the rest of an over-long line
            cut = data.find(b"\n") + 1
            if not cut:
                self._pending = b""
                return False
            self._skipping = False
            data = data[cut:]
            end -= cut
        if len(self._pending) > MAX_LINE:
            self._pending, self._skipping = b"", True
        added = False
        for line in data[:end].splitlines():
            fields = line.split(b" ", 2)
            if len(fields) < 3 or len(line) > MAX_LINE:
                continue
            start, length = _hex(fields[0]), _hex(fields[1])
            if start is None or length is None:
                continue
            name = fields[2].strip().decode("utf-8", "surrogateescape")
            self._entries.append((start, length, name))
            added = True
        return added

    def lookup(self, addr: int) -> tuple[int, str] | None:
        """(start, name) of the entry covering `addr`, if any."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start, length, name = self._entries[i]
        return (start, name) if addr < start + length else None
