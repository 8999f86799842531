"""Whether a run is split in two processes (parallel.py), and the fork that starts the reading
one (parallel.reading_process) before this process imports and makes its stages
(pipeline.Run), which the reading process has no use for: it reads while they are made. A
module of its own, light to import, as the fork must come before those imports.

A regular-file input of at least _MIN_BYTES is split when two CPUs are available;
`PERFPARSER_PY_SPLIT=0` turns it off, `=1` forces it (tests). Not for `--print-stats`
(nothing to split) or with debuginfod configured (downloads would run in both processes).
"""

from __future__ import annotations

import os
import sys

from . import cpus
from .source import FileSource

_MIN_BYTES = 2 << 20  # below this, start-up and symbolizing dominate: nothing to win
_PIPE_BYTES = 16 << 20  # wanted pipe capacity (capped by the system's pipe-max-size)


def wanted(options, source) -> bool:
    """Whether a run with `options` of the opened `source` should be split."""
    switch = os.environ.get("PERFPARSER_PY_SPLIT", "")
    if (switch == "0" or options.print_stats or not isinstance(source, FileSource)
            or os.environ.get("DEBUGINFOD_URLS", "").strip() or not hasattr(os, "fork")):
        return False
    if switch == "1":
        return True
    return source.size >= _MIN_BYTES and cpus.usable() >= 2


def start(options, source) -> tuple[int, int] | None:
    """Fork the reading process of a run that wanted() splits: (its pid, the pipe it writes);
    None for a run that is not split."""
    if not wanted(options, source):
        return None
    rfd, wfd = os.pipe()
    _widen(wfd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child never returns
        try:
            os.close(rfd)
            from .parallel import reading_process

            reading_process(options, source, wfd)  # ends the process
        finally:
            os._exit(1)  # its import failed: the parent reports the missing end
    os.close(wfd)
    return pid, rfd


def _widen(fd: int) -> None:
    """Let the child run ahead while the parent is busy with first resolutions (kallsyms,
    DWARF indexes): a 64 KiB pipe would stall it after ~1000 samples."""
    try:
        import fcntl

        with open("/proc/sys/fs/pipe-max-size") as f:
            size = min(int(f.read()), _PIPE_BYTES)
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # a smaller pipe only costs overlap


def abandon(started: tuple[int, int]) -> None:
    """End a started reading process whose output will not be read (this process failed
    before replaying it): its pipe closed, it ends at its next write."""
    pid, rfd = started
    os.close(rfd)
    os.waitpid(pid, 0)
