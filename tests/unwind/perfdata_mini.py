"""A tiny perf.data reader for the unwinder tests: file-mode header, first attr, SAMPLE (with
REGS_USER/STACK_USER) and MMAP/MMAP2 records. Enough for corpus recordings, nothing more."""

from __future__ import annotations

import struct
from typing import NamedTuple

SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_ADDR, SAMPLE_READ = 1, 2, 4, 8, 16
SAMPLE_CALLCHAIN, SAMPLE_ID, SAMPLE_CPU, SAMPLE_PERIOD, SAMPLE_STREAM_ID = 32, 64, 128, 256, 512
SAMPLE_RAW, SAMPLE_BRANCH_STACK, SAMPLE_REGS_USER, SAMPLE_STACK_USER = 1024, 2048, 4096, 8192
SAMPLE_IDENTIFIER = 1 << 16


class Sample(NamedTuple):
    pid: int
    ip: int
    abi: int
    regs: tuple[int, ...]
    stack: memoryview


class Mmap(NamedTuple):
    pid: int
    addr: int
    len: int
    pgoff: int
    filename: str


def read(path: str) -> tuple[int, list[Sample], list[Mmap]]:
    """(sample_regs_user, samples, mmaps) of a file-mode perf.data."""
    data = memoryview(open(path, "rb").read())
    assert bytes(data[:8]) == b"PERFILE2"
    _size, attr_size, a_off, _a_size, d_off, d_size = struct.unpack_from("<6Q", data, 8)
    sample_type, = struct.unpack_from("<Q", data, a_off + 24)
    regs_mask, = struct.unpack_from("<Q", data, a_off + 80)
    assert sample_type & SAMPLE_REGS_USER and sample_type & SAMPLE_STACK_USER
    assert not sample_type & (SAMPLE_READ | SAMPLE_RAW | SAMPLE_BRANCH_STACK)
    nregs = bin(regs_mask).count("1")
    samples, mmaps = [], []
    pos, end = d_off, d_off + d_size
    while pos + 8 <= end:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if size == 0:
            break
        body = pos + 8
        if rtype == 9:
            samples.append(_sample(data, body, sample_type, nregs))
        elif rtype in (1, 10):
            pid, _tid, addr, length, pgoff = struct.unpack_from("<IIQQQ", data, body)
            name_at = body + 32 + (32 if rtype == 10 else 0)
            raw = bytes(data[name_at:pos + size])
            mmaps.append(Mmap(pid, addr, length, pgoff, raw[:raw.index(b"\0")].decode()))
        pos += size
    return regs_mask, samples, mmaps


def _sample(data: memoryview, p: int, st: int, nregs: int) -> Sample:
    ip = pid = 0
    if st & SAMPLE_IDENTIFIER:
        p += 8
    if st & SAMPLE_IP:
        ip, = struct.unpack_from("<Q", data, p)
        p += 8
    if st & SAMPLE_TID:
        pid, = struct.unpack_from("<I", data, p)
        p += 8
    for bit in (SAMPLE_TIME, SAMPLE_ADDR, SAMPLE_ID, SAMPLE_STREAM_ID, SAMPLE_CPU, SAMPLE_PERIOD):
        if st & bit:
            p += 8
    if st & SAMPLE_CALLCHAIN:
        n, = struct.unpack_from("<Q", data, p)
        p += 8 + 8 * n
    abi, = struct.unpack_from("<Q", data, p)
    p += 8
    regs: tuple[int, ...] = ()
    if abi:
        regs = struct.unpack_from(f"<{nregs}Q", data, p)
        p += 8 * nregs
    size, = struct.unpack_from("<Q", data, p)
    p += 8
    stack = data[p:p + size]
    dyn = struct.unpack_from("<Q", data, p + size)[0] if size else 0
    return Sample(pid, ip, abi, regs, stack[:dyn])
