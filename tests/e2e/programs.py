"""What the e2e tests run under perf: C programs built here with gcc, and node's workload."""

from __future__ import annotations

import subprocess
from pathlib import Path


def build_c(directory: Path, name: str, source: str, *flags: str) -> Path:
    """directory/name, built from the C `source` (kept as directory/name.c) with gcc `flags`."""
    src = directory / f"{name}.c"
    src.write_text(source)
    exe = directory / name
    subprocess.run(["gcc", *flags, "-o", str(exe), str(src)], check=True)
    return exe


# JIT-compiled JavaScript for node: recursion, allocation and sorting (builtins) for as many
# milliseconds as its first argument says
CPU_JS = r"""
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work(ms) {
  let s = 0;
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    s += fib(22);
    const a = [];
    for (let i = 0; i < 2000; i++) a.push({i, v: String(i)});
    a.sort((x, y) => y.i - x.i);
    s += a.length;
  }
  return s;
}
console.log(work(Number(process.argv[2])));
"""
