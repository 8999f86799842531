"""JIT runtimes' jit-PID.dump read directly, checked against `perf inject --jit` + `perf script`.

Two writers: a C program of our own that JIT-compiles a function, moves it and compiles
another one at the first one's address, writing what the jitdump specification
(tools/perf/Documentation/jitdump-specification.txt) asks of a runtime; and node's V8 with
--perf-prof. Both are recorded with `perf record -k mono`, as jitdump requires. Names and
source lines must be those perf gives after injecting the dump.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.corpus.expect import decode, run_parser
from tests.e2e.programs import CPU_JS, build_c

JIT_WRITER = r"""
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static FILE *dump;
static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static void prefix(uint32_t id, uint32_t size)
{
    struct { uint32_t id, size; uint64_t ts; } p = {id, size, now()};
    fwrite(&p, sizeof p, 1, dump);
}
/* mov ecx,edi; 1: dec ecx; jnz 1b; mov ecx,edi; 2: dec ecx; jnz 2b; ret */
static const unsigned char CODE[] = {0x89, 0xf9, 0xff, 0xc9, 0x75, 0xfc, 0x89, 0xf9,
                                     0xff, 0xc9, 0x75, 0xfc, 0xc3};
struct line { uint64_t off; int line; const char *file; };
static void debug_info(uint64_t code, const struct line *l, int n)
{
    uint32_t size = 16 + 16;
    for (int i = 0; i < n; i++)
        size += 16 + strlen(l[i].file) + 1;
    prefix(2, size);
    uint64_t head[2] = {code, n};
    fwrite(head, sizeof head, 1, dump);
    for (int i = 0; i < n; i++) {
        struct { uint64_t addr; int32_t line; uint32_t discrim; } e = {code + l[i].off, l[i].line, 0};
        fwrite(&e, sizeof e, 1, dump);
        fwrite(l[i].file, strlen(l[i].file) + 1, 1, dump);
    }
}
static void load(void *code, uint64_t index, const char *name)
{
    prefix(0, 16 + 40 + strlen(name) + 1 + sizeof CODE);
    struct { uint32_t pid, tid; uint64_t vma, addr, size, index; } r = {
        getpid(), syscall(SYS_gettid), (uintptr_t)code, (uintptr_t)code, sizeof CODE, index};
    fwrite(&r, sizeof r, 1, dump);
    fwrite(name, strlen(name) + 1, 1, dump);
    fwrite(CODE, sizeof CODE, 1, dump);
    fflush(dump);
}
static void move(void *from, void *to, uint64_t index)
{
    prefix(1, 16 + 48);
    struct { uint32_t pid, tid; uint64_t vma, old, new_, size, index; } r = {
        getpid(), syscall(SYS_gettid), (uintptr_t)to, (uintptr_t)from, (uintptr_t)to, sizeof CODE, index};
    fwrite(&r, sizeof r, 1, dump);
    fflush(dump);
}
static void *place(void *at)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!at)
        at = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else
        mprotect(at, page, PROT_READ | PROT_WRITE);
    memcpy(at, CODE, sizeof CODE);
    mprotect(at, page, PROT_READ | PROT_EXEC);
    return at;
}
static void run(void *code, double seconds)
{
    uint64_t end = now() + seconds * 1e9;
    while (now() < end)
        ((int (*)(int))code)(2000000);
}
int main(int argc, char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "jit-%d.dump", getpid());
    int fd = open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
    dump = fdopen(fd, "w+");
    struct { uint32_t magic, version, size, mach, pad, pid; uint64_t ts, flags; } h = {
        0x4A695444, 1, 40, EM_X86_64, 0, getpid(), now(), 0};
    fwrite(&h, sizeof h, 1, dump);
    fflush(dump);
    /* the marker perf inject (and we) look for */
    mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    double t = argc > 1 ? atof(argv[1]) : 0.4;
    void *a = place(NULL);
    const struct line la[] = {{0, 10, "gen.js"}, {2, 11, "gen.js"}, {6, 20, "other.js"},
                              {8, 21, "\xff"}, {12, 30, "gen.js"}};
    debug_info((uintptr_t)a, la, 5);
    load(a, 1, "JS:*alpha gen.js:10");
    run(a, t);
    void *b = place(NULL);
    move(a, b, 1);
    run(b, t);
    place(a);
    /* the last entry before the second loop: its samples are past it whichever of the
       loop's instructions a CPU reports them at (some report only the dec) */
    const struct line lb[] = {{2, 41, "beta.js"}, {7, 42, "beta.js"}};
    debug_info((uintptr_t)a, lb, 2);
    load(a, 2, "JS:*beta beta.js:40");
    run(a, t);
    return 0;
}
"""

_SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d+):\s+([0-9a-f]+) (.*?)(?: \((.*)\))?$")


def _perf_after_inject(data: Path, with_lines: bool) -> dict[tuple[int, int], list]:
    """(tid, time) -> [(symbol, dso, srcline or None), ...] leaf first, after perf inject."""
    injected = data.with_name("injected.data")
    subprocess.run(["perf", "inject", "--jit", "-i", str(data), "-o", str(injected)],
                   check=True, capture_output=True, timeout=300)
    fields = "tid,time,ip,sym,dso" + (",srcline" if with_lines else "")
    out = subprocess.run(["perf", "script", "-i", str(injected), "-F", fields, "--ns"],
                         check=True, capture_output=True, timeout=600).stdout
    samples: dict[tuple[int, int], list] = {}
    frames: list = []
    for raw in out.splitlines():
        line = raw.decode("utf-8", "surrogateescape")
        m = _SAMPLE.match(line)
        if m:  # a sample without call chain: its only frame is on its line
            frames = samples[int(m[1]), int(m[2]) * 10**9 + int(m[3])] = []
            frames.append([m[5], m[6], None])
        elif re.match(r"^\s*(\d+)\s+(\d+)\.(\d+):\s*$", line):
            tid, time = line.split()[:2]
            secs, ns = time.rstrip(":").split(".")
            frames = samples[int(tid), int(secs) * 10**9 + int(ns)] = []
        elif line.startswith("\t"):
            ip_sym = line.strip().split(" ", 1)
            sym, _, dso = ip_sym[1].rpartition(" (") if len(ip_sym) > 1 else ("", "", "")
            frames.append([sym, dso.rstrip(")"), None])
        elif line.startswith("  ") and line.strip() and frames:
            frames[-1][2] = line.strip()
    return samples


def _record(tmp: Path, cmd: list[str], call_graph: list[str]) -> Path:
    data = tmp / "perf.data"
    subprocess.run(["perf", "record", "-q", "-k", "mono", "-F", "2999", *call_graph, "-o",
                    str(data), "--", *cmd], check=True, cwd=tmp, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=120)
    return data


def _ours(data: Path, *options: str) -> tuple[dict[tuple[int, int], list], bytes]:
    res = run_parser(["--input", str(data), *options], timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    samples = {}
    for s in decode(res.stdout)[0]:
        samples[s.tid, s.time] = [
            (f.sym, f.dso, f"{f.chain[0][2]}:{f.chain[0][3]}" if f.chain and f.chain[0][2]
             else None) for f in s.frames]
    return samples, res.stderr


def test_generated_dump_names_and_lines_match_perf_inject(tmp_path: Path) -> None:
    jitgen = build_c(tmp_path, "jitgen", JIT_WRITER, "-O1")
    data = _record(tmp_path, [str(jitgen), "0.3"], [])
    dumps = list(tmp_path.glob("jit-*.dump"))
    assert len(dumps) == 1
    perf = _perf_after_inject(data, with_lines=True)
    ours, stderr = _ours(data)
    assert b"unhandled" not in stderr and stderr == b"", stderr
    assert set(ours) == set(perf)
    seen = set()
    for key, frames in perf.items():
        sym, dso, line = frames[0]
        if not sym.startswith("JS:"):
            continue
        got_sym, got_dso, got_line = ours[key][0]
        assert (got_sym, got_dso) == (sym, dumps[0].name), (key, ours[key], frames)
        if line == "\udcff:21":
            # perf takes the specification's "same file as the previous entry" (a name of
            # one byte 0xff) for a file name; we follow the specification
            line = "other.js:21"
        assert got_line == line, (key, ours[key], frames)
        seen.add((sym, line))
    # both loops of alpha (the second line's file given as "same as before"), in its first
    # place and where it moved; beta, compiled later at alpha's first address, with and
    # without a line (past its last debug entry perf's line table has none)
    assert seen == {("JS:*alpha gen.js:10", "gen.js:11"), ("JS:*alpha gen.js:10", "other.js:21"),
                    ("JS:*beta beta.js:40", "beta.js:41"), ("JS:*beta beta.js:40", None)}

    # a recording moved away from its dump: named again through --perf-map-path
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(data, moved / "perf.data")
    maps = tmp_path / "maps"
    maps.mkdir()
    dumps[0].rename(maps / dumps[0].name)
    lost, stderr = _ours(moved / "perf.data")
    assert stderr.count(b"was not found") == 1
    assert not any(f[0][0] and f[0][0].startswith("JS:") for f in lost.values())
    found, _ = _ours(moved / "perf.data", "--perf-map-path", str(maps))
    assert found == ours


def test_node_perf_prof_matches_perf_inject(tmp_path: Path) -> None:
    if shutil.which("node") is None and not os.environ.get("CI"):
        pytest.skip("needs node")
    (tmp_path / "cpu.js").write_text(CPU_JS)
    data = _record(tmp_path, ["node", "--perf-prof", "--interpreted-frames-native-stack",
                              "cpu.js", "1000"], ["-g"])
    perf = _perf_after_inject(data, with_lines=False)
    ours, stderr = _ours(data, "--app", str(tmp_path))
    assert b"unhandled" not in stderr
    assert set(ours) == set(perf)
    jit = same = 0
    for key, frames in perf.items():
        got = ours[key]
        for i, (sym, dso, _line) in enumerate(frames):
            if "/jitted-" in dso:
                jit += 1
                same += i < len(got) and got[i][0] == sym
    assert jit > 500
    assert same >= 0.99 * jit, (same, jit)
