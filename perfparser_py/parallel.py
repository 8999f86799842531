"""Split runs: the pipeline's two halves on two cores.

A forked child reads the input, orders it (EventQueue) and unwinds DWARF stacks against its
own copy of the address spaces (pipeline.Spaces); this process symbolizes and writes. The
child forwards, in order, everything the serial path would do with the events in this
process: the parse-time events and each event the queue hands out. A DWARF sample travels
with its unwinding result instead of its registers and stack, and a repeated frame-pointer
call chain as the number the child gave it (Sink.numbered_sample). Items are plain tuples
sent as marshalled batches through a pipe and replayed here through the same Run and Sink
code, so the output is byte-identical to a serial run (tests/test_parallel.py compares them).

Used for regular-file input of at least _MIN_BYTES when two CPUs are available;
`PERFPARSER_PY_SPLIT=0` turns it off, `=1` forces it (tests). Not for `--print-stats`
(nothing to split) or with debuginfod configured (downloads would run in both processes).
The pipe bounds memory: the child blocks while this process is behind. If the child dies,
this process reports how it ended (RuntimeError) after what was already replayed.
"""

from __future__ import annotations

import marshal
import os
import struct
import sys

from . import cpus
from .jitdump import JitDumps
from .ordering import EventQueue
from .perfdata import events as ev
from .perfdata.attr import SAMPLE_REGS_USER, SAMPLE_STACK_USER
from .perfdata.errors import PerfDataError
from .perfdata.fast import FusedSample
from .pipeline import (
    CHAIN_FRAMES,
    CHAIN_IDS,
    CPUMODE_MASK,
    TASK_EVENTS,
    Spaces,
    enqueue,
    features_arch,
    order_hooks,
    recorded_frame_count,
)
from .source import FileSource

_MIN_BYTES = 2 << 20  # below this, start-up and symbolizing dominate: nothing to win
_BATCH = 512  # items per marshalled batch
_LEN = struct.Struct("<I")
_PIPE_BYTES = 16 << 20  # wanted pipe capacity (capped by the system's pipe-max-size)
# batches the child keeps in memory while the pipe is full: ~16 k DWARF samples; beyond a
# start-up burst they only wait on a slower parent (a perf record -a: 7 MB of 16 allowed)
_BACKLOG_BYTES = 4 << 20

# item tags: (tag, ...) tuples
(FUSED, NUMBERED, CHAIN, FULL, MAPPING, KSYMBOL, JIT_CODE, TASK_ITEM, COMM, PROGRESS, PARSE,
 ATTR, VIOLATION, ERROR, CRASH, END) = range(16)
_MAPPING_TAGS = {ev.MmapEvent: MAPPING, ev.KsymbolEvent: KSYMBOL, ev.JitCodeEvent: JIT_CODE}
_TASK_TYPES = (ev.CommEvent, *TASK_EVENTS)  # a TASK_ITEM names its event type by index
_TASK_CODE = {t: i for i, t in enumerate(_TASK_TYPES)}
_new = tuple.__new__


def wanted(r, source) -> bool:
    """Whether the run `r` (a pipeline.Run) should be split (see the module docstring)."""
    switch = os.environ.get("PERFPARSER_PY_SPLIT", "")
    if (switch == "0" or r.stats_mode or not isinstance(source, FileSource)
            or r.finder.debuginfod is not None or not hasattr(os, "fork")):
        return False
    if switch == "1":
        return True
    return source.size >= _MIN_BYTES and cpus.usable() >= 2


