"""What a run's output depends on outside its command line: every file and directory it looked
at, found or not, with what it found. The replay cache (replay.py) gives a stored stream again
only while every one of them still looks the same, so a debug file installed since, a library
rebuilt or a search directory that gained a file makes the next run a fresh one.

The run looks at the file system through these functions (tests/test_probes.py checks that
the run's modules call nothing else). A path's identity is its stat (device, inode, size,
mtime, ctime, type), None when it cannot be stat'ed; a pseudo-file of /proc or /sys, whose
stat says nothing of its content, is kept by its content (`content`). Only the first look at
a path is kept: a file that changes during the run is recent, and replay.py does not store
a run that saw a recent file.
"""

from __future__ import annotations

import os
import stat as _stat
import sys

# path -> identity while a run records (start()); None otherwise
_seen: dict[str, str | bytes | None] | None = None
_STAT, _CONTENT = "s", "c"  # the kinds of identity, the first character of its key
_CONTENT_MAX = 1 << 16
_PSEUDO = ("/proc/", "/sys/")


def start() -> None:
    """Keep what the run looks at from now on (in this process and the ones it forks)."""
    global _seen
    _seen = {}


def taken() -> dict[str, str | bytes | None] | None:
    """What was looked at (key: kind + path), with the files of the code that ran in this
    process; None when not recording. Ends the recording."""
    global _seen
    if _seen is not None:
        for path in _code_files():
            _lookup(path)
    seen, _seen = _seen, None
    return seen


def _code_files() -> list[str]:
    """The modules this process imported and the shared libraries it mapped (libstdc++ names
    C++ symbols): a new version of any of them may write another stream. A frozen executable
    holds its modules (replay.py keys on its file); a one-file one unpacks its libraries into
    a new directory each run, where only the executable stands for them."""
    frozen = getattr(sys, "frozen", False)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle and bundle.startswith(os.path.dirname(sys.executable) + os.sep):
        bundle = None  # a one-directory build: its libraries stay where they are
    files = []
    if not frozen:
        for m in list(sys.modules.values()):
            if isinstance(f := getattr(m, "__file__", None), str):
                files.append(f)
    try:
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
    except OSError:
        return files
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and b"x" in fields[1] and fields[5].startswith(b"/"):
            path = os.fsdecode(fields[5])
            if not (bundle and path.startswith(bundle)):
                files.append(path)
    return files


def merge(seen: dict[str, str | bytes | None] | None) -> None:
    """Add what another process of the run (a split run's reading process) looked at."""
    if _seen is not None and seen:
        for key, identity in seen.items():
            _seen.setdefault(key, identity)


def identity_of(st: os.stat_result) -> str:
    return (f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:"
            f"{_stat.S_IFMT(st.st_mode)}")


def _note(path: str, st: os.stat_result | None) -> None:
    # a /proc or /sys file's stat changes without its content and stays while it changes:
    # what depends on one is kept by content()
    if _seen is not None and not ("/" + path.lstrip("/")).startswith(_PSEUDO):
        _seen.setdefault(_STAT + path, None if st is None else identity_of(st))


def opened(path: str, f) -> None:
    """A file opened by name: what fstat says of the file object `f`."""
    _note(path, os.fstat(f.fileno()))


def stat(path: str) -> os.stat_result:
    """os.stat(path), kept; raises as it does."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in a recorded name
        _note(path, None)
        raise
    _note(path, st)
    return st


def _lookup(path: str) -> os.stat_result | None:
    try:
        return stat(path)
    except (OSError, ValueError):
        return None


def exists(path: str) -> bool:
    return _lookup(path) is not None


def isfile(path: str) -> bool:
    st = _lookup(path)
    return st is not None and _stat.S_ISREG(st.st_mode)


def isdir(path: str) -> bool:
    st = _lookup(path)
    return st is not None and _stat.S_ISDIR(st.st_mode)


def listdir(path: str) -> list[str]:
    """os.listdir(path), kept: a directory's mtime changes when an entry comes or goes."""
    stat(path)
    return os.listdir(path)


def scandir(path: str) -> list[os.DirEntry]:
    """os.scandir(path) as a list, kept like listdir()."""
    stat(path)
    with os.scandir(path) as it:
        return list(it)


def content(path: str) -> bytes:
    """The first _CONTENT_MAX bytes of a pseudo-file (of /proc or /sys), kept by content;
    raises OSError as open() does."""
    try:
        with open(path, "rb") as f:
            data = f.read(_CONTENT_MAX)
    except (OSError, ValueError):
        if _seen is not None:
            _seen.setdefault(_CONTENT + path, None)
        raise
    if _seen is not None:
        _seen.setdefault(_CONTENT + path, data)
    return data


def _content_now(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(_CONTENT_MAX)
    except (OSError, ValueError):
        return None


def unchanged(seen: dict) -> bool:
    """Whether every path of `seen` (what taken() gave) still has the identity it had."""
    for key, identity in seen.items():
        path = key[1:]
        if key[0] == _STAT:
            try:
                now = identity_of(os.stat(path))
            except (OSError, ValueError):
                now = None
        else:
            now = _content_now(path)
        if now != identity:
            return False
    return True


def recent(seen: dict, since_ns: int) -> bool:
    """Whether a file of `seen` was modified at or after `since_ns` (time.time_ns()): a
    later change within the file system's timestamp granularity would not show."""
    for key, identity in seen.items():
        if key[0] == _STAT and identity is not None:
            _dev, _ino, _size, mtime, ctime, _fmt = identity.split(":")
            if max(int(mtime), int(ctime)) >= since_ns:
                return True
    return False
