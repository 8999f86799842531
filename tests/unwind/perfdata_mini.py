"""The SAMPLEs (with REGS_USER/STACK_USER) and MMAP/MMAP2 records of a perf.data, for the
unwinder tests, read by the project's reader (the grammar is declared once, in perfdata)."""

from __future__ import annotations

from typing import NamedTuple

from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.perfdata import events as ev
from perfparser_py.source import open_source


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
    """(sample_regs_user, samples, mmaps) of a perf.data."""
    mask, samples, mmaps = 0, [], []
    for e in PerfReader(open_source(path, None, 0)).events():
        if isinstance(e, ev.AttrEvent) and not mask:
            mask = e.attr.sample_regs_user
        elif isinstance(e, ev.SampleEvent):
            samples.append(Sample(e.pid, e.ip, e.regs_abi, e.regs, e.stack or memoryview(b"")))
        elif isinstance(e, ev.MmapEvent):
            mmaps.append(Mmap(e.pid, e.addr, e.len, e.pgoff, e.filename.decode()))
    return mask, samples, mmaps
