"""Code run from a second mapping of an ELF file, checked against `perf script`.

V8 maps node's embedded builtins a second time, from the file that holds them, at an address
of its choosing; the C workload here does the same with its own non-PIE executable. Such a
mapping is placed by the PT_LOAD covering its file offset (DESIGN decision 6), so its frames
must get the names perf gives them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.corpus.expect import decode, run_parser
from tests.e2e.test_fresh_recordings import _alias_groups, _libc_files, _perf_script, _same
from tests.e2e.programs import CPU_JS, build_c

# Maps the executable text segment of its own file again (kernel-chosen address, the
# segment's file offset) and calls a hot function through that copy: no PLT call is made
# from it, since its RIP-relative GOT accesses would miss.
REMAP = r"""
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile unsigned long sink;
__attribute__((noinline)) unsigned long inner_remapped(int n)
{
    unsigned long s = 0;
    for (int i = 0; i < n; i++)
        s += (unsigned long)i * i ^ sink;
    return s;
}
__attribute__((noinline)) unsigned long hot_remapped(int n)
{
    return inner_remapped(n) + inner_remapped(n / 2) + sink;
}
__attribute__((noinline)) void drive(unsigned long (*f)(int), int n) { sink += f(n); }

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
    unsigned long phnum = getauxval(AT_PHNUM), page = sysconf(_SC_PAGESIZE);
    uintptr_t fn = (uintptr_t)hot_remapped;
    for (unsigned long i = 0; i < phnum; i++) {
        const Elf64_Phdr *p = &ph[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || fn < p->p_vaddr
            || fn >= p->p_vaddr + p->p_memsz)
            continue;
        uintptr_t start = p->p_vaddr & ~(page - 1);
        size_t len = p->p_vaddr + p->p_filesz - start;
        int fd = open("/proc/self/exe", O_RDONLY);
        char *second = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
                            p->p_offset & ~(page - 1));
        if (fd < 0 || second == MAP_FAILED)
            return 2;
        unsigned long (*far)(int) = (unsigned long (*)(int))(second + (fn - start));
        for (int r = 0; r < rounds; r++) {
            drive(far, 20000);
            drive(hot_remapped, 2000);  /* a little through the link address too */
        }
        return 0;
    }
    return 3;
}
"""

_MMAP2 = re.compile(r"PERF_RECORD_MMAP2 \d+/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)"
                    r" .*\]: [r-][w-]x\S* (/.+)$")


def _leaves(data: Path) -> tuple[dict[tuple[int, int], tuple[int, str | None]],
                                 list[tuple[str, int, int]]]:
    """perf's sample ips with their names (tid, time) -> (ip, name), and the second
    placements of files: (path, start, end) of every executable mapping of a file whose
    addr - pgoff differs from the file's first one."""
    out = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "tid,time,ip,sym", "--ns", "--hide-call-graph",
         "--show-mmap-events"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    leaves: dict[tuple[int, int], tuple[int, str | None]] = {}
    first_load: dict[str, int] = {}
    placed: list[tuple[str, int, int]] = []
    for line in out.splitlines():
        m = _MMAP2.search(line)
        if m:
            addr, length, pgoff = (int(x, 16) for x in m.groups()[:3])
            path = m.group(4)
            if first_load.setdefault(path, addr - pgoff) != addr - pgoff:
                placed.append((path, addr, addr + length))
            continue
        parts = line.split(None, 3)
        if len(parts) >= 3 and "PERF_RECORD" not in line:
            secs, ns = parts[1].rstrip(":").split(".")
            sym = parts[3].split("+0x")[0].strip() if len(parts) > 3 else "[unknown]"
            leaves[int(parts[0]), int(secs) * 10**9 + int(ns)] = (
                int(parts[2], 16), None if sym == "[unknown]" else sym)
    return leaves, placed


