"""Hostile recordings built in code (issue 24): a file-mode writer for synthetic records with
feature sections, and a run of the parser set up as hotspot sets it up (stdout a pipe, stdin
a pipe nobody writes to), bounded in time."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from elftools.elf.elffile import ELFFile

from perfparser_py import protocol as P
from tests.robustness.cli_run import FP, assert_clean, env, parser_cmd
from perfparser_py.perfdata.abi import RECORD_HEADER_ATTR
from tests.synth import PipeWriter

PROG = FP / "hotloop"  # a small real ELF (PIE, with symbols)
BASE = 0x555555554000
PID = 4242
FEAT_BUILD_ID, FEAT_CMDLINE = 2, 11


def symbol(elf: Path, name: str) -> int:
    with open(elf, "rb") as f:
        for sym in ELFFile(f).get_section_by_name(".symtab").iter_symbols():
            if sym.name == name:
                return sym["st_value"]
    raise KeyError(name)


def recording(mapped: list[bytes], samples_per_map: int = 5, prog: bytes | None = None,
              writer: PipeWriter | None = None) -> tuple[PipeWriter, int]:
    """A pipe-mode recording of one process that maps `prog` (a good file, sampled in its
    `main`) and then each of `mapped` (hostile names), with samples in every mapping;
    (writer, number of samples)."""
    w = writer or PipeWriter()
    w.comm(PID, PID, b"victim", 1)
    t, n = 10, 0
    maps = ([prog] if prog else []) + mapped
    for k, path in enumerate(maps):
        addr = BASE + k * 0x100000
        # the executable segment (file offset 0x1000 = vaddr 0x1000 in PROG)
        w.mmap2(PID, addr, 0x1000, 0x1000, path, t)
        ip = addr + (symbol(PROG, "main") - 0x1000 if path == prog else 0x40)
        for _ in range(samples_per_map):
            t += 1
            w.sample(PID, PID, t, ip)
            n += 1
    w.finished_round()
    return w, n


def _section(off: int, size: int) -> bytes:
    return struct.pack("<QQ", off, size)


def file_mode(pipe: bytes, features: dict[int, bytes]) -> bytes:
    """The pipe-mode stream `pipe` (first record: its HEADER_ATTR) as a perf.data file with
    the given feature sections (bit -> section bytes)."""
    rtype, _misc, size = struct.unpack_from("<IHH", pipe, 16)
    assert rtype == RECORD_HEADER_ATTR
    attr = pipe[24:24 + 64]  # VER0 attr of PipeWriter; its one id follows
    data = pipe[16 + size:]
    attrs_at = 104
    attr_size = len(attr) + 16
    ids_at = attrs_at + attr_size
    data_at = ids_at + 8
    table_at = data_at + len(data)
    bits = sorted(features)
    body_at = table_at + 16 * len(bits)
    table, bodies = b"", b""
    for bit in bits:
        table += _section(body_at + len(bodies), len(features[bit]))
        bodies += features[bit]
    words = [0, 0, 0, 0]
    for bit in bits:
        words[bit // 64] |= 1 << (bit % 64)
    header = (b"PERFILE2" + struct.pack("<QQ", 104, attr_size) + _section(attrs_at, attr_size)
              + _section(data_at, len(data)) + _section(0, 0) + struct.pack("<4Q", *words))
    return (header + attr + _section(ids_at, 8) + struct.pack("<Q", 1) + data + table
            + bodies)


def build_id_table(entries: list[tuple[int, bytes, bytes]]) -> bytes:
    """A HEADER_BUILD_ID section: (pid, build id, file name) entries."""
    out = b""
    for pid, bid, name in entries:
        name += b"\0" * (-(len(name) + 1) % 8 + 1)
        out += struct.pack("<IHHi", 0, 0, 36 + len(name), pid) + bid.ljust(24, b"\0") + name
    return out


def strings(values: list[bytes], count: int | None = None) -> bytes:
    """perf's string list (CMDLINE): u32 count, then u32 length + NUL-padded bytes each."""
    out = struct.pack("<I", len(values) if count is None else count)
    for v in values:
        v += b"\0" * (-(len(v) + 1) % 8 + 1)
        out += struct.pack("<I", len(v)) + v
    return out


def _tree_memory_kib():
    """tools/bench's sampler of a process tree's peak RSS (its tree_memory_kib)."""
    mod = sys.modules.get("bench_tool")
    if mod is None:
        path = Path(__file__).resolve().parents[2] / "tools" / "bench"
        loader = importlib.machinery.SourceFileLoader("bench_tool", str(path))
        mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_tool",
                                                                             loader))
        sys.modules["bench_tool"] = mod  # its dataclasses look their module up
        loader.exec_module(mod)
    return mod.tree_memory_kib


class Result:
    def __init__(self, code: int, output: bytes, stderr: str, seconds: float,
                 max_rss: int) -> None:
        self.code, self.output, self.stderr, self.seconds = code, output, stderr, seconds
        self.max_rss = max_rss  # bytes
        self.stream = P.read_stream(output)
        self.samples = sum(isinstance(m, P.Sample) for m in self.stream.messages)

    def symbols(self) -> set[bytes]:
        """The names of the symbols the stream defines."""
        text = {m.id: m.string for m in self.stream.messages if isinstance(m, P.String)}
        return {text.get(m.name) for m in self.stream.messages if isinstance(m, P.Symbol)}


def run(args: list[str], timeout: float, extra_env: dict[str, str] | None = None,
        clean: bool = True) -> Result:
    """The parser on `args` with stdout a pipe and stdin a pipe left open and empty (reading
    either would hang or eat the output), killed after `timeout` seconds; its peak RSS is
    sampled from /proc (VmHWM, and VmRSS over its processes): wait4's ru_maxrss would count
    the RSS this test process had when the parser's exec replaced the copy of it."""
    e = env()
    e.update(extra_env or {})
    rfd, wfd = os.pipe()  # stdin: the write end stays open, so a read blocks
    start = time.monotonic()
    try:
        proc = subprocess.Popen([*parser_cmd(), *args], stdin=rfd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=e)
        outputs: dict[str, bytes] = {}
        readers = [threading.Thread(target=lambda n=n, f=f: outputs.update({n: f.read()}))
                   for n, f in (("out", proc.stdout), ("err", proc.stderr))]
        for t in readers:
            t.start()
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        sample = _tree_memory_kib()
        peak_kib = 0
        while True:
            pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak_kib = max(peak_kib, sample(proc.pid)[0])
            time.sleep(0.005)
        killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        for t in readers:
            t.join()
    finally:
        os.close(rfd)
        os.close(wfd)
    seconds = time.monotonic() - start
    err = outputs["err"]
    if seconds >= timeout:
        raise AssertionError(f"no answer within {timeout} s: {err.decode()[-2000:]}")
    if clean:
        assert_clean(proc.returncode, err, outputs["out"])
    return Result(proc.returncode, outputs["out"], err.decode("utf-8", "replace"), seconds,
                  peak_kib * 1024)
