"""Where every event goes: ROUTES, the one table of the stage handlers each kind of event
reaches, read by the serial run and by both processes of a split run (parallel.py).

An event meets the stages twice: when the reader yields it and, if it is time-ordered (a
sample, mmap or task event), when the time-ordering queue hands it out. Each time there is a
reading side, which a split run keeps in its reading process, and a writing side, in the
process that symbolizes and writes. A route names, per column, a method of:

- `now`: the writing side when read (pipeline.Run): what upstream sends at parse time. It runs
  before `read`, so a COMM's name is defined before a flush that queueing the COMM causes.
- `read`: the reading side when read (reading.Reading): into the queue, or what the event
  changes in the queue's flushing mode and in finding files.
- `spaces`: the address spaces when handed out (reading.Spaces, so session.py): the writing
  side's, and in a split run the reading process's too while its samples carry stacks.
- `write`: the writing side when handed out (pipeline.Sink): symbols and messages.
- `ahead`: what a split run's reading process does to a handed-out sample before sending it
  (parallel._Ahead): unwinding its stack, numbering a repeated call chain. A serial run's
  Sink.full_sample unwinds itself.

A split run's reading process sends each writing-side call as (index, args) and the writing
process calls handlers[index](*args) (parallel.WIRE).
"""

from __future__ import annotations

from collections import namedtuple

from .perfdata import events as ev
from .perfdata.abi import CONTEXT_USER_DEFERRED
from .perfdata.fast import FusedSample

# a route: per column named above, the name of a method, or None
Route = namedtuple("Route", ("now", "read", "spaces", "write", "ahead"), defaults=(None,) * 5,
                   module=__name__)


ROUTES: dict[type, Route] = {
    ev.ProgressEvent: Route(now="progress"),
    ev.AttrEvent: Route(now="attr", read="attr"),
    ev.TracingDataEvent: Route(now="tracing_data"),
    ev.FeaturesEvent: Route(now="features", read="features"),
    ev.DataStartEvent: Route(now="data_start", read="data_start"),
    ev.TimeConvEvent: Route(read="time_conv"),  # a jitdump's clock
    ev.FinishedRoundEvent: Route(read="finished_round"),
    # time-ordered: queued when read, handled when the queue hands them out
    FusedSample: Route(read="fused_sample", write="sample", ahead="chain"),
    ev.SampleEvent: Route(read="sample", write="full_sample", ahead="unwind"),
    ev.MmapEvent: Route(read="mmap", spaces="mmap", write="kernel_mmap"),
    ev.KsymbolEvent: Route(read="mapping", spaces="mmap"),
    ev.JitCodeEvent: Route(spaces="mmap"),  # made from a jitdump's MMAP by Reading.mmap
    ev.CommEvent: Route(now="comm", read="task", spaces="task", write="command"),
    ev.ForkEvent: Route(read="task", spaces="task", write="thread_start"),
    ev.ExitEvent: Route(read="task", spaces="task", write="thread_end"),
    ev.LostEvent: Route(read="task", write="lost"),
    ev.SwitchEvent: Route(read="task", write="context_switch"),
    # joined to the samples waiting for it by HandOut
    ev.CallchainDeferredEvent: Route(read="task"),
}


def both(first, second):
    """One handler of an event that calls `first`, then `second`; either may be None."""
    if first is None or second is None:
        return second if first is None else first

    def call(e) -> None:
        first(e)
        second(e)

    return call


def column(obj, name: str):
    """For handlers(): the method of `obj` that column `name` of a route names (None where it
    names none, or obj is None)."""
    def bind(kind: type, route: Route):
        method = getattr(route, name)
        return None if method is None or obj is None else getattr(obj, method)

    return bind


def handlers(first, second) -> dict[type, object]:
    """kind -> its one handler: first(kind, route)'s, then second(kind, route)'s (each makes
    a handler or None); kinds with neither are left out."""
    made = {}
    for kind, route in ROUTES.items():
        handler = both(first(kind, route), second(kind, route))
        if handler is not None:
            made[kind] = handler
    return made


def on_read(run, reading) -> dict[type, object]:
    """The handlers of events as read: `now` on run (a pipeline.Run), `read` on reading (a
    reading.Reading)."""
    return handlers(column(run, "now"), column(reading, "read"))


def on_hand_out(spaces, sink) -> dict[type, object]:
    """The handlers of events the queue hands out: `spaces` on spaces (a reading.Spaces),
    then `write` on sink (a pipeline.Sink)."""
    return handlers(column(spaces, "spaces"), column(sink, "write"))


class HandOut:
    """The time-ordering queue's sink (ordering.EventQueue): each event it hands out goes to
    its kind's handler, `handlers` (on_hand_out's, or what forwards them); a sample whose user
    call chain comes later waits for it (deferred_chains.py)."""

    def __init__(self, handlers: dict[type, object], time_order_violation) -> None:
        self._handlers = handlers
        self.time_order_violation = time_order_violation
        self._deferred = None  # a DeferredChains from the first such sample on

    def sample(self, e) -> None:
        if type(e) is FusedSample:
            chain, tid = e[7], e[1]
        else:
            chain, tid = e.callchain, e.tid
        n = len(chain)
        if n >= 2 and chain[n - 2] == CONTEXT_USER_DEFERRED:
            if self._deferred is None:
                from .deferred_chains import DeferredChains
                self._deferred = DeferredChains(self.handle)
            self._deferred.hold(e, tid)
        else:
            self._handlers[type(e)](e)

    def handle(self, e) -> None:
        """Its kind's handler takes `e`."""
        self._handlers[type(e)](e)

    mmap = handle

    def task(self, e) -> None:
        kind = type(e)
        if kind is ev.CallchainDeferredEvent:
            if self._deferred is not None:
                self._deferred.join(e)
            return
        if kind is ev.ExitEvent and self._deferred is not None:
            self._deferred.release(e.tid)  # it exited in the kernel: no user chain comes
        self._handlers[kind](e)

    def end(self) -> None:
        """The queue handed out its last event."""
        if self._deferred is not None:
            self._deferred.release_all()
