"""Input sources (CLI.md §4): a regular file (mmapped), a perf.data directory, stdin, or a TCP
connection.

Streams are read sequentially with bounded memory; file-format data arriving on a stream is
spooled to a temporary file first (SEMANTICS §2.7) and then read like a file.
"""

from __future__ import annotations

import mmap
import os
import stat
import sys
import time

from . import probes
from .perfdata.errors import (
    BUFFERING_ERROR,
    CANNOT_OPEN,
    DATA_ERROR,
    TCP_SOCKET_ERROR,
    PerfDataError,
)
from .tuples import TYPE_CHECKING

if TYPE_CHECKING:
    import socket
    from typing import BinaryIO

_CHUNK = 1 << 20
_CONNECT_DELAYS_MS = [2 << k for k in range(11)]  # 2, 4, ... 2048


class Source:
    """Sequential reads; file sources also expose the whole content as one memoryview."""

    is_stream: bool = False

    def read(self, n: int) -> bytes | memoryview:
        """Up to n bytes; fewer only at end of input."""
        raise NotImplementedError

    def buffer(self) -> memoryview:
        raise NotImplementedError

    def release(self, upto: int) -> None:
        """The bytes before offset `upto` are mostly done with (hint, never required)."""

    def spool(self, prefix: bytes) -> Source:
        raise NotImplementedError

    def parts(self) -> list[Source]:
        """The other files of the perf.data directory whose `data` this is (FileSource)."""
        return []

    def close(self) -> None:
        pass


class FileSource(Source):
    def __init__(self, fileobj: BinaryIO) -> None:
        self._file = fileobj
        self.name = getattr(fileobj, "name", "")
        size = os.fstat(fileobj.fileno()).st_size
        if size:
            self._map = mmap.mmap(fileobj.fileno(), 0, access=mmap.ACCESS_READ)
            self._view = memoryview(self._map)
        else:
            self._map = None
            self._view = memoryview(b"")
        self._pos = 0
        self._released = 0
        self._parts: list[FileSource] | None = None

    def release(self, upto: int) -> None:
        # Mapped file pages count in our RSS once touched, so a multi-GB recording would
        # otherwise grow RSS to its size. Dropping them is always safe: a later access (a stack
        # still queued for unwinding) faults the page back in from the page cache.
        upto -= upto % mmap.PAGESIZE
        if self._map is not None and upto > self._released:
            self._map.madvise(mmap.MADV_DONTNEED, self._released, upto - self._released)
            self._released = upto

    def read(self, n: int) -> memoryview:
        start = self._pos
        self._pos = min(start + n, len(self._view))
        return self._view[start:self._pos]

    def buffer(self) -> memoryview:
        return self._view

    @property
    def size(self) -> int:
        """Bytes of recording behind this source."""
        return len(self.buffer())

    def spool(self, prefix: bytes) -> Source:
        return self

    def part_paths(self) -> list[str]:
        """The files of a perf.data directory (`perf record --threads`, perf's data.c) that
        hold its records, when this file is its `data` (header, features, the records perf
        synthesized): the regular files named data.* beside it, as perf takes them, in the
        order of their numbers, which decides between records of equal time."""
        def order(name: str) -> tuple[int, int, str]:
            suffix = name[5:]
            return (0, int(suffix), name) if suffix.isdigit() else (1, 0, name)

        if not isinstance(self.name, str):
            return []  # a temporary file (spooled stream): nothing beside it
        folder = os.path.dirname(self.name) or "."
        try:
            names = sorted((n for n in probes.listdir(folder) if n.startswith("data.")),
                           key=order)
        except OSError as exc:
            raise PerfDataError(f"Failed to read directory {folder}: {exc.strerror}",
                                CANNOT_OPEN) from None
        return [p for p in (os.path.join(folder, n) for n in names) if probes.isfile(p)]

    def parts(self) -> list[FileSource]:
        """Sources of part_paths(), opened once."""
        if self._parts is None:
            self._parts = [FileSource(_open(p)) for p in self.part_paths()]
        return self._parts

    def close(self) -> None:
        # memoryviews handed out (samples' stacks) may outlive us; the mmap goes with them
        self._file.close()
        for p in self._parts or ():
            p.close()


