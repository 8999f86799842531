"""PERF_RECORD_COMPRESSED / COMPRESSED2 payloads (SEMANTICS §14): one zstd stream for the whole
input, fed record by record and inflated in bounded chunks; the caller frames records as the
chunks come out (a record may straddle chunks)."""

from __future__ import annotations

from .errors import DATA_ERROR, PerfDataError

COMP_ZSTD = 1


def check_feature(compressed: tuple[int, int, int, int, int] | None) -> None:
    """Validate the COMPRESSED feature (version, type, level, ratio, mmap_len) if present."""
    if compressed is None:
        return
    version, ctype, _level, _ratio, mmap_len = compressed
    if version != 0 or ctype != COMP_ZSTD:
        raise PerfDataError(f"unsupported compression version/type: {version}/{ctype}",
                            DATA_ERROR)
    if mmap_len == 0:
        raise PerfDataError("invalid compression information: mmap_len is 0", DATA_ERROR)


# Bounds against decompression bombs (docs/robustness.md). perf decompresses each record into
# a buffer of the feature's mmap_len and fails beyond it: so do we (RECORD_LIMIT without the
# feature, in pipe mode). In all, a run inflates at most RUN_BASE + RUN_RATIO times the
# compressed bytes (perf reaches ~260x on a repetitive recording: corpus `compressed`).
RECORD_LIMIT = 64 << 20
RUN_BASE = 16 << 20
RUN_RATIO = 1024
CHUNK = 256 << 10  # decompressed bytes handed out at a time


class _Exceeded(Exception):
    """Internal: the output passed the limit of the record being decompressed."""


class ZstdStream:
    """Decompresses the concatenated payloads of all compressed records, in order, in chunks
    of at most CHUNK bytes, never more than the bounds above."""

    def __init__(self, mmap_len: int | None = None) -> None:
        import zstandard  # only compressed recordings need it (its import is ~4 ms)

        self._error = zstandard.ZstdError
        # stream_writer hands the output to write() in pieces of write_size as it goes
        self._writer = zstandard.ZstdDecompressor().stream_writer(
            self, write_size=CHUNK, write_return_read=True)
        self.record_limit = min(mmap_len, RECORD_LIMIT) if mmap_len else RECORD_LIMIT
        self._chunks: list[bytes] = []
        self._record_out = 0
        self._compressed = 0
        self._total = 0

    def write(self, data: bytes) -> int:  # the zstandard writer's sink
        self._record_out += len(data)
        if self._record_out > self.record_limit:
            raise _Exceeded
        self._chunks.append(bytes(data))
        return len(data)

    def feed(self, payload) -> list[bytes]:
        """The decompressed output of one record's payload, in chunks."""
        self._chunks = []
        self._record_out = 0
        self._compressed += len(payload)
        try:
            self._writer.write(payload)
        except _Exceeded:
            raise PerfDataError(
                "a compressed record decompresses to more than its buffer size "
                f"({self.record_limit} bytes): a decompression bomb", DATA_ERROR) from None
        except self._error as exc:
            raise PerfDataError(f"zstd decompression failed: {exc}", DATA_ERROR) from None
        self._total += self._record_out
        if self._total > RUN_BASE + RUN_RATIO * self._compressed:
            raise PerfDataError(
                f"compressed records decompress to {self._total} bytes from "
                f"{self._compressed}: more than {RUN_RATIO} times, a decompression bomb",
                DATA_ERROR)
        return self._chunks
