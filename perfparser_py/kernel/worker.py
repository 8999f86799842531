"""The kallsyms worker: a process forked at start-up that parses the kallsyms file a run will
most likely read and parse (symbols.parsed_ahead), and hands the table back in shared
memory."""

from __future__ import annotations

import os
import sys

from .kallsyms import Kallsyms, KallsymsError, cache_key, read

# POSIX's number for SIGKILL: the signal module's enums are ~0.6 ms of import on the writing
# process's path, for this one number
_SIGKILL = 9


class KallsymsWorker:
    """A forked process that reads and parses the kallsyms file a run will most likely parse
    (`parsed_ahead`) while the run imports its modules and reads the recording: the parse
    (~10 ms compiled for 120 k lines, ~0.5 s interpreted) otherwise sits in front of the first
    kernel frame. Forked at start-up, while this process is small (every page this one has
    then counts in the worker's RSS too). Niced only a little (cpus.HELPER_NICENESS): on a
    busy machine this process would wait for it. The table comes back in a memfd this process maps and uses in place. If the
    run settles on another file, or anything goes wrong with the worker, `table` says None and
    the caller reads the file itself, as without a worker."""

    _open: list[KallsymsWorker] = []  # workers whose descriptors a later fork must not keep
    _fork_hook = False  # _forget_all registered

    def __init__(self, path: str, pid: int, replies: int, memfd: int) -> None:
        self.path = path
        self._pid = pid
        self._replies = replies
        self._memfd = memfd

    @staticmethod
    def start(path: str, own=None) -> KallsymsWorker | None:
        """A worker parsing `path` (and offering its text to `own`, a symbols.OwnCopy), or
        None without two CPUs, fork or memfd."""
        from .. import cpus

        if cpus.usable() < 2 or not hasattr(os, "memfd_create"):
            return None
        fds: list[int] = []
        try:
            fds.append(os.memfd_create("perfparser-kallsyms", os.MFD_CLOEXEC))
            fds.extend(os.pipe())
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        memfd, replies, to_parent = fds
        if pid == 0:  # never returns: the worker's only way out is _exit
            try:
                os.close(replies)
                _serve(path, to_parent, memfd, own)
            finally:
                os._exit(0)
        os.close(to_parent)
        if not KallsymsWorker._fork_hook:
            os.register_at_fork(after_in_child=KallsymsWorker._forget_all)
            KallsymsWorker._fork_hook = True
        worker = KallsymsWorker(path, pid, replies, memfd)
        KallsymsWorker._open.append(worker)
        return worker

    def table(self, path: str) -> tuple[str, Kallsyms] | None:
        """(persistent cache key, table) of `path` once the worker has it; None if it parses
        another file or cannot answer. Raises KallsymsError for a file it could not use."""
        if path != self.path or self._replies < 0:
            return None
        try:
            reply = _read_to_end(self._replies)
            if reply[:1] == b"E":
                raise KallsymsError(reply[1:].decode("utf-8", "surrogateescape"))
            if reply[:1] != b"T":
                return None
            import mmap

            buf = mmap.mmap(self._memfd, 0, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return None
        finally:
            self.close()
        return reply[1:].decode("utf-8", "surrogateescape"), Kallsyms.from_buffer(buf)

    def close(self) -> None:
        """End the worker wherever it is and release its descriptors."""
        if self._pid > 0:
            try:
                os.kill(self._pid, _SIGKILL)
                os.waitpid(self._pid, 0)
            except OSError:
                pass
            self._pid = 0
        self._forget()
        if self in KallsymsWorker._open:
            KallsymsWorker._open.remove(self)

    def _forget(self) -> None:
        for fd in (self._replies, self._memfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._replies = self._memfd = -1

    @staticmethod
    def _forget_all() -> None:
        """In a freshly forked child: the workers belong to the parent."""
        for worker in KallsymsWorker._open:
            worker._pid = 0
            worker._forget()
        KallsymsWorker._open.clear()


def _read_to_end(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _serve(path: str, to_parent: int, memfd: int, own) -> None:
    """The worker: put the table of `path` into `memfd`, offer the text to `own`, then say
    how it went (the run ends the worker once it has the reply)."""
    for fd in (0, 1):  # nothing to read; and a parent that dies leaves no stdout open here
        try:
            os.close(fd)
        except OSError:
            pass
    from ..cpus import lower_helper_priority

    lower_helper_priority()
    try:
        data, identity = read(path)
        key: list[str] = []
        hashing = None
        if identity is None:  # a content hash releases the GIL: it runs beside the parse
            import threading

            hashing = threading.Thread(target=lambda: key.append(cache_key(data, None)))
            hashing.start()
        with open(memfd, "wb", closefd=False) as f:
            Kallsyms.write_table(f, data)
        if hashing is None:
            key.append(cache_key(data, identity))
        else:
            hashing.join()
        if own is not None:
            own.keep_from(path, data)
        reply = b"T" + key[0].encode("utf-8", "surrogateescape")
    except KallsymsError as err:
        reply = b"E" + str(err).encode("utf-8", "surrogateescape")
    except Exception:  # noqa: BLE001 - whatever it is, the parent reads the file itself
        reply = b"F"
    while reply:  # the exit that follows ends the stream
        reply = reply[os.write(to_parent, reply):]
