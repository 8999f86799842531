"""PERF_RECORD_COMPRESSED / COMPRESSED2: one zstd stream, records straddling payloads, pipe
mode without the COMPRESSED feature."""

from __future__ import annotations

import struct

import pytest
import zstandard

from perfparser_py.perfdata.errors import PerfDataError
from perfparser_py.perfdata.events import SampleEvent
from perfparser_py.perfdata.compressed import check_feature
from tests.perfdata.perfdata_corpus import CORPUS, read_file
from tests.perfdata.test_fast_vs_construct import raw_records

PLAIN_TYPES = {64, 65, 66, 67, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80}


def _compressed_record(frame: bytes, version2: bool) -> bytes:
    if version2:
        padded = frame + b"\0" * (-len(frame) % 8)
        return struct.pack("<IHHQ", 83, 0, 16 + len(padded), len(frame)) + padded
    return struct.pack("<IHH", 81, 0, 8 + len(frame)) + frame


def test_records_straddling_compressed_payloads(tmp_path):
    """pipe.data rewritten: header records plain, the rest zstd-compressed in pieces cut in the
    middle of records, alternating COMPRESSED and COMPRESSED2, each piece its own frame."""
    src = CORPUS / "recorded/pipe/pipe.data"
    data = src.read_bytes()
    plain, packed = [data[:16]], bytearray()
    for buf, pos, rtype, _misc, size in raw_records(memoryview(data), False):
        if rtype in PLAIN_TYPES:
            plain.append(bytes(buf[pos:pos + size]))
        else:
            packed += buf[pos:pos + size]
    out = b"".join(plain)
    cctx = zstandard.ZstdCompressor()
    pos, n = 0, 0
    while pos < len(packed):
        piece = bytes(packed[pos:pos + 1001 + 97 * (n % 5)])  # odd sizes: cuts land mid-record
        out += _compressed_record(cctx.compress(piece), version2=n % 2 == 1)
        pos += len(piece)
        n += 1
    assert n > 20
    synthetic = tmp_path / "compressed-pipe.data"
    synthetic.write_bytes(out)

    def records(events):
        return [e for e in events if type(e).__name__ not in ("AttrEvent", "TracingDataEvent")]

    got = read_file(synthetic)
    assert records(got) == records(read_file(src))
    assert sum(isinstance(e, SampleEvent) for e in got) == 499


def test_corrupt_compressed_payload_is_a_data_error(tmp_path):
    data = (CORPUS / "recorded/pipe/pipe.data").read_bytes()
    bad = tmp_path / "bad.data"
    bad.write_bytes(data + _compressed_record(b"\x28\xb5\x2f\xfd" + b"\xff" * 20, False))
    with pytest.raises(PerfDataError) as exc:
        read_file(bad)
    assert exc.value.exit_code == 5 and "zstd" in str(exc.value)


@pytest.mark.parametrize("info", [(1, 1, 1, 1, 1), (0, 2, 1, 1, 1), (0, 1, 1, 1, 0)])
def test_unsupported_compression_feature(info):
    with pytest.raises(PerfDataError) as exc:
        check_feature(info)
    assert exc.value.exit_code == 5


def test_recorded_compressed_file():
    events = read_file(CORPUS / "recorded/compressed/perf.data")
    assert sum(isinstance(e, SampleEvent) for e in events) == 224