def _parse(data: Path, app: Path) -> list:
    res = run_parser(["--input", str(data), "--app", str(app)], timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return decode(res.stdout)[0]


def _in_second_placement(leaves, placed, sample) -> bool:
    ip = leaves.get((sample.tid, sample.time), (0, None))[0]
    return any(lo <= ip < hi for _path, lo, hi in placed)


@pytest.mark.parametrize("mode", ["fp", "dwarf"])
def test_executable_mapped_twice_matches_perf_script(tmp_path: Path, mode: str) -> None:
    frames = "-fno-omit-frame-pointer" if mode == "fp" else "-fomit-frame-pointer"
    exe = build_c(tmp_path, "remap", REMAP, "-O2", "-g", "-no-pie", frames)
    call_graph = ["-g"] if mode == "fp" else ["--call-graph", "dwarf,16384"]
    data = tmp_path / "remap.data"
    subprocess.run(["perf", "record", "-N", "-q", "-F", "1999", *call_graph, "-o", str(data),
                    "--", str(exe), "30000"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=120)
    leaves, placed = _leaves(data)
    assert [p for p, _lo, _hi in placed] == [str(exe)]
    perf = _perf_script(data)
    ours = _parse(data, tmp_path)
    assert len(ours) == len(perf) > 300
    aliases = _alias_groups(_libc_files())
    second = [s for s in ours if _in_second_placement(leaves, placed, s)]
    assert len(second) > len(ours) / 2
    # perf itself names the code of the second mapping
    named = sum(leaves[s.tid, s.time][1] in ("inner_remapped", "hot_remapped") for s in second)
    assert named >= 0.99 * len(second)
    if mode == "fp":
        same = sum(_same([f.sym for f in s.frames], perf[s.tid, s.time], aliases) for s in ours)
        assert same >= 0.99 * len(ours)
        same = sum(_same([f.sym for f in s.frames], perf[s.tid, s.time], aliases) for s in second)
        assert same >= 0.99 * len(second)
        return
    # DWARF: perf's unwinder stops at the first frame of the second mapping (it finds no CFI
    # for the ET_EXEC there); ours goes on, by the CFI of the PT_LOAD that mapping shows, and
    # gives the stack perf gives for the same calls made through the link address.
    through_link = [perf[s.tid, s.time] for s in ours
                    if not _in_second_placement(leaves, placed, s) and s.frames
                    and s.frames[0].sym == "inner_remapped"]
    assert through_link
    good = 0
    for s in second:
        got = [f.sym for f in s.frames]
        want = perf[s.tid, s.time]
        good += (_same(got[:len(want)], want, aliases)
                 and any(_same(got, full, aliases) for full in through_link))
    assert good >= 0.99 * len(second)


@pytest.mark.skipif(shutil.which("node") is None and not os.environ.get("CI"),
                    reason="needs node (CI installs nodejs)")
def test_node_builtins_mapped_twice_are_named_as_perf_names_them(tmp_path: Path) -> None:
    """`node --perf-basic-prof`: no frame perf names is `??` here. Node 20 (nodesource's
    build) maps its embedded builtins a second time from /usr/bin/node, an ET_EXEC, and a
    third of the samples have their leaf there; Debian's node 18 copies them into anonymous
    memory instead, where perf names nothing either."""
    script = tmp_path / "cpu.js"
    script.write_text(CPU_JS)
    data = tmp_path / "node.data"
    subprocess.run(["perf", "record", "-N", "-q", "-g", "-o", str(data), "--", "node",
                    "--perf-basic-prof", str(script), "1500"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
                   cwd=tmp_path)  # node writes a v8 log
    leaves, placed = _leaves(data)
    perf = _perf_script(data)
    try:
        ours = _parse(data, tmp_path)
    finally:
        for pid in {tid for tid, _time in perf}:
            Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    second = [s for s in ours if _in_second_placement(leaves, placed, s)]
    assert not placed or len(second) >= 20
    leaf_same = sum(s.frames[0].sym == leaves[s.tid, s.time][1] for s in second)
    assert leaf_same >= 0.99 * len(second)
    frames = unnamed_here = 0
    for s in ours:
        want = perf[s.tid, s.time]
        frames += len(want)
        unnamed_here += sum(f.sym is None and w is not None
                            for f, w in zip(s.frames, want, strict=False))
    assert unnamed_here <= 0.001 * frames
