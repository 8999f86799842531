"""Input sources (CLI.md §4): a regular file (mmapped), stdin, or a TCP connection.

Streams are read sequentially with bounded memory; file-format data arriving on a stream is
spooled to a temporary file first (SEMANTICS §2.7) and then read like a file.
"""

from __future__ import annotations

import mmap
import os
import stat
import sys
import time

from .perfdata.errors import (
    BUFFERING_ERROR,
    CANNOT_OPEN,
    DATA_ERROR,
    TCP_SOCKET_ERROR,
    PerfDataError,
)

TYPE_CHECKING = False  # typing's constant without importing typing: start-up time (tuples.py)
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

    def close(self) -> None:
        pass


class FileSource(Source):
    def __init__(self, fileobj: BinaryIO) -> None:
        self._file = fileobj
        size = os.fstat(fileobj.fileno()).st_size
        if size:
            self._map = mmap.mmap(fileobj.fileno(), 0, access=mmap.ACCESS_READ)
            self._view = memoryview(self._map)
        else:
            self._map = None
            self._view = memoryview(b"")
        self._pos = 0
        self._released = 0

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

    def spool(self, prefix: bytes) -> Source:
        return self

    def close(self) -> None:
        # memoryviews handed out (samples' stacks) may outlive us; the mmap goes with them
        self._file.close()


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


def open_source(input_path: str | None, host: str | None, port: int) -> Source:
    """--input FILE, else --host/--port, else stdin."""
    if input_path is not None:
        try:
            f = open(input_path, "rb")  # noqa: SIM115 - owned by the Source
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
            return FileSource(f) if regular else StreamSource(f)
        except OSError as exc:
            raise PerfDataError(f"Failed to open file {input_path}: {exc.strerror}"
                                f"{_permission_hint(input_path, exc)}", CANNOT_OPEN) from None
    if host is not None:
        sock = _connect(host, port)
        return StreamSource(sock.makefile("rb"), sock=sock)
    return StreamSource(os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=_CHUNK))
