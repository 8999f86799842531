"""PERF_RECORD_COMPRESSED / COMPRESSED2 payloads (SEMANTICS §14): one zstd stream for the whole
input, fed chunk by chunk; the caller re-frames records, which may straddle chunks."""

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


class ZstdStream:
    """Decompresses the concatenated payloads of all compressed records, in order."""

    def __init__(self) -> None:
        import zstandard  # only compressed recordings need it (its import is ~4 ms)

        self._error = zstandard.ZstdError
        self._dctx = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)

    def feed(self, payload) -> bytes:
        try:
            return self._dctx.decompress(payload)
        except self._error as exc:
            raise PerfDataError(f"zstd decompression failed: {exc}", DATA_ERROR) from None
