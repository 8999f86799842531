"""The fused SAMPLE decoders (PerfReader(fused=True)) give the same values as the full
SampleEvent, and the same events and errors on damaged input: FusedSample for frame-pointer
samples, and whole SampleEvents for DWARF ones (fast.stacked)."""

from __future__ import annotations

import random

import pytest

from perfparser_py.source import Source
from perfparser_py.perfdata.errors import PerfDataError
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.perfdata.fast import FusedSample
from perfparser_py.source import open_source
from tests.perfdata.perfdata_corpus import CORPUS, corpus_id, good_files


def project(e):
    """What a FusedSample holds of a SampleEvent; other events unchanged."""
    if type(e).__name__ != "SampleEvent":
        return e
    return (e.pid, e.tid, e.time, e.cpu, e.ip, e.id, e.period, e.callchain, e.misc, e.size)


def projected(e):
    """An event as a FusedSample would hold it."""
    return tuple(e) if type(e) is FusedSample else project(e)


def events(source, fused: bool, view=projected) -> tuple[list, str | None]:
    """`view` of every event read, and the error that ended the reading (None if none; the
    number of records skipped for a malformed content when some were)."""
    out: list = []
    reader = PerfReader(source, fused=fused)
    try:
        for e in reader.events():
            out.append(view(e))
    except PerfDataError as exc:
        return out, str(exc)
    return out, f"{reader.skipped} skipped" if reader.skipped else None


@pytest.mark.parametrize("path", good_files(), ids=corpus_id)
def test_fused_equals_full(path):
    fused, err = events(open_source(str(path), None, 0), True)
    full, err_full = events(open_source(str(path), None, 0), False)
    assert (fused, err) == (full, err_full)


def test_fused_used_for_frame_pointer_samples():
    path = CORPUS / "recorded" / "fp" / "perf.data"
    kinds = {type(e) for e in PerfReader(open_source(str(path), None, 0), fused=True).events()}
    assert FusedSample in kinds
    assert not any(k.__name__ == "SampleEvent" for k in kinds)


class _Bytes(Source):
    """A Source over bytes in memory (file mode)."""

    is_stream = False

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._pos = 0

    def read(self, n: int) -> bytes:
        chunk = bytes(self._view[self._pos:self._pos + n])
        self._pos += len(chunk)
        return chunk

    def spool(self, head: bytes):
        return self

    def buffer(self) -> memoryview:
        return self._view


def test_fused_same_errors_on_damaged_samples():
    data = (CORPUS / "recorded" / "fp" / "perf.data").read_bytes()
    rng = random.Random(9)
    # offsets inside the data section, where the SAMPLE records are
    lo = int.from_bytes(data[40:48], "little")
    hi = lo + int.from_bytes(data[48:56], "little")
    errors = 0
    for _ in range(150):
        damaged = bytearray(data)
        at = rng.randrange(lo, hi - 8)
        damaged[at:at + 8] = rng.choice((b"\xff" * 8, rng.randbytes(8), b"\0\0\0\0\0\0\0\x01"))
        fused = events(_Bytes(bytes(damaged)), True)
        full = events(_Bytes(bytes(damaged)), False)
        assert fused == full, at
        errors += fused[1] is not None
    assert errors >= 10  # the mutations do reach the SAMPLE checks


def whole(e):
    """An event whole, a SampleEvent's stack as bytes."""
    if type(e).__name__ == "SampleEvent" and e.stack is not None:
        return e._replace(stack=bytes(e.stack))
    return e


DWARF = CORPUS / "recorded" / "dwarf" / "perf.data"


def test_stacked_decoder_equals_the_full_one():
    fused, err = events(open_source(str(DWARF), None, 0), True, whole)
    assert (fused, err) == events(open_source(str(DWARF), None, 0), False, whole)
    assert sum(e.stack is not None for e in fused if type(e).__name__ == "SampleEvent") > 100


def test_stacked_decoder_same_errors_on_damaged_samples():
    data = DWARF.read_bytes()
    rng = random.Random(11)
    pos = int.from_bytes(data[40:48], "little")
    end = pos + int.from_bytes(data[48:56], "little")
    records = []  # (start, end) of the SAMPLE records
    while pos + 8 <= end:
        kind, size = int.from_bytes(data[pos:pos + 4], "little"), data[pos + 6] | data[pos + 7] << 8
        if kind == 9:
            records.append((pos, pos + size))
        pos += max(size, 8)
    samples = [e for e in events(open_source(str(DWARF), None, 0), False, whole)[0]
               if type(e).__name__ == "SampleEvent"]
    assert len(samples) == len(records)
    fields = []  # where the decoders read a count or size: what their checks are about
    for (start, stop), e in zip(records, samples, strict=True):
        nr = start + 8 + e.attr.plan.prefix.size
        abi = nr + 8 + 8 * len(e.callchain)
        fields += [nr, abi, abi + 8 + 8 * len(e.regs), stop - 8]
    errors = 0
    for _ in range(300):
        damaged = bytearray(data)
        at = rng.choice(fields)
        one_more = (int.from_bytes(data[at:at + 8], "little") + 8) % (1 << 64)  # a word more
        damaged[at:at + 8] = rng.choice((b"\xff" * 8, rng.randbytes(8), b"\0" * 8,
                                         (1 << 20).to_bytes(8, "little"), (3).to_bytes(8, "little"),
                                         one_more.to_bytes(8, "little")))
        fused = events(_Bytes(bytes(damaged)), True, whole)
        assert fused == events(_Bytes(bytes(damaged)), False, whole), at
        errors += fused[1] is not None
    assert errors >= 30  # the mutations do reach the SAMPLE checks (skipped or fatal)