def run_split(r, source) -> int:
    """Run the reading half in a child; replay what it forwards into `r` (a pipeline.Run).
    Returns the exit code of what the input gave (PerfDataError codes); r.finish() follows."""
    rfd, wfd = os.pipe()
    _widen(wfd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child never returns
        os.close(rfd)
        _child(r, source, wfd)
    os.close(wfd)
    reaped = False
    try:
        with os.fdopen(rfd, "rb", buffering=1 << 16) as pipe:
            return _replay(r, pipe)
    except _Vanished:
        _, status = os.waitpid(pid, 0)
        reaped = True
        how = (f"killed by signal {-os.waitstatus_to_exitcode(status)}"
               if os.WIFSIGNALED(status) else f"exit status {os.waitstatus_to_exitcode(status)}")
        raise RuntimeError(f"the reading process ended unexpectedly ({how})") from None
    finally:
        if not reaped:
            os.waitpid(pid, 0)


class _Vanished(Exception):
    """The reading process's stream ended without its end item."""


# -- the child: read, order, unwind, forward ---------------------------------------------

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


class _Forwarder:
    """The child's queue sink: keeps the address spaces (when samples can carry stacks) and
    forwards every hand-out as a plain tuple."""

    def __init__(self, items: list, spaces: Spaces) -> None:
        self.put = items.append
        self.spaces = spaces
        self.mirror = True  # False once the attributes show no sample carries a stack
        self._attrs: dict[int, int] = {}
        self._attr_objects: list = []  # kept alive: their id()s stay unique
        self._chain_ids: dict[tuple, int] = {}  # Sink.define_chain / numbered_sample
        self._next_chain_id = 0
        self._chain_frames = 0  # in _chain_ids (CHAIN_FRAMES)

    def mmap(self, e) -> None:
        if self.mirror:
            self.spaces.mmap(e)
        self.put((_MAPPING_TAGS[type(e)],) + e)

    def task(self, item) -> None:
        if self.mirror:
            self.spaces.task(item)
        e = item[0]
        self.put((TASK_ITEM, _TASK_CODE[type(e)]) + e)

    def sample(self, e) -> None:
        if type(e) is FusedSample:
            pid, tid, time, cpu, ip, sid, period, callchain, misc, _size = e
            if not callchain:
                self.put((FUSED,) + e)
                return
            # number the distinct (pid, chain, ip, cpu mode): a repeat travels as its number
            key = (pid, callchain, ip, misc & CPUMODE_MASK)
            cid = self._chain_ids.get(key)
            if cid is None:
                cid = self._next_chain_id
                self._chain_frames += len(callchain)
                if self._chain_frames > CHAIN_FRAMES:
                    cid += -cid % CHAIN_IDS  # where the other process starts afresh too
                if cid % CHAIN_IDS == 0:
                    self._chain_ids.clear()
                    self._chain_frames = len(callchain)
                self._next_chain_id = cid + 1
                self._chain_ids[key] = cid
                self.put((CHAIN, cid, callchain))
            self.put((NUMBERED, pid, tid, time, cpu, ip, sid, period, cid, misc))
            return
        outcome = None
        if self.mirror:
            spaces = self.spaces
            session = spaces.session
            outcome = spaces.unwind_outcome(e, session.process(e.pid),
                                            recorded_frame_count(e, session.kernel_range))
        attr = self._attrs.get(id(e.attr))
        if attr is None:
            attr = self._new_attr(e.attr)
        # the raw data as bytes; no registers and stack (what unwinding needs is done)
        if e.raw is None:
            self.put((FULL, attr, outcome, *e[1:16], (), None, *e[18:]))
        else:
            self.put((FULL, attr, outcome, *e[1:12], bytes(e.raw), *e[13:16], (), None,
                      *e[18:]))

    def time_order_violation(self, time: int, max_time: int) -> None:
        self.put((VIOLATION, time, max_time))

    def _new_attr(self, attr) -> int:
        """Number an attribute not forwarded yet, and forward it (sample() looks it up)."""
        import pickle

        index = self._attrs[id(attr)] = len(self._attr_objects)
        self._attr_objects.append(attr)
        self.put((ATTR, pickle.dumps(attr)))
        return index


class _Sender:
    """The child's batches go out through a thread, so the child goes on reading and
    unwinding while the pipe is full: at the start the parent is busy with its first
    resolutions (DWARF indexes, kallsyms) and the pipe holds only pipe-max-size (1 MiB by
    default, ~4000 DWARF samples), which stalled the child ~40 ms on a 40k-sample file.
    Up to _BACKLOG_BYTES wait here; beyond that `send` blocks, which bounds memory."""

    def __init__(self, fd: int) -> None:
        import threading
        from collections import deque

        self._fd = fd
        self._blobs: deque[bytes] = deque()
        self._queued = 0
        self._closing = False
        self._error: OSError | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="perfparser-send", daemon=True)
        self._thread.start()

    def send(self, blob: bytes) -> None:
        """Queue `blob`; raises the writing thread's error (BrokenPipeError: parent gone)."""
        with self._cond:
            while self._queued >= _BACKLOG_BYTES and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error
            self._blobs.append(blob)
            self._queued += len(blob)
            self._cond.notify()

    def close(self) -> None:
        """Return once everything queued is written; raises the writing thread's error."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._blobs and not self._closing:
                    cond.wait()
                if not self._blobs:
                    return
                blob = self._blobs.popleft()
            try:
                view = memoryview(blob)
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError as err:
                with cond:
                    self._error = err
                    cond.notify()
                return
            with cond:
                self._queued -= len(blob)
                cond.notify()


def _child(r, source, wfd: int) -> None:
    code = 0
    sender = _Sender(wfd)
    items: list = []

    def send() -> None:
        blob = marshal.dumps(items)
        sender.send(_LEN.pack(len(blob)) + blob)
        items.clear()

    try:
        _read(r, source, items, send)
        items.append((END,))
        send()
        sender.close()
    except BrokenPipeError:
        pass  # the parent is gone (its output consumer went away): nothing to tell
    except BaseException as exc:  # noqa: BLE001 - the parent reports it as an internal error
        code = 1
        try:
            # the items before it are whole events: the parent writes them, then reports
            items.append((CRASH, f"{type(exc).__name__}: {exc}"))
            send()
            sender.close()
        except BaseException:  # noqa: BLE001, S110 - the parent reports the missing end
            pass
    os._exit(code)


def _read(r, source, items: list, send) -> None:
    import pickle  # here, not up front: a run that is not split never needs it

    from .perfdata.reader import PerfReader

    options = r.options
    r.finder.progress = None
    r.finder.prefetch = False  # no symbols here
    spaces = Spaces(options, r.finder)
    arch_name = r.arch_name
    spaces.set_arch(arch_name)
    fwd = _Forwarder(items, spaces)
    attrs_seen = []
    queue = EventQueue(fwd, options.buffer_size, options.max_buffer_size)
    jit = JitDumps(options.perf_map_path, options.input)
    put = items.append

    def comm_id(name: bytes) -> int:
        put((COMM, name))  # the other process defines the string now
        return -1

    try:
        for e in PerfReader(source, fused=True).events():
            if enqueue(queue, e, comm_id, jit):
                pass
            elif type(e) is ev.ProgressEvent:
                put((PROGRESS, e.fraction))
            else:  # what the other process handles when read: its effect on this side first
                order_hooks(queue, e)
                kind = type(e)
                if kind is ev.FeaturesEvent:
                    arch_name = features_arch(e.features, arch_name, spaces.finder)
                elif kind is ev.DataStartEvent:
                    # file mode: every attribute is known before the first record
                    spaces.set_arch(arch_name)
                    fwd.mirror = any(a.sample_type & (SAMPLE_REGS_USER | SAMPLE_STACK_USER)
                                     for a in attrs_seen)
                elif kind is ev.AttrEvent:
                    attrs_seen.append(e.attr)
                put((PARSE, pickle.dumps(e)))
            if len(items) >= _BATCH:
                send()
    except PerfDataError as err:
        put((ERROR, str(err), err.exit_code))
    queue.finish()


# -- this process: replay -----------------------------------------------------------------

def _replay(r, pipe) -> int:
    import pickle
    sink = r.sink
    sample, full, mmap, task = sink.sample, sink.full_sample, sink.mmap, sink.task
    numbered, define_chain = sink.numbered_sample, sink.define_chain
    comm_string = r.comm_string
    attrs: list = []
    code = 0
    while True:
        head = pipe.read(4)
        blob = pipe.read(_LEN.unpack(head)[0]) if len(head) == 4 else b""
        if not blob:
            raise _Vanished
        for item in marshal.loads(blob):
            tag = item[0]
            if tag == NUMBERED:
                numbered(*item[1:])
            elif tag == CHAIN:
                define_chain(item[1], item[2])
            elif tag == FUSED:
                sample(item[1:])
            elif tag == FULL:
                full(_new(ev.SampleEvent, (attrs[item[1]],) + item[3:]), item[2])
            elif tag == MAPPING:
                mmap(_new(ev.MmapEvent, item[1:]))
            elif tag == KSYMBOL:
                mmap(_new(ev.KsymbolEvent, item[1:]))
            elif tag == JIT_CODE:
                mmap(_new(ev.JitCodeEvent, item[1:]))
            elif tag == TASK_ITEM:
                e = _new(_TASK_TYPES[item[1]], item[2:])
                task((e, comm_string(e.comm)) if type(e) is ev.CommEvent else (e,))
            elif tag == COMM:
                comm_string(item[1])
            elif tag == PROGRESS:
                r.parse_event(ev.ProgressEvent(item[1]))
            elif tag == PARSE:
                r.parse_event(pickle.loads(item[1]))
            elif tag == ATTR:
                attrs.append(pickle.loads(item[1]))
            elif tag == VIOLATION:
                sink.time_order_violation(item[1], item[2])
            elif tag == ERROR:
                print(f"perfparser: {item[1]}", file=sys.stderr)
                code = item[2]
            elif tag == CRASH:
                raise RuntimeError(f"in the reading process: {item[1]}")
            elif tag == END:
                return code
