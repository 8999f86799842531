"""The runtime dependencies: their oldest versions are written once for each reader and kept
equal here (pyproject's pins, perfparser_py.dependencies' minima, CI's oldest-versions
constraints); a missing or too-old one ends a run with one line that names it."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import zstandard

from perfparser_py.dependencies import MINIMUM, release
from perfparser_py.perfdata.abi import RECORD_LOST_SAMPLES
from tests.synth import PipeWriter

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "tests" / "oldest-constraints.txt"


def test_pins_minima_and_constraints_agree():
    with open(REPO / "pyproject.toml", "rb") as f:
        pins = tomllib.load(f)["project"]["dependencies"]
    assert sorted(pins) == sorted(f"{dist}>={oldest}" for dist, oldest in MINIMUM.values())
    lines = [ln for ln in CONSTRAINTS.read_text().splitlines() if ln and not ln.startswith("#")]
    assert sorted(lines) == sorted(f"{dist}=={oldest}" for dist, oldest in MINIMUM.values())


@pytest.mark.parametrize("version,expected", [
    ("0.22.0", (0, 22, 0)), ("0.22", (0, 22)), ("4.4.5.dev1", (4, 4, 5)),
    ("2.10.68rc1", (2, 10, 68)), ("", ())])
def test_release(version, expected):
    assert release(version) == expected


def test_release_orders_as_versions_do():
    assert release("0.9.1") < release("0.20") < release("0.20.0") < release("0.21")
    assert release("2.10.68") < release("2.10.70") and release("4.0.2") < release("4.0.10")


KERNEL_IP = 0xFFFFFFFF81000010


def stream() -> bytes:
    """A pipe-mode stream that needs each library: records in a PERF_RECORD_COMPRESSED
    (zstandard), a kernel sample whose symbols go through the persistent cache (lz4), a
    LOST_SAMPLES record, one of those decoded by their construct declarations."""
    inner = PipeWriter()
    inner.comm(10, 10, b"inner", 1)
    inner.sample(10, 10, 2, KERNEL_IP, kernel=True)
    w = PipeWriter()
    w.comm(10, 10, b"outer", 0)
    w.record(81, zstandard.ZstdCompressor().compress(inner.data()[len(w.data()):]),
             sample_id=False)
    w.record(RECORD_LOST_SAMPLES, struct.pack("<Q", 1), 10, 10, 3)
    return w.data()


FAKES = {
    # a module without the API the parser calls: what an old release lacks
    "too old": "__version__ = {version!r}\n",
    # a module that is not there (None in sys.modules: its import raises ImportError)
    "missing": None,
}


def run(tmp_path: Path, prelude: str = "") -> subprocess.CompletedProcess:
    """The command line on stream(), its kernel symbols from a kallsyms file and the cache in
    tmp_path, with tmp_path/fakes first on the module path and `prelude` run first."""
    data = tmp_path / "in.data"
    data.write_bytes(stream())
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text(f"{KERNEL_IP - 0x10:016x} T kernel_function\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fakes"), str(REPO)]),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    for name in ("PERFPARSER_TRACEBACK", "PERFPARSER_NO_CACHE"):
        env.pop(name, None)
    code = prelude + "from perfparser_py.cli import entry; entry()"
    return subprocess.run([sys.executable, "-c", code, "--input", str(data), "--output",
                           str(tmp_path / "out"), "--kallsyms", str(kallsyms)],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", sorted(MINIMUM))
@pytest.mark.parametrize("kind", sorted(FAKES))
def test_a_missing_or_too_old_library_is_named(tmp_path, module, kind):
    dist, oldest = MINIMUM[module]
    old = ".".join(map(str, (*release(oldest)[:-1], release(oldest)[-1] - 1)))
    prelude = ""
    if FAKES[kind] is None:
        prelude = f"import sys; sys.modules[{module!r}] = None; "
    else:
        (tmp_path / "fakes" / module).mkdir(parents=True)
        (tmp_path / "fakes" / module / "__init__.py").write_text(
            FAKES[kind].format(version=old))
    res = run(tmp_path, prelude)
    found = "not installed" if kind == "missing" else f"found {old}"
    fix = "pip install" if kind == "missing" else "pip install -U"
    assert res.stderr.splitlines()[-1:] == [
        f"perfparser: needs {dist} >= {oldest} ({found}): {fix} '{dist}>={oldest}'"], res.stderr
    assert res.returncode == 7 and "Traceback" not in res.stderr


def test_the_real_libraries_read_the_stream(tmp_path):
    """What fails above is the fake library, not the stream: with the real ones the run
    decodes the compressed sample and names its kernel function."""
    res = run(tmp_path)
    assert res.returncode == 0, res.stderr
    assert not re.search("needs|internal error", res.stderr)
    assert b"kernel_function" in (tmp_path / "out").read_bytes()
