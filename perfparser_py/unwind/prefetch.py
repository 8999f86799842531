"""Loading the start of a sample's stack copy into the CPU's cache before the DWARF walk reads
it (memory.Memory.begin).

The walk reads each frame's words at an address computed from the frame before, so the cache
misses on a stack copy it has not touched yet come one after another. Started together at the
walk's beginning they overlap: 4-11 % less time on the 100k-sample DWARF recordings of the
real-world bench, whose reading process spends it in those misses (docs/performance-log.md,
"Prefetching the stack copy"). Cython has no prefetch, so prefetch.pxd has `lines` in C for
the compiled modules that cimport it; this module stays interpreted, where a walk's reads cost
far more than a cache miss and there is nothing to gain."""

from __future__ import annotations


def lines(stack: memoryview | bytes, n: int) -> None:
    """Start loading the first `n` bytes of `stack` into the cache (compiled); interpreted,
    nothing."""
