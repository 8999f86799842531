"""Split runs (parallel.py): the two-process pipeline writes exactly what the serial one does."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import parallel, pipeline, reading, split
from perfparser_py.kernel.worker import _read_to_end
from perfparser_py.run import run
from perfparser_py.source import FileSource
from perfparser_py.cli import make_options, parse_args
from tests.corpus.expect import CORPUS, case_options

RECORDED = CORPUS / "recorded"


def _inputs():
    for case in sorted(RECORDED.iterdir()):
        if not (case / "case.toml").is_file():
            continue
        for data in sorted(case.glob("*.data*")):
            yield pytest.param(case, data, id=f"{case.name}-{data.name}")


def _run(args: list[str], split: str) -> subprocess.CompletedProcess:
    """Our parser (the frozen executable when PERFPARSER_EXE is set: it forks too)."""
    env = dict(os.environ, PERFPARSER_PY_SPLIT=split)
    exe = os.environ.get("PERFPARSER_EXE")
    cmd = [exe] if exe else [sys.executable, "-m", "perfparser_py.cli"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, timeout=300)


@pytest.mark.parametrize("case,data", list(_inputs()))
def test_split_run_writes_what_the_serial_run_writes(case: Path, data: Path):
    args = ["--input", str(data)]
    if case.name != "badinput":
        args += case_options(case)
    serial, split = _run(args, "0"), _run(args, "1")
    assert split.returncode == serial.returncode
    assert split.stdout == serial.stdout
    assert len(serial.stdout) > 0 or serial.returncode != 0
    # the same messages (the reading process prints its own, so the order may differ)
    assert sorted(set(split.stderr.splitlines())) == sorted(set(serial.stderr.splitlines()))


def test_small_files_are_not_split_unless_forced(monkeypatch):
    source = type("S", (FileSource,), {"buffer": lambda self: b"x" * 100})
    src = source.__new__(source)
    options = make_options({})
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "")
    assert not split.wanted(options, src)
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "1")
    assert split.wanted(options, src)
    monkeypatch.setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9")  # downloads in one process
    assert not split.wanted(options, src)
    monkeypatch.delenv("DEBUGINFOD_URLS")
    options.print_stats = True
    assert not split.wanted(options, src)


def _run_in_process(monkeypatch, data: Path) -> tuple[int, bytes]:
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "1")
    out = io.BytesIO()
    options = make_options(parse_args(["--input", str(data), *case_options(data.parent)]))
    code = run(options, out)
    return code, out.getvalue()


def test_a_crash_in_the_reading_process_is_an_error_here(monkeypatch):
    def boom(self, e):
        raise ValueError("injected")

    monkeypatch.setattr(parallel._Ahead, "chain", boom)
    with pytest.raises(RuntimeError, match="in the reading process: ValueError: injected"):
        _run_in_process(monkeypatch, RECORDED / "fp" / "perf.data")


def test_a_reading_process_that_dies_is_an_error_here(monkeypatch):
    def die(self, e):
        os._exit(3)

    monkeypatch.setattr(parallel._Ahead, "chain", die)
    with pytest.raises(RuntimeError, match=r"ended unexpectedly \(exit status 3\)"):
        _run_in_process(monkeypatch, RECORDED / "fp" / "perf.data")


def _synthetic(tmp_path: Path) -> Path:
    """Repeated call chains across everything that invalidates their frames: a new mapping
    over the same addresses, an exec, a kernel mapping, and more distinct chains than fit."""
    from perfparser_py.perfdata.abi import CONTEXT_KERNEL, CONTEXT_USER
    from tests.synth import PipeWriter


    w = PipeWriter()
    libc = b"/usr/lib/x86_64-linux-gnu/libc.so.6"
    w.comm(10, 10, b"one", 1)
    w.mmap2(10, 0x400000, 0x10000, 0, b"/bin/true", 2)
    chain = [0x401000, 0x402000, 0x403000]
    t = 10
    for step in range(4):
        for k in range(40):
            if k % 3 == 0:  # kernel frames: their locations change with the kernel's maps
                w.sample(10, 10, t, chain[0], [CONTEXT_KERNEL, 0xFFFF0100, CONTEXT_USER, *chain])
            else:
                w.sample(10, 10, t, chain[0], chain if k % 2 else [*chain, 0x404000 + 8 * k])
            t += 1
        if step == 0:
            w.mmap2(10, 0x400000, 0x10000, 0, libc, t)  # replaces the mapping
        elif step == 1:
            w.comm(10, 10, b"two", t, exec_=True)  # exec: nothing mapped survives
        elif step == 2:
            w.mmap2(-1, 0xFFFF0000, 0x1000, 0, b"[kernel.kallsyms]_text", t)
        t += 1
        w.finished_round()
    path = tmp_path / "chains.data"
    path.write_bytes(w.data())
    return path


@pytest.mark.parametrize("chain_ids", [1 << 16, 8])
def test_numbered_chains_follow_every_invalidation(tmp_path, monkeypatch, chain_ids):
    monkeypatch.setattr(pipeline, "CHAIN_IDS", chain_ids)
    monkeypatch.setattr(parallel, "CHAIN_IDS", chain_ids)
    path = _synthetic(tmp_path)
    outputs = []
    for switch in ("0", "1"):
        monkeypatch.setenv("PERFPARSER_PY_SPLIT", switch)
        out = io.BytesIO()
        code = run(make_options(parse_args(["--input", str(path)])), out)
        outputs.append((code, out.getvalue()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 0 and len(outputs[0][1]) > 1000


def test_sender_keeps_order_and_bounds_what_waits(monkeypatch):
    """What the reading process sends arrives whole and in order; while nobody reads, at most
    _BACKLOG_BYTES (beyond the pipe's own capacity) wait before send() blocks."""
    import threading

    monkeypatch.setattr(parallel, "_BACKLOG_BYTES", 1 << 20)
    rfd, wfd = os.pipe()
    sender = parallel._Sender(wfd)
    blobs = [bytes([i % 251]) * (100_000 + i) for i in range(40)]  # ~4 MB, several pipes' worth
    sent = []

    def send_all():
        for blob in blobs:
            sender.send(blob)
            sent.append(len(blob))

    writer = threading.Thread(target=send_all, daemon=True)
    writer.start()
    writer.join(timeout=2)
    assert writer.is_alive()  # blocked: nobody reads
    assert sum(sent) <= (1 << 20) + 200_000 + (1 << 20)  # backlog + one blob + the pipe
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(_read_to_end(rfd)), daemon=True)
    reader.start()
    writer.join(timeout=60)
    assert not writer.is_alive()
    sender.close()
    os.close(wfd)
    reader.join(timeout=60)
    os.close(rfd)
    assert b"".join(received) == b"".join(blobs)


