"""Split runs: the pipeline's two halves on two cores.

A forked child reads the input, orders it (EventQueue) and unwinds DWARF stacks against its
own copy of the address spaces (reading.Spaces); this process symbolizes and writes. Both
dispatch events by the one table, dispatch.ROUTES: the child runs the reading side's
handlers and, in order, sends each call of a writing side's handler as (its index in WIRE,
args); this process calls the same handler, so the output is byte-identical to a serial
run's (tests/test_parallel.py compares them). A DWARF sample travels with its unwinding
result instead of its registers and stack, and a repeated frame-pointer call chain as the
number the child gave it (Sink.numbered_sample). The calls go as marshalled batches through
a pipe.

Whether a run is split, and the fork, are split.py's: the child starts before this process
imports its stages, and imports only the reading side's (reading.py). The pipe bounds memory:
the child blocks while this process is behind. If the child dies, this process reports how
it ended (RuntimeError) after what was already replayed.
"""

from __future__ import annotations

import marshal
import os
import struct
import sys
from collections import namedtuple
from operator import itemgetter

from . import dispatch, probes
from .dispatch import ROUTES
from .jitdump import JitDumps
from .ordering import EventQueue
from .perfdata import events as ev
from .perfdata.attr import PerfEventAttr
from .perfdata.errors import PerfDataError
from .perfdata.features import HeaderFeatures
from .perfdata.fast import FusedSample
from .reading import (
    CHAIN_FRAMES,
    CHAIN_IDS,
    CPUMODE_MASK,
    FULL_SAMPLE_READS,
    Reading,
    Spaces,
    arch_name,
    finder_for,
    recorded_frame_count,
)

_BATCH = 512  # items per marshalled batch
# The first batches are smaller, and the header's events go alone, so that this process
# starts on them (opening the files with samples, their symbols) while the child unwinds
_FIRST_BATCH = 16
_LEN = struct.Struct("<I")
# batches the child keeps in memory while the pipe is full: ~16 k DWARF samples; beyond a
# start-up burst they only wait on a slower parent (a perf record -a: 7 MB of 16 allowed)
_BACKLOG_BYTES = 4 << 20

# What the child sends: (index in WIRE, args), for this process's handler of that index
# (_Replay). From ROUTES: ("now", kind) the fields of an event as read, ("out", kind) those
# of an event the queue handed out. The split's own: samples in short (_Ahead), the queue's
# warnings and how reading ended.
WIRE = (*(("now", k) for k, route in ROUTES.items() if route.now is not None),
        *(("out", k) for k, route in ROUTES.items()
          if route.ahead is None and (route.spaces or route.write) is not None),
        "fused", "chain", "numbered", "attr", "full", "violation", "error", "crash", "end")
_AT = {key: index for index, key in enumerate(WIRE)}
_FUSED, _CHAIN, _NUMBERED, _FULL = (_AT[k] for k in ("fused", "chain", "numbered", "full"))
# "full" carries a SampleEvent unwound: its unwinding result, its attr as a number (sent
# before as "attr") and the other fields Sink.full_sample reads of it, its raw data as bytes
# (half the fields marshalled). It arrives as an _Arrived: those fields by the same names,
# one tuple made where filling a whole SampleEvent took a list and a loop (~1 us a sample)
_SENT_NAMES = tuple(f for f in FULL_SAMPLE_READS if f != "attr")
_sent_fields = itemgetter(*(ev.SampleEvent._fields.index(f) for f in _SENT_NAMES))
_SENT_RAW = _SENT_NAMES.index("raw")
_Arrived = namedtuple("_Arrived", ("attr", *_SENT_NAMES))
_new = tuple.__new__
# the reading process's exceptions the parent raises as their own kind ("crash")
_KINDS_KEPT = {"MemoryError": MemoryError, "ImportError": ImportError}
# the events sent as read whose first field is a named tuple itself, sent as its fields
# (marshal takes plain tuples; pickle's import was ~1 ms in each process): that tuple's type
_NESTED = {ev.AttrEvent: PerfEventAttr, ev.FeaturesEvent: HeaderFeatures}


