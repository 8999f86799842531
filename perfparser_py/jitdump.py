"""jit-PID.dump files written by JIT runtimes (V8's --perf-prof, the JVM's perf agent, LuaJIT,
.NET, Julia), read directly instead of through `perf inject --jit`.

Format: Linux's tools/perf/Documentation/jitdump-specification.txt. A runtime announces its
dump by mmapping it; at that MMAP (the marker) the dump is read, as perf inject does, and its
records become events of the one time-ordered queue at their own timestamps (the recording's
clock with `perf record -k mono`; TSC with the ARCH_TIMESTAMP flag, converted by the
recording's TIME_CONV):
* JIT_CODE_LOAD maps [code_addr, code_addr + code_size) as one function named by the record,
  with the source lines of the JIT_CODE_DEBUG_INFO read before it;
* JIT_CODE_MOVE maps that function again at its new address.
What perf makes of the ELF file perf inject writes for a function is reproduced: its line for
an address is the last debug entry at or below it, none past the last entry or before the
first. A dump is read once, bounded: a hostile one costs at most _MAX_BYTES of reading and
_MAX_RECORDS functions, never a hang.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
import sys

from . import probes
from .perfdata import events as ev
from .perfdata.abi import FLAG_USE_CLOCKID

MAGIC = 0x4A695444  # "JiTD" as the writer's u32
CODE_LOAD, CODE_MOVE, CODE_DEBUG_INFO = 0, 1, 2
FLAG_ARCH_TIMESTAMP = 1
CLOCK_MONOTONIC = 1
_HEADER = struct.Struct("IIIIIIQQ")  # magic, version, total_size, elf_mach, pad, pid, time, flags
_PREFIX = struct.Struct("IIQ")  # id, total_size, timestamp
_LOAD = struct.Struct("IIQQQQ")  # pid, tid, vma, code_addr, code_size, code_index
_MOVE = struct.Struct("IIQQQQQ")  # pid, tid, vma, old, new code_addr, code_size, code_index
_DEBUG = struct.Struct("QQ")  # code_addr, nr_entry
_ENTRY = struct.Struct("QiI")  # addr, line, discrim; the file name follows
_SAME_FILE = b"\xff"  # a debug entry's file name meaning "the previous entry's"
_MAX_BYTES = 1 << 30
_MAX_RECORDS = 1 << 21
_MAX_NAME = 4096
EVENT_SIZE = 120  # what the queue counts for one event: about the MMAP2 perf inject writes


def _marker_pid(name: bytes) -> int | None:
    """N of a file named `jit-N.dump` (N decimal digits), the marker a JIT maps; else None.
    (Not a regular expression: every MMAP is looked at, and importing re is ~4 ms of a run.)"""
    digits = name[4:-5]
    if name[:4] == b"jit-" and name[-5:] == b".dump" and digits.isdigit():
        return int(digits)
    return None


class JitDumps:
    """The run's jitdump state: where dumps are looked for, the recording's clock, the dumps
    already read."""

    def __init__(self, perf_map_path: str | None, recording: str | None) -> None:
        self._dirs = [d for d in (perf_map_path, os.path.dirname(os.path.abspath(recording))
                                  if recording else None) if d]
        self._monotonic = True  # every attribute so far has clockid CLOCK_MONOTONIC
        self._time_conv: ev.TimeConvEvent | None = None
        self._read: set[tuple[int, bytes]] = set()

    def attr(self, attr) -> None:
        if not (attr.flags & FLAG_USE_CLOCKID and attr.clockid == CLOCK_MONOTONIC):
            self._monotonic = False

    def time_conv(self, e: ev.TimeConvEvent) -> None:
        self._time_conv = e

    def code_events(self, e: ev.MmapEvent) -> list[ev.JitCodeEvent] | None:
        """The events of the dump whose marker MMAP `e` is; None if `e` is no marker or the
        dump cannot be found or read (the MMAP then stays what it is)."""
        pid = _marker_pid(os.path.basename(e.filename))
        if pid is None or (e.pid and pid != e.pid) or (e.pid, e.filename) in self._read:
            return None
        self._read.add((e.pid, e.filename))
        path = self._find(e.filename)
        if path is None:
            print(f"perfparser: the JIT dump {_text(e.filename)} of process {e.pid} was not "
                  "found (look-up: --perf-map-path, the recording's directory, its path): "
                  "its functions stay unnamed unless a perf-PID.map names them",
                  file=sys.stderr)
            return None
        try:
            return list(self._events(path, e.pid))
        except (OSError, ValueError) as exc:
            print(f"perfparser: cannot read the JIT dump {path}: {exc}", file=sys.stderr)
            return None

    def _find(self, recorded: bytes) -> str | None:
        name = os.path.basename(os.fsdecode(recorded))
        for cand in [*(os.path.join(d, name) for d in self._dirs), os.fsdecode(recorded)]:
            try:
                if stat.S_ISREG(probes.stat(cand).st_mode):  # never a FIFO or device to block on
                    return cand
            except OSError:
                continue
        return None

    def _events(self, path: str, pid: int):
        with open(path, "rb") as f:
            size = min(os.fstat(f.fileno()).st_size, _MAX_BYTES)
            if size < _HEADER.size:
                raise ValueError("shorter than its header")
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as buf:
                yield from self._records(buf, path, pid)

    def _records(self, buf, path: str, pid: int):
        magic = struct.unpack_from("<I", buf)[0]
        e = "<" if magic == MAGIC else ">"
        if struct.unpack_from(e + "I", buf)[0] != MAGIC:
            raise ValueError(f"no jitdump magic (0x{magic:08x})")
        header = struct.Struct(e + _HEADER.format)
        _magic, _version, header_size, _mach, _pad, _pid, _time, flags = header.unpack_from(buf)
        to_time = self._clock(flags, path)
        if to_time is None:
            return
        prefix, load, move = (struct.Struct(e + s.format) for s in (_PREFIX, _LOAD, _MOVE))
        dump = os.fsencode(path)
        lines: tuple = ()  # of the JIT_CODE_DEBUG_INFO waiting for its JIT_CODE_LOAD
        loaded: dict[int, tuple[bytes, tuple]] = {}  # code_index -> (name, lines)
        pos, end, count = max(header_size, _HEADER.size), len(buf), 0
        while pos + prefix.size <= end and count < _MAX_RECORDS:
            rid, rsize, timestamp = prefix.unpack_from(buf, pos)
            if rsize < prefix.size or pos + rsize > end:
                break  # a record cut short (the runtime was still writing) ends the dump
            body, rend = pos + prefix.size, pos + rsize
            if rid == CODE_LOAD and body + load.size <= rend:
                _p, _t, _vma, addr, code_size, index = load.unpack_from(buf, body)
                name = _cstring(buf, body + load.size, rend)
                # lines relative to the code's start, which a moved function keeps
                relative = tuple(sorted(((a - addr, n, f) for a, n, f in lines),
                                        key=lambda x: x[0]))
                loaded[index] = (name, relative)
                if code_size:  # an empty function covers no address
                    yield ev.JitCodeEvent(pid, addr, code_size, name, dump, relative, index,
                                          to_time(timestamp), EVENT_SIZE)
                lines = ()
                count += 1
            elif rid == CODE_MOVE and body + move.size <= rend:
                _p, _t, _vma, _old, new, code_size, index = move.unpack_from(buf, body)
                if index in loaded and code_size:
                    name, relative = loaded[index]
                    yield ev.JitCodeEvent(pid, new, code_size, name, dump, relative, index,
                                          to_time(timestamp), EVENT_SIZE)
                    count += 1
            elif rid == CODE_DEBUG_INFO and body + _DEBUG.size <= rend:
                lines = _debug_lines(buf, body, rend, e)
            pos = rend

    def _clock(self, flags: int, path: str):
        """The dump's timestamp -> recording time, or None when the dump cannot be timed."""
        if not flags & FLAG_ARCH_TIMESTAMP:
            if not self._monotonic:
                # perf inject refuses such a dump; its functions still deserve names
                print(f"perfparser: {path}: the recording was not made with `perf record -k "
                      "mono`, so the dump's times are not the samples': its functions are "
                      "mapped from the start, each later one replacing what it overlaps",
                      file=sys.stderr)
                return lambda t: 0
            return lambda t: t
        tc = self._time_conv
        if tc is None or not tc.time_mult:
            print(f"perfparser: {path} has TSC timestamps and the recording no TIME_CONV to "
                  "convert them: the dump is ignored", file=sys.stderr)
            return None
        return lambda t: tsc_to_perf_time(t, tc)


