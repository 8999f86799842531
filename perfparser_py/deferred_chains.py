"""Samples whose user call chain comes in a later record (`perf record --call-graph fp,defer`,
Linux 6.19 and later).

With perf_event_attr.defer_callchain the kernel ends a sample's call chain with
CONTEXT_USER_DEFERRED and a cookie, and walks the user stack only when the thread returns to
user space, where its pages may be faulted in: one PERF_RECORD_CALLCHAIN_DEFERRED then carries
that user chain for every sample the thread took with that cookie (all those of one stay in the
kernel). perf's tools hold such a sample until the next deferred chain of its thread and join the
two when the cookies match; a sample whose chain never comes (lost, another cookie, the thread
exited in the kernel, the end of the recording) keeps its kernel part. So do we, handing the
samples of a thread on in the order they were taken.
"""

from __future__ import annotations

from .perfdata.abi import CONTEXT_MAX, CONTEXT_USER
from .perfdata.fast import FusedSample

# samples held at most, over all threads: past it a thread's are handed on with their kernel
# part (a recording whose deferred chains never come must not fill the memory)
HELD_MAX = 1 << 16


def _with_chain(e, chain: tuple[int, ...]):
    """Sample `e` (a FusedSample or SampleEvent) with call chain `chain`."""
    if type(e) is FusedSample:
        return e[:7] + (chain,) + e[8:]  # a FusedSample is a plain tuple
    return e._replace(callchain=chain)


def _chain(e) -> tuple[int, ...]:
    return e[7] if type(e) is FusedSample else e.callchain


def _kernel_part(e):
    """Sample `e` without the CONTEXT_USER_DEFERRED and cookie that end its chain."""
    return _with_chain(e, _chain(e)[:-2])


def _time(e) -> int:
    return e[2] if type(e) is FusedSample else e.time


class DeferredChains:
    """The samples waiting for their user chain, per thread; `deliver` takes each when its
    chain came or will not."""

    def __init__(self, deliver) -> None:
        self._deliver = deliver
        self._held: dict[int, list] = {}  # tid -> samples in the order taken
        self._count = 0

    def hold(self, e, tid: int) -> None:
        """Keep `e`, whose chain ends in CONTEXT_USER_DEFERRED and its cookie."""
        self._held.setdefault(tid, []).append(e)
        self._count += 1
        if self._count > HELD_MAX:
            self.release(tid)

    def join(self, deferred) -> None:
        """A CallchainDeferredEvent: the samples of its thread with its cookie get its user
        chain; the others of that thread go on without one."""
        held = self._held.pop(deferred.tid, None)
        if held is None:
            return
        self._count -= len(held)
        ips = deferred.ips
        if not ips or ips[0] < CONTEXT_MAX:  # the kernel starts it with CONTEXT_USER
            ips = (CONTEXT_USER, *ips)
        for e in held:
            chain = _chain(e)
            self._deliver(_with_chain(e, chain[:-2] + ips) if chain[-1] == deferred.cookie
                          else _kernel_part(e))

    def release(self, tid: int) -> None:
        """Thread `tid`'s samples go on with their kernel part: no user chain will join them."""
        held = self._held.pop(tid, None)
        if held is not None:
            self._count -= len(held)
            for e in held:
                self._deliver(_kernel_part(e))

    def release_all(self) -> None:
        """End of the recording: every sample still held, in time order."""
        held = sorted((e for samples in self._held.values() for e in samples), key=_time)
        self._held.clear()
        self._count = 0
        for e in held:
            self._deliver(_kernel_part(e))
