"""Deferred user call chains (`perf record --call-graph fp,defer`, Linux 6.19+): a sample's
chain ends in CONTEXT_USER_DEFERRED and a cookie, and a later PERF_RECORD_CALLCHAIN_DEFERRED of
its thread carries the user part. As perf's tools do, the two are joined when the cookies match;
a sample whose user part never comes keeps its kernel frames.

This machine's kernel cannot record them, so the recordings are built in code (tests/synth.py)
around a program built here, whose symbols the user frames must resolve to.
"""

from __future__ import annotations

import pytest

from perfparser_py import deferred_chains
from perfparser_py.deferred_chains import DeferredChains
from perfparser_py.perfdata.abi import CONTEXT_KERNEL, CONTEXT_USER, CONTEXT_USER_DEFERRED
from perfparser_py.perfdata.events import CallchainDeferredEvent
from perfparser_py.perfdata.fast import FusedSample
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.source import open_source
from tests.synth import PipeWriter
from tests.test_address_spaces import BASE, _build, _decoded

PROGRAM = """
__attribute__((noinline)) int leaf(int n) { return n * 3; }
__attribute__((noinline)) int caller(int n) { return leaf(n) + 1; }
int main(void) { return caller(1); }
"""
KERNEL = 0xFFFFFFFF81000000
KERNEL_CHAIN = [CONTEXT_KERNEL, KERNEL + 0x10, KERNEL + 0x20]


@pytest.fixture(params=["0", "1"], ids=["serial", "split"])
def split(request, monkeypatch):
    """Both runs: one process, and the reading process apart from the writing one."""
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", request.param)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deferred")
    exe, syms = _build(tmp, "prog", PROGRAM)
    return tmp, exe, syms


def _start(exe) -> PipeWriter:
    """Process 100 running `exe`, with threads 101 and 102."""
    w = PipeWriter()
    w.comm(100, 100, b"prog", 0)
    w.mmap2(100, BASE, 0x5000, 0, str(exe).encode(), 0)
    for tid in (101, 102):
        w.fork(100, 100, 1, tid=tid)
    w.finished_round()
    return w


def _deferred_sample(w: PipeWriter, tid: int, time: int, cookie: int, user_ip: int = 0):
    """A sample in the kernel, or with `user_ip` one in user space."""
    kernel = not user_ip
    w.sample(100, tid, time, KERNEL + 0x10 if kernel else user_ip,
             chain=[*(KERNEL_CHAIN if kernel else []), CONTEXT_USER_DEFERRED, cookie],
             kernel=kernel)


def _user_chain(syms) -> list[int]:
    return [CONTEXT_USER, BASE + syms["leaf"] + 2, BASE + syms["caller"] + 5]


def _stacks(data: bytes, tmp) -> list[tuple[int, int, int, list[str | None]]]:
    """(tid, time, kernel frames, user function names) of each sample, in stream order."""
    samples, _ = _decoded(data, tmp)
    return [(s.tid, s.time, sum(f.kernel for f in s.frames),
             [f.sym for f in s.frames if not f.kernel]) for s in samples]


def test_samples_get_the_user_chain_of_their_cookie(program, split):
    tmp, exe, syms = program
    w = _start(exe)
    _deferred_sample(w, 100, 10, 7)
    _deferred_sample(w, 101, 12, 8)  # another thread, its chain comes later
    _deferred_sample(w, 100, 15, 7)  # the same kernel entry as the first: the same cookie
    w.finished_round()
    w.callchain_deferred(100, 100, 20, 7, _user_chain(syms))
    # in user space: the whole chain comes later, from the sample's ip on
    _deferred_sample(w, 100, 30, 11, user_ip=_user_chain(syms)[1])
    w.callchain_deferred(100, 100, 31, 11, _user_chain(syms))
    w.callchain_deferred(100, 101, 32, 8, _user_chain(syms)[:2])
    w.finished_round()
    assert _stacks(w.data(), tmp) == [
        (100, 10, 2, ["leaf", "caller"]),
        (100, 15, 2, ["leaf", "caller"]),
        (100, 30, 0, ["leaf", "caller"]),
        (101, 12, 2, ["leaf"]),
    ]


