"""What grows with the samples of a real program stays within a budget (DESIGN decision 3):
its distinct stacks keep coming (a 100k-sample `perf record -a`: 55 k of them), so the stack
memos of all processes together, a split run's numbered call chains and the stream writer's
packed frames start afresh beyond theirs, and starting afresh changes no byte of the stream."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from perfparser_py import parallel, pipeline, symbolize
from perfparser_py.protocol import writer
from perfparser_py.cli import make_options, parse_args
from perfparser_py.run import run
from tests.synth import PipeWriter

PROCESSES = 30


def _many_stacks(tmp_path: Path, samples: int = 3000) -> Path:
    """Samples of PROCESSES processes whose stacks are drawn from a few hundred addresses:
    the addresses repeat, the stacks hardly ever (a third of the samples repeat one)."""
    rng = random.Random(19)
    w = PipeWriter()
    t = 1
    for pid in range(100, 100 + PROCESSES):
        w.comm(pid, pid, b"p%d" % pid, t)
        w.mmap2(pid, 0x400000, 0x10000, 0, b"/bin/true", t)
        t += 1
    pool = [0x400000 + 16 * rng.randrange(0x1000) for _ in range(300)]
    stacks: list[tuple[int, list[int]]] = []
    for i in range(samples):
        if stacks and i % 3 == 0:
            pid, chain = rng.choice(stacks)
        else:
            pid = 100 + rng.randrange(PROCESSES)
            chain = rng.sample(pool, rng.randrange(2, 40))
            stacks.append((pid, chain))
        w.sample(pid, pid, t, chain[0], chain)
        t += 1
        if i % 250 == 249:
            w.finished_round()
    path = tmp_path / f"stacks{samples}.data"
    path.write_bytes(w.data())
    return path


def _run(path: Path, split: str, monkeypatch) -> tuple[bytes, pipeline.Sink]:
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", split)
    out = io.BytesIO()
    keep: list = []
    assert run(make_options(parse_args(["--input", str(path)])), out, keep=keep) == 0
    return out.getvalue(), keep[0].sink


def _memo_frames(sink: pipeline.Sink) -> int:
    """What the symbolizer's stack memos hold, counted as it counts (a unit per entry)."""
    procs = [*sink.session.processes.values(), *sink.session.exited.values()]
    return sum(len(key[0]) + len(ids) + 1 for p in procs if p.symbols is not None
               for key, ids in p.symbols.chains.items())


@pytest.mark.parametrize("split", ["0", "1"])
def test_stack_memos_of_all_processes_stay_within_their_budget(tmp_path, monkeypatch, split):
    path = _many_stacks(tmp_path)
    unbounded, sink = _run(path, split, monkeypatch)
    held = _memo_frames(sink)
    monkeypatch.setattr(symbolize, "MEMO_FRAMES", held // 8)
    bounded, sink = _run(path, split, monkeypatch)
    assert bounded == unbounded
    assert 0 < _memo_frames(sink) <= held // 8


def test_numbered_chains_of_a_split_run_stay_within_their_budget(tmp_path, monkeypatch):
    """The reading process numbers the distinct chains, this one keeps them by number: both
    start afresh once CHAIN_FRAMES frames are numbered (this side's table shows both)."""
    path = _many_stacks(tmp_path)
    serial, _sink = _run(path, "0", monkeypatch)
    monkeypatch.setattr(parallel, "CHAIN_FRAMES", 500)
    split, sink = _run(path, "1", monkeypatch)
    assert split == serial
    assert 0 < sum(len(c) for c in sink._chain_by_id.values()) <= 500
    assert len(sink._frames_by_id) <= len(sink._chain_by_id)


def test_packed_frames_of_the_stream_writer_stay_within_their_budget(tmp_path, monkeypatch):
    path = _many_stacks(tmp_path)
    unbounded, _sink = _run(path, "0", monkeypatch)
    monkeypatch.setattr(writer, "_MAX_PACKED_FRAMES", 300)
    bounded, sink = _run(path, "0", monkeypatch)
    assert bounded == unbounded
    packed = sink.writer._packed_frames.values()
    assert 0 < sum(len(frames) + 1 for frames, *_entry in packed) <= 300


def test_a_process_running_main_again_keeps_no_earlier_run(tmp_path, capfdbinary):
    """The fuzzer runs cli.main() thousands of times in one process: a run's state must be
    freed when it ends, not left in a cycle that gc.freeze() then keeps forever."""
    import gc
    import weakref

    from perfparser_py import cli

    path = _many_stacks(tmp_path)
    runs: list = []
    real_run = pipeline.Run.__init__

    def tracked(self, *args, **kwargs):
        real_run(self, *args, **kwargs)
        runs.append(weakref.ref(self.sink))

    pipeline.Run.__init__ = tracked
    try:
        for _ in range(2):
            assert cli.main(["--input", str(path), "--output", str(tmp_path / "out")]) == 0
    finally:
        pipeline.Run.__init__ = real_run
    assert len(runs) == 2
    gc.disable()  # what is left must be gone by reference counts alone
    try:
        assert [r() for r in runs] == [None, None]
    finally:
        gc.enable()


def test_the_collector_is_off_during_a_run_and_its_cycles_do_not_grow(tmp_path):
    """cli.main runs without the cyclic collector (every object a run makes would otherwise
    be scanned once) and turns it back on after: what a run leaves in cycles, found by a
    collection after it, is the same few hundred objects whatever the recording's size."""
    import gc

    from perfparser_py import cli

    during: list[bool] = []
    real_run = pipeline.Run.__init__

    def tracked(self, *args, **kwargs):
        during.append(gc.isenabled())
        real_run(self, *args, **kwargs)

    left = []
    pipeline.Run.__init__ = tracked
    try:
        for samples in (300, 3000):
            path = _many_stacks(tmp_path, samples)
            gc.collect()
            assert cli.main(["--input", str(path), "--output", str(tmp_path / "out"),
                             "--no-cache"]) == 0
            assert gc.isenabled()
            left.append(gc.collect())
    finally:
        pipeline.Run.__init__ = real_run
    assert during == [False, False]
    assert left[1] < 1000 and abs(left[1] - left[0]) < 100, left
