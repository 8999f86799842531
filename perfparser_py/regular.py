"""Opening the files a recording names, which may be anything: only regular files are read.

A recording from another machine can name a FIFO (open() blocks for a writer), a terminal,
`/proc/self/fd/1` (our own output pipe: reading it eats the stream we write), or a device.
Every path that comes from a recording, a search directory or the cache is opened here, with
O_NONBLOCK so that opening never waits, and kept only when fstat says it is a regular file;
anything else counts as a missing file (docs/robustness.md).
"""

from __future__ import annotations

import os
import stat

from . import probes


def open_regular(path: str, follow: bool = True, max_size: int | None = None):
    """A binary file object for `path` if it is a regular file (of at most `max_size` bytes
    when given), else None. follow=False: a symbolic link is refused too (O_NOFOLLOW), for
    files that are never legitimately links (the cache's own entries); the others are files
    the run's output depends on (probes.py)."""
    try:
        # stat first: a device is never even opened (opening some has side effects)
        st = probes.stat(path) if follow else os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
        fd = os.open(path, flags)
    except (OSError, ValueError):  # ValueError: a NUL in a recorded name
        return None
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed to a moment ago
        if not stat.S_ISREG(st.st_mode) or (max_size is not None and st.st_size > max_size):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None


def read_regular(path: str, max_size: int, follow: bool = True) -> bytes | None:
    """The contents of the regular file `path` if it has at most `max_size` bytes, else None
    (a file that grows past the bound while read counts as too large)."""
    f = open_regular(path, follow, max_size)
    if f is None:
        return None
    try:
        with f:
            data = read_bounded(f, max_size)
    except OSError:
        return None
    return data if len(data) <= max_size else None


_PIECE = 1 << 20


def read_bounded(f, max_size: int) -> bytes:
    """What the binary file `f` holds, up to max_size + 1 bytes (one more tells that it is
    larger). read(max_size + 1) would allocate that much before it reads, which a small
    file's read cannot get under an address-space limit (ulimit -v) or strict overcommit (a
    256 MB bound: MemoryError where 300 MB are allowed); so the first read asks for the size
    fstat gives plus one byte (the whole file at once: one buffer of its size, not pieces
    joined, ~3 ms less for a 5 MB kallsyms), and what is beyond it (a file that grew, a
    /proc file whose size reads 0) comes in pieces of at most _PIECE."""
    try:
        size = os.fstat(f.fileno()).st_size
    except (OSError, ValueError):
        size = 0
    pieces = []
    left = max_size + 1
    want = size + 1 if size > 0 else _PIECE
    while left > 0:
        piece = f.read(min(left, want))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
        want = _PIECE
    return b"".join(pieces)  # one piece: that piece itself, not a copy

