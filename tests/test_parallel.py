"""Split runs (parallel.py): the two-process pipeline writes exactly what the serial one does."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import parallel, pipeline
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
    env = dict(os.environ, PERFPARSER_PY_SPLIT=split)
    return subprocess.run([sys.executable, "-m", "perfparser_py.cli", *args], env=env,
                          capture_output=True, timeout=300)


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
    source = type("S", (parallel.FileSource,), {"buffer": lambda self: b"x" * 100})
    src = source.__new__(source)
    r = type("R", (), {"stats_mode": False,
                       "finder": type("F", (), {"debuginfod": None})()})()
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "")
    assert not parallel.wanted(r, src)
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "1")
    assert parallel.wanted(r, src)
    r.stats_mode = True
    assert not parallel.wanted(r, src)


def _run_in_process(monkeypatch, data: Path) -> tuple[int, bytes]:
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "1")
    out = io.BytesIO()
    options = make_options(parse_args(["--input", str(data), *case_options(data.parent)]))
    code = pipeline.run(options, out)
    return code, out.getvalue()


def test_a_crash_in_the_reading_process_is_an_error_here(monkeypatch):
    def boom(self, e):
        raise ValueError("injected")

    monkeypatch.setattr(parallel._Forwarder, "sample", boom)
    with pytest.raises(RuntimeError, match="in the reading process: ValueError: injected"):
        _run_in_process(monkeypatch, RECORDED / "fp" / "perf.data")


def test_a_reading_process_that_dies_is_an_error_here(monkeypatch):
    def die(self, e):
        os._exit(3)

    monkeypatch.setattr(parallel._Forwarder, "sample", die)
    with pytest.raises(RuntimeError, match="ended unexpectedly"):
        _run_in_process(monkeypatch, RECORDED / "fp" / "perf.data")
