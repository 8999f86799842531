"""Stream inputs: pipe-mode data trickling through an os.pipe in 1..7-byte writes decodes like
the file; file-format data on a stream is spooled; incomplete tails behave as specified."""

from __future__ import annotations

import io
import os
import random
import threading

import pytest

from perfparser_py.perfdata.events import SampleEvent
from perfparser_py.source import StreamSource
from tests.perfdata.perfdata_corpus import CORPUS, read_file, read_until_error


def trickle(data: bytes, seed: int = 7) -> StreamSource:
    """A StreamSource fed by a thread writing `data` in random 1..7-byte pieces."""
    rfd, wfd = os.pipe()

    def writer() -> None:
        rng = random.Random(seed)
        with os.fdopen(wfd, "wb", buffering=0) as w:
            pos = 0
            while pos < len(data):
                n = rng.randint(1, 7)
                w.write(data[pos:pos + n])
                pos += n

    threading.Thread(target=writer, daemon=True).start()
    return StreamSource(os.fdopen(rfd, "rb", buffering=0))


@pytest.mark.parametrize("case", ["recorded/pipe/pipe.data", "upstream/probe.data.stream",
                                  "upstream/contentsize.data"])
def test_trickled_pipe_equals_file(case):
    path = CORPUS / case
    from_file = read_file(path)
    from_stream, err = read_until_error(trickle(path.read_bytes()))
    assert err is None
    assert from_stream == from_file
    assert any(isinstance(e, SampleEvent) for e in from_stream)


def test_file_format_on_a_stream_is_spooled(capsys):
    path = CORPUS / "recorded/fp/perf.data"
    from_stream, err = read_until_error(StreamSource(io.BufferedReader(
        io.BytesIO(path.read_bytes()))))
    assert err is None
    assert from_stream == read_file(path)
    assert "requires buffering" in capsys.readouterr().err


def test_stream_tail_shorter_than_a_record_header_is_a_clean_eof():
    data = (CORPUS / "recorded/pipe/pipe.data").read_bytes()
    events, err = read_until_error(StreamSource(io.BytesIO(data + b"\x09\0\0\0\0")))
    assert err is None
    assert sum(isinstance(e, SampleEvent) for e in events) == 499


def test_empty_stream_is_a_header_error():
    events, err = read_until_error(StreamSource(io.BytesIO(b"")))
    assert events == [] and err is not None and err.exit_code == 4
