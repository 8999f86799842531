"""recorded/badinput: each broken file yields what is decodable, then raises PerfDataError with
the documented exit code and a one-line message, quickly."""

from __future__ import annotations

import io
import signal
import sys
import tomllib
from pathlib import Path

import pytest

from perfparser_py.perfdata.errors import PerfDataError
from perfparser_py.perfdata.events import SampleEvent
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.source import StreamSource, open_source
from tests.perfdata.perfdata_corpus import CORPUS, read_until_error

BAD = CORPUS / "recorded/badinput"
# file -> (exit code, message fragment, samples yielded before the error)
EXPECT = {
    "truncated-midrecord.data": (4, "too small to hold perf data", 374),
    "truncated-in-header.data": (4, "too small for perf header", 0),
    "header-only.data": (4, "too small to hold perf data", 0),
    "empty.data": (4, "too small for perf header", 0),
    "bad-magic.data": (4, "invalid magic", 0),
    "data-size-beyond-eof.data": (4, "too small to hold perf data", 749),
    "attr-size-zero.data": (5, "Failed to read attributes", 0),
    "zero-size-record.data": (5, "size 0 < 8", 10),
    "undersized-record.data": (5, "size 4 < 8", 10),
    "truncated-pipe.data": (5, "runs past the end", 249),
    "random-garbage.data": (4, "invalid magic", 0),
}


@pytest.fixture
def time_bound():
    def alarm(*_):
        raise TimeoutError("decoding took too long")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_every_bad_file_is_covered():
    case = tomllib.loads((BAD / "case.toml").read_text())
    assert {e["file"] for e in case["expect"] if e["kind"] == "error"} == {*EXPECT, SKIPPED}


# a record whose framing is sound but whose content is not: skipped and counted, the 20
# samples before it and every one after it are read (expected_differences)
SKIPPED = "callchain-nr-huge.data"


def test_malformed_sample_is_skipped(time_bound):
    reader = PerfReader(open_source(str(BAD / SKIPPED), None, 0))
    samples = sum(isinstance(e, SampleEvent) for e in reader.events())
    assert reader.skipped == 1
    assert samples > 20


def _check(events, err, expected):
    code, fragment, samples = expected
    assert err is not None
    assert err.exit_code == code
    assert fragment in str(err) and "\n" not in str(err)
    assert sum(isinstance(e, SampleEvent) for e in events) == samples


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_bad_file(name, time_bound):
    _check(*read_until_error(open_source(str(BAD / name), None, 0)), EXPECT[name])


def test_truncated_pipe_on_stdin(time_bound):
    stream = StreamSource(io.BytesIO((BAD / "truncated-pipe.data").read_bytes()))
    _check(*read_until_error(stream), (5, "Unexpected end of input", 249))


@pytest.mark.parametrize("name", ["truncated-midrecord.data", "zero-size-record.data"])
def test_bad_file_on_a_stream(name, time_bound):
    """File-format data from a stream is spooled and fails exactly like the file."""
    stream = StreamSource(io.BytesIO((BAD / name).read_bytes()))
    _check(*read_until_error(stream), EXPECT[name])


def test_missing_input_file():
    with pytest.raises(PerfDataError) as exc:
        open_source(str(BAD / "does-not-exist.data"), None, 0)
    assert exc.value.exit_code == 2


@pytest.mark.parametrize(("packer", "fragment"), [
    ("gzip", "gzip-compressed: decompress it first"),
    ("xz", "xz-compressed: decompress it first"),
    ("zstd", "zstd-compressed: decompress it first"),
    ("bz2", "bzip2-compressed: decompress it first"),
])
def test_compressed_recording_is_named(packer, fragment, time_bound):
    """A recording compressed for transfer is said to be one, in the one line of the error
    upstream gives any file that is not a recording (exit 4)."""
    import bz2
    import gzip
    import lzma

    import zstandard

    data = (CORPUS / "recorded/fp/perf.data").read_bytes()[:4096]
    packed = {"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress,
              "zstd": zstandard.ZstdCompressor().compress}[packer](data)
    _check(*read_until_error(StreamSource(io.BytesIO(packed))),
           (4, f"invalid magic: {packed[:8]!r} (not a perf.data file; {fragment})", 0))


def test_other_files_are_not_recordings(time_bound):
    elf = Path(sys.executable).resolve().read_bytes()[:64]
    _check(*read_until_error(StreamSource(io.BytesIO(elf))),
           (4, "(not a perf.data file; an ELF file, not the recording perf record wrote)", 0))
    _check(*read_until_error(StreamSource(io.BytesIO(b"root:x:0:0:root:/root:/bin/sh\n"))),
           (4, "invalid magic: b'root:x:0' (not a perf.data file)", 0))
