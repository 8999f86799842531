"""tools/bench's synthetic set: a small C++ program built here (deep and inlined call paths;
frame pointers on and off; multi-threaded and multi-process variants) recorded at several sizes.

It repeats the same stacks and has almost no DWARF, so it flatters a replaying unwinder: it is
the second set, never the figure of record (the real set, tools/bench_real.py, is).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKLOAD = r"""
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>
static volatile double sink;
static inline double leaf(double x) { return std::sin(x) * std::cos(x); }
static inline double mid(double x, int k) {
    double s = 0;
    for (int i = 0; i < 64; ++i) s += leaf(x + i * k);
    return s;
}
__attribute__((noinline)) double level(int depth, double x) {
    if (depth == 0) return mid(x, 3);
    return depth % 3 ? level(depth - 1, x + 1) + mid(x, depth) * 0.0 : level(depth - 1, x * 0.5);
}
__attribute__((noinline)) void spin(double seconds, int seed) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int n = 0;
    while (std::chrono::steady_clock::now() < end) sink = level(8 + (n++ + seed) % 12, n);
}
int main(int argc, char** argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    int procs = argc > 3 ? atoi(argv[3]) : 1;
    bool parent = true;
    for (int p = 1; p < procs; ++p)
        if (fork() == 0) { parent = false; break; }
    std::vector<std::thread> ts;
    for (int t = 1; t < threads; ++t) ts.emplace_back(spin, seconds, t);
    spin(seconds, 0);
    for (auto& t : ts) t.join();
    if (parent) while (wait(nullptr) > 0) {}
    return 0;
}
"""

# name -> (binary, call graph, frequency, seconds, threads, processes). Samples are about
# f*s*threads*procs; perf's own throttling (perf_cpu_time_max_percent) keeps some files below.
WORKLOADS = {
    "fp-10k": ("work-fp", "fp", 2000, 5, 1, 1),
    "fp-100k": ("work-fp", "fp", 10000, 5, 2, 1),
    "fp-1m": ("work-fp", "fp", 10000, 50, 2, 1),
    "fp-threads-20k": ("work-fp", "fp", 2500, 2, 4, 1),
    "fp-procs-20k": ("work-fp", "fp", 2500, 2, 1, 4),
    "nofp-fp-10k": ("work-nofp", "fp", 2000, 5, 1, 1),
    "dwarf-10k": ("work-nofp", "dwarf", 2000, 5, 1, 1),
    "dwarf-50k": ("work-nofp", "dwarf", 5000, 5, 2, 1),
    "tiny-fp": ("work-fp", "fp", 1000, 0.3, 1, 1),
    "tiny-dwarf": ("work-nofp", "dwarf", 1000, 0.3, 1, 1),
}
SETS = {
    "synthetic": ["fp-10k", "fp-100k", "fp-1m", "fp-threads-20k", "fp-procs-20k", "nofp-fp-10k",
                  "dwarf-10k", "dwarf-50k"],
    "synthetic-quick": ["fp-10k", "fp-threads-20k", "fp-procs-20k", "nofp-fp-10k", "dwarf-10k"],
    "synthetic-tiny": ["tiny-fp", "tiny-dwarf"],
}
FRAME_POINTERS = {"work-fp": "-fno-omit-frame-pointer", "work-nofp": "-fomit-frame-pointer"}


def describe(name: str) -> dict:
    return dict(zip(("binary", "call_graph", "freq", "seconds", "threads", "processes"),
                    WORKLOADS[name], strict=True))


def build(work: Path, exe: str) -> None:
    src = work / "work.cpp"
    if not src.exists() or src.read_text() != WORKLOAD:
        src.write_text(WORKLOAD)
    target = work / exe
    if not target.exists() or target.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["g++", "-O2", "-g", FRAME_POINTERS[exe], "-pthread", str(src), "-o",
                        str(target)], check=True)


def record(work: Path, name: str) -> Path:
    """work/<name>.data, recorded unless it is there already."""
    exe, graph, freq, seconds, threads, procs = WORKLOADS[name]
    out = work / f"{name}.data"
    if out.exists():
        return out
    build(work, exe)
    tmp = work / f"{name}.tmp"
    cmd = ["perf", "record", "-q", "-F", str(freq), "--call-graph", graph, "-o", str(tmp),
           str(work / exe), str(seconds), str(threads), str(procs)]
    print(f"recording {name}: {' '.join(cmd[1:])}", file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tmp.rename(out)
    return out
