"""Issue 24 rule 5: an internal error (a bug of ours) loses nothing decoded before it: the
samples written before the error are in the stream, then the one-line report and exit 5.

The error is forced by a wrapper script that patches one pipeline stage to raise on its N-th
call and then runs the CLI (no test hook in the product)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfparser_py import protocol as P
from tests.robustness.cli_run import env
from tests.robustness.hostile import PROG, recording

TIMEOUT = 30
FAIL_AT = 40

_WRAPPER = """
import sys
from perfparser_py import cli, parallel, pipeline

target = getattr({module}, {cls!r})
original = getattr(target, {method!r})
calls = [0]

def failing(self, *args):
    calls[0] += 1
    if calls[0] == {fail_at}:
        raise {error}("forced by the test")
    return original(self, *args)

setattr(target, {method!r}, failing)
sys.exit(cli.main(sys.argv[1:]))
"""


def _failing_run(tmp_path, module: str, cls: str, method: str, split: str, error: str):
    """The CLI on a recording of more samples than FAIL_AT, with `module.cls.method` raising
    `error` on its FAIL_AT-th call: (the finished process, the recording's sample count)."""
    w, n = recording([], samples_per_map=200, prog=str(PROG).encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    script = _WRAPPER.format(module=module, cls=cls, method=method, fail_at=FAIL_AT, error=error)
    e = env()
    e["PERFPARSER_PY_SPLIT"] = split
    res = subprocess.run([sys.executable, "-c", script, "--input", str(tmp_path / "pipe.data"),
                          "--app", str(PROG.parent), "--kallsyms", "/dev/null", "--no-cache",
                          "--protocol", "current"],
                         capture_output=True, timeout=TIMEOUT, env=e)
    return res, n


@pytest.mark.parametrize("cls, method, split", [
    ("Sink", "sample", "0"),  # inside a flush of the time-ordering queue
    ("Run", "reader_event", "0"),  # while reading, samples still queued
    ("Sink", "numbered_sample", "1"),  # two processes: the symbolizing one fails
])
def test_samples_before_an_internal_error_are_written(tmp_path, cls, method, split):
    res, n = _failing_run(tmp_path, "pipeline", cls, method, split, "RuntimeError")
    stderr = res.stderr.decode()
    assert res.returncode == 5, stderr
    assert "internal error, please report: RuntimeError: forced by the test" in stderr
    assert "Traceback" not in stderr
    stream = P.read_stream(res.stdout)
    assert not stream.trailing_bytes
    samples = sum(isinstance(m, P.Sample) for m in stream.messages)
    # a Sink method: the calls before the failing one; reader_event: every sample read
    # before it (after the attribute, the comm and the mmap)
    expected = FAIL_AT - 4 if method == "reader_event" else FAIL_AT - 1
    assert samples == expected < n


@pytest.mark.parametrize("module, cls, method, split", [
    ("pipeline", "Sink", "sample", "0"),
    ("parallel", "_Ahead", "chain", "1"),  # in the reading process of a split run
])
def test_memory_refused_is_reported_as_such_after_the_samples_before_it(tmp_path, module, cls,
                                                                         method, split):
    """An allocation refused (ulimit -v, strict overcommit) is the machine's limit, not a bug
    of ours nor a broken install: one line that says so, exit 5, the samples before it."""
    res, n = _failing_run(tmp_path, module, cls, method, split, "MemoryError")
    stderr = res.stderr.decode()
    assert res.returncode == 5, stderr
    assert stderr.strip().splitlines()[-1].startswith("perfparser: out of memory: ")
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert "needs " not in stderr  # not blamed on a dependency
    samples = sum(isinstance(m, P.Sample) for m in P.read_stream(res.stdout).messages)
    assert 0 < samples < n