def tsc_to_perf_time(cycles: int, tc: ev.TimeConvEvent) -> int:
    """A TSC value as perf time: the conversion perf_event_mmap_page documents."""
    if tc.cap_user_time_short:
        cycles = tc.time_cycles + ((cycles - tc.time_cycles) & tc.time_mask)
    quot, rem = cycles >> tc.time_shift, cycles & ((1 << tc.time_shift) - 1)
    return (tc.time_zero + quot * tc.time_mult + ((rem * tc.time_mult) >> tc.time_shift)) \
        & 0xFFFFFFFFFFFFFFFF


def _debug_lines(buf, body: int, end: int, e: str) -> tuple:
    """The entries of a JIT_CODE_DEBUG_INFO as (absolute address, line, file), at most as many
    as fit in the record."""
    entry = struct.Struct(e + _ENTRY.format)
    _code_addr, nr = struct.unpack_from(e + _DEBUG.format, buf, body)
    pos = body + _DEBUG.size
    files: dict[bytes, bytes] = {}  # one bytes object per file name
    out = []
    previous = b""
    for _ in range(min(nr, (end - pos) // (entry.size + 1))):
        if pos + entry.size >= end:
            break
        addr, line, _discrim = entry.unpack_from(buf, pos)
        name_end = buf.find(b"\0", pos + entry.size, end)
        if name_end < 0:
            break
        name = buf[pos + entry.size:name_end][:_MAX_NAME]
        name = previous if name == _SAME_FILE else files.setdefault(name, name)
        out.append((addr, line, name))
        previous = name
        pos = name_end + 1
    return tuple(out)


def _cstring(buf, start: int, end: int) -> bytes:
    stop = buf.find(b"\0", start, min(end, start + _MAX_NAME))
    return buf[start:stop if stop >= 0 else min(end, start + _MAX_NAME)]


def _text(path: bytes) -> str:
    return path.decode("utf-8", "replace")
