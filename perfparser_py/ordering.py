"""Time ordering of events: one merged queue flushed per FINISHED_ROUND or by size.

perf writes events per CPU buffer, so the file is only roughly time-ordered; FINISHED_ROUND
records tell when everything before the previous round may be processed. The queue keeps
every buffered event (mmap, task event, sample) in ONE order (samples and mmaps in one list,
task events in another that a flush merges in as it goes); a flush sorts them by time and
file order and walks them in that order, so events with equal timestamps keep their file order (essential for
the many time-0 records perf synthesizes for pre-existing processes). At equal timestamps the
non-sample events are processed before the samples, so a sample sees the state as of its
time (upstream's observable order) - except at time 0, which means "no timestamp": perf
synthesizes its time-0 records before any sample, and a sample at time 0 comes from a
recording without PERF_SAMPLE_TIME (`perf record --per-thread`), whose records perf
processes in file order. Sorted first, the EXIT at the end of such a file would take the
process's mappings from its samples (upstream applies the mmaps after the EXIT, SEMANTICS
§6.4 step 3, and sends the ThreadEnd before the samples). When and how much is flushed
follows upstream's byte accounting (SEMANTICS §6), which `--print-stats` reports; it only
decides *when* events leave the queue, never their relative order, except for events that
arrive too late.

Compiled (setup.py) with the C types of ordering.pxd: the queue's counters are C integers.
"""

from __future__ import annotations

from bisect import insort

SAMPLE, MMAP, TASK = 0, 1, 2
TASK_EVENT_SIZE = 40  # upstream's accounting for one task event (Qt5 build), SEMANTICS §6.1
_U32 = 0xFFFFFFFF


# the counters of `--print-stats`, in output order (SEMANTICS §16)
_COUNTERS = (
    "samples", "mmaps", "rounds", "buffer_flushes", "samples_time_violations",
    "mmaps_time_violations", "max_samples_per_round", "max_mmaps_per_round",
    "max_task_events_per_round", "max_samples_per_flush", "max_mmaps_per_flush",
    "max_task_events_per_flush", "max_buffer_size", "max_total_event_size_per_round", "max_time",
    "max_time_between_rounds", "max_reorder_time",
)


class Stats:
    """The `--print-stats` counters (_COUNTERS), all 0 at first. A plain class: as a dataclass
    it cost ~4 M instructions of every start to make."""

    __slots__ = _COUNTERS

    def __init__(self) -> None:
        for name in _COUNTERS:
            setattr(self, name, 0)

    def render(self) -> str:
        return "".join(f"{name.replace('_', ' ')}: {getattr(self, name)}\n" for name in _COUNTERS)


