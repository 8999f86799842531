"""The time-ordering queue (ordering.py, SEMANTICS §6) on its own: events fed straight in, the
order and the moments they come out, without a recording and without the CLI."""

from __future__ import annotations

from perfparser_py.ordering import MMAP, SAMPLE, TASK, TASK_EVENT_SIZE, EventQueue, \
    _version_at_least


class Sink:
    def __init__(self) -> None:
        self.out: list[tuple[str, object]] = []
        self.violations: list[tuple[int, int]] = []
        self.ended_after: int | None = None  # how many events came before end()

    def sample(self, e) -> None:
        self.out.append(("sample", e))

    def mmap(self, e) -> None:
        self.out.append(("mmap", e))

    def task(self, e) -> None:
        self.out.append(("task", e))

    def time_order_violation(self, time: int, max_time: int) -> None:
        self.violations.append((time, max_time))

    def end(self) -> None:
        self.ended_after = len(self.out)


def _queue(buffer_size: int = 1 << 30, max_buffer_size: int = 1 << 30) -> tuple[EventQueue, Sink]:
    sink = Sink()
    return EventQueue(sink, buffer_size, max_buffer_size), sink


def test_out_of_order_samples_come_out_in_time_order_at_the_end():
    q, sink = _queue()
    for t in (30, 10, 20, 50, 40):
        q.add_sample(t, 100, t)
    assert sink.out == []  # nothing before the buffer is full or the input ends
    assert sink.ended_after is None
    q.finish()
    assert sink.out == [("sample", t) for t in (10, 20, 30, 40, 50)]
    assert sink.ended_after == 5  # told the end once everything is out


def _handed_out(*events: tuple[int, int, int, object]) -> list[tuple[str, object]]:
    """What a queue hands out, once the input ends, of `events` (kind, time, size, event) fed
    in file order."""
    q, sink = _queue()
    for kind, time, size, event in events:
        if kind == SAMPLE:
            q.add_sample(time, size, event)
        else:
            q.add(kind, time, size, event)
    q.finish()
    return sink.out


def test_equal_times_keep_file_order_and_put_other_events_first():
    out = _handed_out((SAMPLE, 5, 100, "s1"), (MMAP, 5, 100, "m"), (SAMPLE, 5, 100, "s2"),
                      (TASK, 5, 0, "t"))
    # at one non-zero time the mmap and the task event apply before the samples see them
    assert out == [("mmap", "m"), ("task", "t"), ("sample", "s1"), ("sample", "s2")]


def test_time_zero_is_file_order():
    """perf's synthesized records and samples without PERF_SAMPLE_TIME: file order."""
    out = _handed_out((SAMPLE, 0, 100, "s1"), (TASK, 0, 0, "exit"), (MMAP, 0, 100, "m"),
                      (SAMPLE, 0, 100, "s2"), (MMAP, 0, 100, "unused"))
    # an mmap after the last sample is never needed: upstream never applies it either
    assert out == [("sample", "s1"), ("task", "exit"), ("mmap", "m"), ("sample", "s2")]


def test_size_mode_flushes_half_the_buffer_when_it_is_full():
    q, sink = _queue(buffer_size=1000)
    for t in range(1, 11):  # 10 x 100 bytes: at the limit, not over it
        q.add_sample(t, 100, t)
    assert sink.out == []
    q.add_sample(11, 100, 11)  # over 1000: out until at most 500 bytes are left
    assert sink.out == [("sample", t) for t in range(1, 7)]
    q.finish()
    assert [e for _, e in sink.out] == list(range(1, 12))


def test_a_round_end_flushes_half_once_perf_writes_rounds():
    """perf >= 3.17 writes FINISHED_ROUND: the queue stops flushing by size and flushes at
    each round end, down to half of what it holds (upstream's rule, SEMANTICS §6.3)."""
    q, sink = _queue(buffer_size=300)
    q.perf_version(b"6.1.0")
    for t in (40, 10, 30, 20):  # 400 bytes: no size flush in round mode
        q.add_sample(t, 100, t)
    assert sink.out == []
    q.finished_round()
    assert sink.out == [("sample", 10), ("sample", 20)]
    q.finish()
    assert [e for _, e in sink.out] == [10, 20, 30, 40]
    assert q.stats.rounds == 2 and q.stats.samples == 4


def test_tracepoints_go_back_to_size_mode():
    q, sink = _queue(buffer_size=300)
    q.perf_version(b"6.1")
    q.tracepoint_registered()
    for t in range(1, 5):
        q.add_sample(t, 100, t)
    assert sink.out  # over 300 bytes: flushed by size again


def test_a_late_mmap_is_a_time_order_violation_and_grows_the_buffer():
    q, sink = _queue(buffer_size=200, max_buffer_size=10_000)
    for t in (10, 20, 30):
        q.add_sample(t, 100, t)  # the third passes 200 bytes: 10 and 20 go out
    assert [e for _, e in sink.out] == [10, 20]
    q.add(MMAP, 15, 100, "late")  # older than the last flushed sample
    q.add_sample(40, 100, 40)
    q.finish()
    assert sink.violations == [(15, 20)]
    assert q.stats.mmaps_time_violations == 1
    assert ("mmap", "late") in sink.out


def test_task_events_are_counted_at_their_fixed_size():
    q, _sink = _queue()
    q.add(TASK, 1, 9999, "fork")
    assert q.stats.max_buffer_size == TASK_EVENT_SIZE


def test_stats_mode_only_counts():
    q = EventQueue(None, 200, 1 << 20)
    for t in (3, 1, 2):
        q.add_sample(t, 100, t)
    q.finish()
    assert q.stats.samples == 3 and q.stats.max_reorder_time == 2
    assert SAMPLE == 0


def test_versions_compare_by_their_numeric_prefix():
    assert _version_at_least(b"3.17", (3, 17))
    assert _version_at_least(b"4.18.rc3", (3, 17))
    assert not _version_at_least(b"3.16.9", (3, 17))
    assert not _version_at_least(b"unknown", (3, 17))
    assert _version_at_least(b"3.17a.0", (3, 17))  # the prefix ends inside a component
    assert not _version_at_least(b"3..20", (3, 17))  # ...or at an empty one
    assert not _version_at_least(b"", (3, 17))