def replay(r, pid: int, rfd: int) -> int:
    """Replay into `r` (a pipeline.Run) what the reading process `pid` (split.start's) sends
    through the pipe `rfd`, then reap it. Returns the exit code of what the input gave
    (PerfDataError codes); r.finish() follows."""
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

class _Ahead:
    """The child's handlers of samples the queue hands out (ROUTES' `ahead`): a DWARF sample is
    unwound here and travels without its stack, a repeated call chain as its number."""

    def __init__(self, put, reading: Reading) -> None:
        self.put = put
        self.reading = reading
        self._attrs: dict[int, int] = {}
        self._attr_objects: list = []  # kept alive: their id()s stay unique
        self._chain_ids: dict[tuple, int] = {}  # Sink.define_chain / numbered_sample
        self._next_chain_id = 0
        self._chain_frames = 0  # in _chain_ids (CHAIN_FRAMES)

    def chain(self, e) -> None:
        pid, tid, time, cpu, ip, sid, period, callchain, misc, _size = e
        if not callchain:
            self.put((_FUSED, e))
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
            self.put((_CHAIN, (cid, callchain)))
        self.put((_NUMBERED, (pid, tid, time, cpu, ip, sid, period, cid, misc)))

    def unwind(self, e) -> None:
        outcome = None
        reading = self.reading
        if reading.unwinds:
            spaces = reading.spaces
            session = spaces.session
            # its addresses come packed: they travel and key the other process's memo as
            # they are (Symbolizer.unwound)
            outcome = spaces.unwind_outcome(e, session.process(e.pid),
                                            recorded_frame_count(e, session.kernel_range))
        attr = self._attrs.get(id(e.attr))
        if attr is None:
            attr = self._new_attr(e.attr)
        sent = _sent_fields(e)
        if e.raw is not None:  # a memoryview: marshal takes its bytes
            sent = list(sent)
            sent[_SENT_RAW] = bytes(e.raw)
        self.put((_FULL, (outcome, attr, sent)))

    def _new_attr(self, attr) -> int:
        """Number an attribute not sent yet, and send it (unwind() looks it up)."""
        index = self._attrs[id(attr)] = len(self._attr_objects)
        self._attr_objects.append(attr)
        self.put((_AT["attr"], tuple(attr)))
        return index



def _sends(put, reading: Reading, ahead: _Ahead):
    """The child's handlers of ROUTES (dispatch.handlers' makers): as read, the `now` part
    sent; as handed out, the `spaces` part done here too while the child unwinds, and the
    rest sent (samples: _Ahead)."""

    def now(kind: type, route):
        if route.now is None:
            return None
        index = _AT["now", kind]
        nested = _NESTED.get(kind)
        if nested is None:
            return lambda e: put((index, tuple(e)))
        return lambda e: put((index, (tuple(e[0]), *e[1:])))

    def spaces(kind: type, route):
        if route.ahead is not None or route.spaces is None:
            return None
        keep = getattr(reading.spaces, route.spaces)

        def mirror(e) -> None:
            if reading.unwinds:
                keep(e)

        return mirror

    def out(kind: type, route):
        if route.ahead is not None:
            return getattr(ahead, route.ahead)
        if (route.spaces or route.write) is None:
            return None
        index = _AT["out", kind]
        return lambda e: put((index, tuple(e)))

    return now, spaces, out


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


def reading_process(options, source, wfd: int) -> None:
    """The child of split.start: read `source`, order and unwind, and send everything to the
    pipe `wfd`; it ends the process."""
    code = 0
    sender = _Sender(wfd)
    items: list = []

    def send() -> None:
        blob = marshal.dumps(items)
        sender.send(_LEN.pack(len(blob)) + blob)
        items.clear()

    try:
        _read(options, source, items, send)
        items.append((_AT["end"], (probes.taken(),)))  # the files this process looked at
        send()
        sender.close()
    except BrokenPipeError:
        pass  # the parent is gone (its output consumer went away): nothing to tell
    except BaseException as exc:  # noqa: BLE001 - the parent reports it as an internal error
        code = 1
        try:
            # the items before it are whole events: the parent writes them, then reports
            items.append((_AT["crash"], (type(exc).__name__, str(exc))))
            send()
            sender.close()
        except BaseException:  # noqa: BLE001, S110 - the parent reports the missing end
            pass
    os._exit(code)