class EventQueue:
    """Buffers (kind, time, size, event) and hands them to a sink in time order.

    The sink has `mmap(event, late)`, `task(event)`, `sample(event)`,
    `time_order_violation(event_time, max_time)` and `end()` after the last event; with
    sink None the queue only counts (`--print-stats`)."""

    def __init__(self, sink, buffer_size: int, max_buffer_size: int) -> None:
        self.sink = sink
        self._stats = Stats()
        # the counters every event changes, kept here (C integers when compiled) and put into
        # the Stats when they are read (stats)
        self._n_samples = self._n_mmaps = self._max_buffer_size = 0
        self._max_time = self._max_reorder_time = 0
        # (time, sample after the others, seq, kind, size, event): plain tuple order is the
        # processing order (samples after the mmaps/task events of the same non-zero time,
        # file order otherwise), so the flush sorts without a key function; seq is unique,
        # events are never compared
        self._events: list[tuple[int, bool, int, int, int, object]] = []
        self._seq = 0
        self._bytes = 0
        # The task events apart, in the same order: after the last sample a flush hands them
        # out without walking the mmaps that wait for a sample. The first *_in_order of each
        # list are sorted (what the last flush left), so the events added since are inserted,
        # not the queue sorted again; and a flush with no sample and no task event to hand out
        # returns at once. Round ends behind many waiting mmaps stay linear.
        self._task_events: list[tuple[int, bool, int, int, int, object]] = []
        self._events_in_order = self._tasks_in_order = 0
        self._samples = 0
        # target/last/max as upstream initialises them, then the command line (SEMANTICS §6.1)
        self._target, self._last, self._max = 32 << 20, 1 << 20, 1 << 30
        self._set_target(buffer_size)
        self._set_max(max_buffer_size)
        self._last_flush_max_time = 0
        self._violated = False
        self._violating = False  # within the current flush
        self._counts = [0, 0, 0]  # per flush: samples, mmaps, task events handed out
        self.tracepoints = False
        # an exception left a flush half done (what it handed out is still queued): the
        # queue can only be dropped (pipeline.Run.salvage)
        self.broken = False
        # per-round counters
        self._round_samples = self._round_mmaps = self._round_tasks = self._round_bytes = 0
        self._round_start_time = 0

    @property
    def stats(self) -> Stats:
        """The `--print-stats` counters as of now."""
        st = self._stats
        st.samples, st.mmaps = self._n_samples, self._n_mmaps
        st.max_buffer_size = self._max_buffer_size
        st.max_time, st.max_reorder_time = self._max_time, self._max_reorder_time
        return st

    # -- parameters (SEMANTICS §6.1/§6.3) ----------------------------------------------------
    def _set_target(self, size: int) -> None:
        self._last = self._target
        self._target = size
        if size > self._max:
            self._max = size

    def _set_max(self, size: int) -> None:
        self._max = size
        if size < self._target:
            self._set_target(size)

    def perf_version(self, version: bytes | None) -> None:
        """Features step: a perf >= 3.17 writes FINISHED_ROUND, so rely on it."""
        if version and _version_at_least(version, (3, 17)) and not self._violated:
            if not self.tracepoints:
                self._set_target(0)

    def tracepoint_registered(self) -> None:
        """Tracepoint samples are not round-ordered by old perf: go back to size mode."""
        self.tracepoints = True
        if self._target == 0:
            self._set_target(self._last)

    # -- input ---------------------------------------------------------------------------
    def add(self, kind: int, time: int, size: int, event) -> None:
        """An MMAP or TASK event (samples: add_sample)."""
        if kind == MMAP:
            self._n_mmaps += 1
            self._round_mmaps += 1
        else:
            self._round_tasks += 1
            size = TASK_EVENT_SIZE
        self._push(time, kind, size, event)

    def add_sample(self, time: int, size: int, event) -> None:
        self._n_samples += 1
        self._round_samples += 1
        self._push(time, SAMPLE, size, event)

    def _push(self, time: int, kind: int, size: int, event) -> None:
        if time != 0 and time < self._max_time:
            if self._max_time - time > self._max_reorder_time:
                self._max_reorder_time = self._max_time - time
        else:
            self._max_time = time  # a time-0 event resets it, as upstream does (SEMANTICS §16)
        seq = self._seq
        item = (time, kind == SAMPLE and time != 0, seq, kind, size, event)
        if kind == TASK:
            self._task_events.append(item)
        else:
            self._events.append(item)
            if kind == SAMPLE:
                self._samples += 1
        self._seq = seq + 1
        n = self._bytes = self._bytes + size
        self._round_bytes += size
        if n > self._max_buffer_size:
            self._max_buffer_size = n
        if self._target != 0 and n > self._target:
            self._flush(self._target // 2)

    def finished_round(self) -> None:
        self._end_round()
        if self._target == 0:
            self._flush(self._bytes // 2)
        elif not self._violated and not self.tracepoints:
            self._set_target(0)

    def finish(self) -> None:
        """End of input: one more round end, then flush everything."""
        self._end_round()
        if self._target == 0:
            self._flush(self._bytes // 2)
        self._flush(0)
        if self.sink is not None:
            self.sink.end()

    def _end_round(self) -> None:
        st = self._stats
        st.rounds += 1
        st.max_samples_per_round = max(st.max_samples_per_round, self._round_samples)
        st.max_mmaps_per_round = max(st.max_mmaps_per_round, self._round_mmaps)
        st.max_task_events_per_round = max(st.max_task_events_per_round, self._round_tasks)
        st.max_total_event_size_per_round = max(
            st.max_total_event_size_per_round, self._round_bytes
        )
        if self._round_start_time > 0:
            st.max_time_between_rounds = max(
                st.max_time_between_rounds, self._max_time - self._round_start_time
            )
        self._round_start_time = self._max_time
        self._round_samples = self._round_mmaps = self._round_tasks = self._round_bytes = 0

    # -- flushing (SEMANTICS §6.4) -------------------------------------------------------------
    def _flush(self, desired: int) -> None:
        st = self._stats
        st.buffer_flushes += 1
        tasks = self._task_events
        if self._samples == 0 and (not tasks or self._bytes <= desired):
            return  # nothing to hand out
        self.broken = True  # until the flush completes
        events = self._events
        _sort(events, self._events_in_order)
        _sort(tasks, self._tasks_in_order)
        limit = self._last_flush_max_time
        start_bytes = self._bytes
        self._counts = [0, 0, 0]
        self._violating = False
        pending = 0  # events[pending:i] are non-sample events waiting for the next sample
        released = 0  # samples handed out; what _release does for them is inlined (hot)
        sample = self.sink.sample if self.sink is not None else None
        queued = self._samples
        t, n_tasks = 0, len(tasks)  # tasks[:t] handed out
        sample_kind = SAMPLE  # a C int when compiled
        for i, item in enumerate(events):
            if item[3] != sample_kind:
                continue
            if self._bytes <= desired:
                break
            for j in range(pending, i):  # the mmaps before it, with the task events between
                other = events[j]
                while t < n_tasks and tasks[t] < other:
                    self._release(tasks[t], limit)
                    t += 1
                self._release(other, limit)
            while t < n_tasks and tasks[t] < item:
                self._release(tasks[t], limit)
                t += 1
            time = item[0]
            if time < limit:
                if not self._violating:
                    st.samples_time_violations += 1
                self._violating = True
            elif time > self._last_flush_max_time:
                self._last_flush_max_time = time
            self._bytes -= item[4]
            released += 1
            if sample is not None:
                sample(item[5])
            pending = i + 1
            if released == queued:
                break  # no sample left
        self._counts[SAMPLE] += released
        # After the last sample handed out: task events go while over the target (so a final
        # flush(0) sends them all); mmaps stay until a sample needs them, as upstream does.
        while t < n_tasks and self._bytes > desired:
            self._release(tasks[t], limit)
            t += 1
        del events[:pending]
        del tasks[:t]
        self._samples -= released
        self._events_in_order, self._tasks_in_order = len(events), len(tasks)
        self.broken = False
        st.max_samples_per_flush = max(st.max_samples_per_flush, self._counts[SAMPLE])
        st.max_mmaps_per_flush = max(st.max_mmaps_per_flush, self._counts[MMAP])
        st.max_task_events_per_flush = max(st.max_task_events_per_flush, self._counts[TASK])
        if self._violating:
            self._violated = True
            grown = min(self._max, 2 * max(start_bytes, self._last))
            self._set_target(min(grown, _U32))

    def _release(self, item, limit: int) -> None:
        """Hand one event to the sink."""
        time, _after, _seq, kind, size, ev = item
        self._bytes -= size
        self._counts[kind] += 1
        sink = self.sink
        if kind == MMAP and time < limit:
            self._stats.mmaps_time_violations += 1
            self._violating = True
            if sink is not None:
                sink.time_order_violation(time, limit)
        if sink is not None:
            if kind == SAMPLE:
                sink.sample(ev)
            elif kind == MMAP:
                sink.mmap(ev)
            else:
                sink.task(ev)


def _sort(items: list, in_order: int) -> None:
    """Sort `items`, whose first `in_order` are sorted already: a few added are inserted."""
    added = len(items) - in_order
    if 0 < added and added * 16 < in_order:
        tail = items[in_order:]
        del items[in_order:]
        tail.sort()
        for item in tail:
            insort(items, item)
    else:
        items.sort()


def _version_at_least(version: bytes, wanted: tuple[int, ...]) -> bool:
    """Compare the leading numeric dotted components ("4.18.rc3" -> 4.18) with `wanted`.
    (Not a regular expression: this runs in every run, and importing re is ~4 ms of one.)"""
    numbers = []
    for piece in version.split(b"."):
        n = 0
        while n < len(piece) and 48 <= piece[n] <= 57:  # ASCII digits
            n += 1
        if n:
            numbers.append(int(piece[:n]))
        if n == 0 or n < len(piece):
            break
    return bool(numbers) and tuple(numbers) >= wanted