def test_sender_reports_a_reader_gone():
    """The parent went away: send() or close() raises BrokenPipeError (the reading process
    then ends quietly)."""
    rfd, wfd = os.pipe()
    os.close(rfd)
    sender = parallel._Sender(wfd)
    with pytest.raises(BrokenPipeError):
        for _ in range(100):
            sender.send(b"x" * 100_000)
        sender.close()
    os.close(wfd)


def test_an_unwound_sample_travels_as_the_fields_the_writing_side_reads():
    """A DWARF sample goes as the fields Sink.full_sample reads, the same on arrival, with
    read values, raw data (as bytes) and a branch stack as with none."""
    from perfparser_py.perfdata import events as ev
    from perfparser_py.perfdata.attr import PerfEventAttr

    sent: list = []
    ahead = parallel._Ahead(sent.append, type("R", (), {"unwinds": False})())
    attr = PerfEventAttr(type=1, sample_type=0x3000, sample_regs_user=0xFF)
    e = ev.SampleEvent(attr, 7, 8, 10**12, 1, 0x401000, 0x5000, 42, 43, 1999, (),
                       (0xFFFFFFFFFFFFFF80, 0xFFFFFFFF81000000), None, (), None, 2, (1, 2),
                       memoryview(b"\0" * 8), 5, 6, 7, 96, 2)
    samples = [e, e._replace(read_values=((5, 42),)), e._replace(raw=memoryview(b"abcd")),
               e._replace(branch_stack=((1, 2, 0),))]
    for sample in samples:
        ahead.unwind(sample)
    kinds = [parallel.WIRE[index] for index, _ in sent]
    assert kinds == ["attr", "full", "full", "full", "full"]

    from unittest import mock

    got: list = []
    r = mock.Mock()  # a Run whose sink takes every event as it comes
    r.sink.full_sample = lambda e, outcome=None: got.append((e, outcome))
    replay = parallel._Replay(r)
    for index, args in sent:
        replay.handlers[index](*args)
    for sample, (arrived, outcome) in zip(samples, got, strict=True):
        assert outcome is None
        for name in reading.FULL_SAMPLE_READS:
            if name == "attr":
                assert arrived.attr == attr
            elif name == "raw" and sample.raw is not None:
                assert arrived.raw == bytes(sample.raw)
            else:
                assert getattr(arrived, name) == getattr(sample, name), name
    assert [g[0].read_values for g in got] == [(), ((5, 42),), (), ()]