def test_without_their_user_chain_samples_keep_the_kernel_part(program, split):
    """Another cookie (the chain of a later kernel entry: this one's was lost), a thread that
    exits in the kernel, a chain that never comes: kernel frames only, no cookie as a frame,
    each thread's samples before its end."""
    tmp, exe, syms = program
    w = _start(exe)
    _deferred_sample(w, 100, 10, 7)
    _deferred_sample(w, 101, 11, 8)
    _deferred_sample(w, 102, 12, 9)
    w.exit(100, 13, tid=101)
    w.finished_round()
    w.callchain_deferred(100, 100, 20, 6, _user_chain(syms))
    w.finished_round()
    data = w.data()
    assert _stacks(data, tmp) == [
        (101, 11, 2, []),
        (100, 10, 2, []),
        (102, 12, 2, []),
    ]
    _, stream = _decoded(data, tmp)
    kinds = [(type(m).__name__, getattr(m, "tid", None)) for m in stream.messages
             if type(m).__name__ in ("Sample", "ThreadEnd")]
    assert kinds.index(("ThreadEnd", 101)) > kinds.index(("Sample", 101))


def test_the_record_is_read(tmp_path):
    w = PipeWriter()
    w.callchain_deferred(5, 6, 77, 0xC00C1E, [CONTEXT_USER, 0x401000, 0x401100])
    path = tmp_path / "d.data"
    path.write_bytes(w.data())
    events = [e for e in PerfReader(open_source(str(path), None, 0)).events()
              if type(e) is CallchainDeferredEvent]
    assert events == [CallchainDeferredEvent(0xC00C1E, (CONTEXT_USER, 0x401000, 0x401100), 5, 6,
                                             77, 0, 8 + 16 + 24 + 16)]


def _fused(tid: int, time: int, chain: tuple[int, ...]) -> FusedSample:
    return FusedSample((100, tid, time, 0, chain[-3] if len(chain) > 2 else 0, 0, 1, chain, 1,
                        64))


def test_held_samples_are_bounded(monkeypatch):
    """Samples whose chain never comes cannot fill the memory: past HELD_MAX a thread's go on
    (kernel part only), oldest first."""
    monkeypatch.setattr(deferred_chains, "HELD_MAX", 3)
    out = []
    held = DeferredChains(out.append)
    chain = (CONTEXT_KERNEL, KERNEL, CONTEXT_USER_DEFERRED, 5)
    for t in range(3):
        held.hold(_fused(1, t, chain), 1)
    assert out == []
    held.hold(_fused(1, 3, chain), 1)
    assert [(e[2], e[7]) for e in out] == [(t, (CONTEXT_KERNEL, KERNEL)) for t in range(4)]
    held.hold(_fused(2, 4, chain), 2)
    held.release_all()
    assert [e[2] for e in out] == [0, 1, 2, 3, 4]


def test_a_full_sample_is_joined_too():
    """A sample decoded whole (one with a user stack or registers) is joined as a fused one."""
    from perfparser_py.perfdata.events import SampleEvent

    out = []
    held = DeferredChains(out.append)
    e = SampleEvent._make([None, 100, 100, 5, 0, KERNEL, 0, 0, 0, 1, (),
                           (CONTEXT_KERNEL, KERNEL, CONTEXT_USER_DEFERRED, 3), None, (), None,
                           0, (), None, 0, 0, 0, 64, 1])
    held.hold(e, 100)
    held.join(CallchainDeferredEvent(3, (0x401000,), 100, 100, 9, 0, 40))
    assert out == [e._replace(callchain=(CONTEXT_KERNEL, KERNEL, CONTEXT_USER, 0x401000))]