def _read(options, source, items: list, send) -> None:
    from .perfdata.reader import PerfReader

    spaces = Spaces(options, finder_for(options))  # no progress, no prefetch: no symbols here
    name = arch_name(options)
    spaces.set_arch(name)
    put = items.append
    handed_out: dict = {}
    violation = _AT["violation"]
    queue = EventQueue(dispatch.HandOut(handed_out, lambda *args: put((violation, args))),
                       options.buffer_size, options.max_buffer_size)
    reading = Reading(queue, JitDumps(options.perf_map_path, options.input), spaces, name)
    now, keep, out = _sends(put, reading, _Ahead(put, reading))
    handed_out.update(dispatch.handlers(keep, out))
    on_read = dispatch.handlers(now, dispatch.column(reading, "read"))
    batch = _FIRST_BATCH
    try:
        for e in PerfReader(source, fused=True).events():
            handler = on_read.get(type(e))
            if handler is not None:
                handler(e)
            if len(items) >= batch or type(e) is ev.DataStartEvent:
                send()
                batch = min(2 * batch, _BATCH)
    except PerfDataError as err:
        put((_AT["error"], (str(err), err.exit_code)))
    queue.finish()
    # all is unwound: the mapped input need not count in the RSS of this process while it
    # waits for the parent to take the last batches (at the end, when the parent's is highest)
    source.release(len(source.buffer()))


# -- this process: replay -----------------------------------------------------------------

class _Replay:
    """This process's handlers of WIRE, by index, and how the reading process ended."""

    def __init__(self, r) -> None:
        self.code = 0
        self.ended = False
        sink = r.sink
        attrs: list = []
        handed_out = dispatch.on_hand_out(sink, sink)
        fused, full_sample = handed_out[FusedSample], handed_out[ev.SampleEvent]

        def now(kind: type, handler):
            nested = _NESTED.get(kind)
            if nested is None:
                return lambda *fields: handler(_new(kind, fields))
            return lambda first, *fields: handler(_new(kind, (nested._make(first), *fields)))

        def out(kind: type, handler):
            return lambda *fields: handler(_new(kind, fields))

        def full(outcome, attr, sent) -> None:
            full_sample(_new(_Arrived, (attrs[attr], *sent)), outcome)

        own = {
            "fused": lambda *fields: fused(fields),
            "chain": sink.define_chain,
            "numbered": sink.numbered_sample,
            "attr": lambda *fields: attrs.append(PerfEventAttr._make(fields)),
            "full": full,
            "violation": sink.time_order_violation,
            "error": self.error,
            "crash": self.crash,
            "end": self.end,
        }
        self.handlers = [
            own[key] if isinstance(key, str)
            else now(key[1], getattr(r, ROUTES[key[1]].now)) if key[0] == "now"
            else out(key[1], handed_out[key[1]])
            for key in WIRE]

    def error(self, message: str, code: int) -> None:
        print(f"perfparser: {message}", file=sys.stderr)
        self.code = code

    def crash(self, kind: str, text: str) -> None:
        """The reading process raised `kind` (its name) with `text`: raised here, as the same
        kind where the CLI tells it apart from a bug of ours (memory refused, a broken
        install), else as a RuntimeError naming it."""
        if kind in _KINDS_KEPT:
            raise _KINDS_KEPT[kind](f"in the reading process: {text}")
        raise RuntimeError(f"in the reading process: {kind}: {text}")

    def end(self, seen) -> None:
        probes.merge(seen)
        self.ended = True


def _replay(r, pipe) -> int:
    replay = _Replay(r)
    handlers = replay.handlers
    while not replay.ended:
        head = pipe.read(4)
        blob = pipe.read(_LEN.unpack(head)[0]) if len(head) == 4 else b""
        if not blob:
            raise _Vanished
        for index, args in marshal.loads(blob):
            handlers[index](*args)
    return replay.code