class DirectorySource(FileSource):
    """A perf.data directory (`perf record --threads`) opened through its file `data`: its
    size counts the data.N files too."""

    @property
    def size(self) -> int:
        return len(self.buffer()) + sum(probes.stat(p).st_size for p in self.part_paths())


class StreamSource(Source):
    is_stream = True

    def __init__(self, fileobj: BinaryIO, sock: socket.socket | None = None) -> None:
        self._file = fileobj
        self._sock = sock  # kept alive behind its makefile(); its errors are exit code 1
        self._error_code = TCP_SOCKET_ERROR if sock is not None else DATA_ERROR

    def read(self, n: int) -> bytes:
        try:
            return self._read(n)
        except OSError as exc:
            raise PerfDataError(f"Error while reading the input: {exc}", self._error_code) from None

    def _read(self, n: int) -> bytes:
        data = self._file.read(n)
        if data is None or len(data) == n:
            return data or b""
        parts = [data]
        got = len(data)
        while got < n:  # raw pipes/sockets may return short reads before EOF
            more = self._file.read(n - got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def spool(self, prefix: bytes) -> Source:
        print("Reading a non-pipe perf.data from a stream requires buffering.", file=sys.stderr)
        import tempfile  # only here: its import costs every run a few ms

        try:
            tmp = tempfile.TemporaryFile(prefix="perfparser-")
            tmp.write(prefix)
            while chunk := self._file.read(_CHUNK):
                tmp.write(chunk)
            tmp.flush()
            tmp.seek(0)
            return FileSource(tmp)
        except (OSError, ValueError) as exc:
            raise PerfDataError(f"Failed to buffer the input to a temporary file: {exc}",
                                BUFFERING_ERROR) from None

    def close(self) -> None:
        self._file.close()
        if self._sock is not None:
            self._sock.close()


def _connect(host: str, port: int) -> socket.socket:
    import socket  # only here: its import costs every run a few ms

    delays = iter(_CONNECT_DELAYS_MS)
    while True:
        try:
            return socket.create_connection((host, port))
        except OSError as exc:
            delay = next(delays, None)
            if delay is None:
                raise PerfDataError(f"Cannot connect to {host}:{port}: {exc}",
                                    TCP_SOCKET_ERROR) from None
            time.sleep(delay / 1000)


def _permission_hint(path: str, exc: OSError) -> str:
    """perf record run as root writes perf.data 0600 and root-owned: say how to read it."""
    if not isinstance(exc, PermissionError):
        return ""
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return ""
    if owner != 0 or os.geteuid() == 0:
        return ""
    return (f" (it belongs to root, as perf record run as root leaves it: "
            f"sudo chown $USER {path})")


def _open(path: str) -> BinaryIO:
    try:
        f = open(path, "rb")  # noqa: SIM115 - owned by the Source
        probes.opened(path, f)
        return f
    except OSError as exc:
        raise PerfDataError(f"Failed to open file {path}: {exc.strerror}"
                            f"{_permission_hint(path, exc)}", CANNOT_OPEN) from None


def open_source(input_path: str | None, host: str | None, port: int) -> Source:
    """--input FILE or DIRECTORY, else --host/--port, else stdin."""
    if input_path is not None:
        if probes.isdir(input_path):
            return DirectorySource(_open(os.path.join(input_path, "data")))
        f = _open(input_path)
        return FileSource(f) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else StreamSource(f)
    if host is not None:
        sock = _connect(host, port)
        return StreamSource(sock.makefile("rb"), sock=sock)
    return StreamSource(os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=_CHUNK))
