"""PERF_RECORD_COMPRESSED / COMPRESSED2 payloads (SEMANTICS §14): one zstd stream for the whole
input, fed record by record and inflated in bounded chunks; the caller frames records as the
chunks come out (a record may straddle chunks)."""

from __future__ import annotations

from collections.abc import Iterator

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
# feature, in pipe mode), which bounds the memory. There is no bound on a run's total: real
# `perf record -z` recordings of repetitive events inflate as much as a bomb does (9750x and
# 406 records per compressed byte measured, a bomb of FINISHED_ROUNDs 11900x and 1490), so
# the decoded records are processed at the cost of records read from an uncompressed file.
RECORD_LIMIT = 64 << 20
CHUNK = 256 << 10  # decompressed bytes handed out at a time, about
# Input fed to zstd at a time. A zstd block (at most 128 KiB out) takes at least 4 bytes in, so
# one piece inflates to at most 2 MiB: the output is checked and framed as it comes out.
_PIECE = 64


class ZstdStream:
    """Decompresses the concatenated payloads of all compressed records, in order, in chunks
    of about CHUNK bytes, never more than the bounds above."""

    def __init__(self, mmap_len: int | None = None) -> None:
        import zstandard  # only compressed recordings need it (its import is ~4 ms)

        self._error = zstandard.ZstdError
        # decompress() drains all it can from its input: each record's output is complete
        # before the next record is read (a stream writer keeps part of a full output buffer
        # back until more input comes, and at the end of the data it was lost)
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._zstd = self._new()
        self.record_limit = min(mmap_len, RECORD_LIMIT) if mmap_len else RECORD_LIMIT

    def _decompress(self, data) -> bytes:
        """decompress() across frame ends: a decompressobj stops at the end of its frame
        (read_across_frames would not, but needs zstandard 0.22; perf writes one frame per
        record), so a new one takes what follows."""
        zstd = self._zstd
        out = zstd.decompress(data)
        while zstd.eof:
            rest = zstd.unused_data
            zstd = self._zstd = self._new()
            if not rest:
                break
            out += zstd.decompress(rest)
        return out

    def feed(self, payload) -> Iterator[bytes]:
        """The decompressed output of one record's payload, in chunks, as it comes out."""
        decompress = self._decompress
        view = memoryview(payload)
        parts: list[bytes] = []
        held = out = 0
        for at in range(0, len(view), _PIECE):
            try:
                data = decompress(view[at:at + _PIECE])
            except self._error as exc:
                raise PerfDataError(f"zstd decompression failed: {exc}", DATA_ERROR) from None
            if not data:
                continue
            out += len(data)
            if out > self.record_limit:
                raise PerfDataError(
                    "a compressed record decompresses to more than its buffer size "
                    f"({self.record_limit} bytes): a decompression bomb", DATA_ERROR)
            parts.append(data)
            held += len(data)
            if held >= CHUNK:
                yield b"".join(parts) if len(parts) > 1 else parts[0]
                parts, held = [], 0
        if parts:
            yield b"".join(parts) if len(parts) > 1 else parts[0]
