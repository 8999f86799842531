"""The records of a perf.data directory (`perf record --threads`) as one time-ordered stream.

perf reads every file of the directory into its one ordered-events queue
(session.c, __perf_session__process_dir_events) and writes no FINISHED_ROUND in this mode:
each data.N holds what one of its threads read from the kernel's buffers, in the kernel's
time order. So the files are merged here by the time of their next record (a k-way merge,
one record per file held), which gives the order perf's queue gives, and the one event queue
behind the reader (DESIGN decision 5) receives a single stream, with a round end after every
ROUND_BYTES of it: rounds let the queue flush as it does for one file, so memory stays
bounded however long the recording. Records of equal time keep the order of their files
(`data` first, then data.N by N). A file whose own order is looser (a perf thread that reads
several CPUs) is sorted within the queue's window, as one perf.data file is.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from . import events as ev
from .fast import FusedSample

ROUND_BYTES = 4 << 20  # merged record bytes between two synthesized round ends
_ROUND = ev.FinishedRoundEvent()


def _time(e) -> int | None:
    """A record's time, None for what is not a record in time (attributes, progress)."""
    if type(e) is FusedSample:
        return e[2]
    return getattr(e, "time", None)


def _size(e) -> int:
    return e[9] if type(e) is FusedSample else getattr(e, "size", 0)


def merged(streams: list[Iterator[object]], sizes: list[int]) -> Iterator[object]:
    """The events of `streams` (one per file, each yielding ProgressEvents for its own file
    of `sizes[i]` bytes) as one stream in time order with one progress for all."""
    total = sum(sizes) or 1
    done = [0.0] * len(streams)  # bytes of each file read, as its own progress says
    next_progress = 0.01
    round_left = ROUND_BYTES
    heap: list[tuple[int, int, object]] = []

    def advance(i: int) -> Iterator[object]:
        """Yield stream i's events up to its next record in time, which goes on the heap."""
        nonlocal next_progress
        for e in streams[i]:
            t = _time(e)
            if t is not None:
                heapq.heappush(heap, (t, i, e))
                return
            kind = type(e)
            if kind is ev.ProgressEvent:
                done[i] = e.fraction * sizes[i]
                fraction = sum(done) / total
                if fraction >= next_progress:
                    yield ev.ProgressEvent(fraction)
                    next_progress = int(fraction * 100 + 1) / 100
            elif kind is not ev.FinishedRoundEvent:  # a round of one file is none of the others
                yield e

    for i in range(len(streams)):
        yield from advance(i)
    while heap:
        _t, i, e = heapq.heappop(heap)
        yield e
        round_left -= _size(e)
        if round_left <= 0:
            yield _ROUND
            round_left = ROUND_BYTES
        yield from advance(i)
