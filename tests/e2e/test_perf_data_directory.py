"""perf.data directories (`perf record --threads`), checked sample by sample against `perf script`.

perf writes the header and its synthesized records to DIR/data and what each of its threads
read from the kernel to DIR/data.N, without FINISHED_ROUND records; read through
`--input DIR`, the samples (tid, time, ip) and their stacks must be perf's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from tests.corpus.expect import decode, run_parser
from tests.e2e.test_fresh_recordings import _alias_groups, _libc_files, _perf_script, _same
from tests.e2e.programs import build_c

THREADS = r"""
#include <pthread.h>
#include <stdlib.h>
static volatile long sink;
__attribute__((noipa)) long leaf_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ sink; return s; }
__attribute__((noipa)) long middle(long n) { long r = leaf_work(n); sink++; return r; }
__attribute__((noipa)) void *worker(void *arg) { for (int k = 0; k < 2000; k++) sink += middle(200000 + (long)arg); return 0; }
int main(void)
{
    pthread_t th[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&th[i], 0, worker, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], 0);
    return 0;
}
"""


def _record(tmp: Path, threads: str, extra: list[str]) -> Path:
    exe = build_c(tmp, "threads", THREADS, "-O1", "-g", "-fno-omit-frame-pointer", "-pthread")
    data = tmp / "threads.data"
    subprocess.run(["perf", "record", "-q", "-F", "1999", "-g", threads, *extra,
                    "-o", str(data), "--", str(exe)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    assert data.is_dir() and (data / "data").is_file()
    return data


def _perf_ips(data: Path) -> set[tuple[int, int, int]]:
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "tid,time,ip", "--ns",
                          "--hide-call-graph"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    ips = set()
    for line in out.splitlines():
        tid, time, ip = line.split()
        secs, ns = time.rstrip(":").split(".")
        ips.add((int(tid), int(secs) * 10**9 + int(ns), int(ip, 16)))
    return ips


def _our_ips(stream: bytes) -> set[tuple[int, int, int]]:
    addresses = {}
    ips = set()
    for m in P.read_stream(stream).messages:
        if type(m) is P.Location:
            addresses[m.id] = m.address
        elif type(m) is P.Sample:
            ips.add((m.tid, m.time, addresses[m.frames[0]]))
    return ips


@pytest.mark.parametrize("threads,extra", [("--threads", []), ("--threads=numa", ["-z"])],
                         ids=["per-cpu", "numa-compressed"])
def test_directory_matches_perf_script(tmp_path: Path, threads: str, extra: list[str]) -> None:
    """perf (6.1) writes one data.N per CPU buffer whatever threads spec it is given (numa:
    one perf thread reads them all); -z compresses each file with a zstd stream of its own."""
    data = _record(tmp_path, threads, extra)
    parts = sorted(p.name for p in data.iterdir() if p.name.startswith("data.") and
                   p.stat().st_size)
    assert parts, "perf wrote no data.N"
    res = run_parser(["--input", str(data), "--app", str(tmp_path)], timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert b"unhandled" not in res.stderr and b"violation" not in res.stderr, res.stderr
    ours, _ = decode(res.stdout)
    perf = _perf_script(data)
    assert len(ours) == len(perf) > 300
    assert {(s.tid, s.time) for s in ours} == set(perf)
    assert _our_ips(res.stdout) == _perf_ips(data)
    assert len({s.tid for s in ours}) >= 3
    aliases = _alias_groups(_libc_files())
    wrong = [(s.tid, s.time, [f.sym for f in s.frames], perf[s.tid, s.time]) for s in ours
             if not _same([f.sym for f in s.frames], perf[s.tid, s.time], aliases)]
    assert len(wrong) <= len(ours) // 100, wrong[:5]
    # time order across the files: what the stream says happened, in the order it happened
    times = [s.time for s in ours]
    assert times == sorted(times)


def test_data_file_alone_reads_the_files_beside_it(tmp_path: Path) -> None:
    """hotspot opens files only: given DIR/data, the data.N beside it are read as for DIR
    (perf reads only the records of `data` then, i.e. none of the samples). A `data` without
    them says so in one line and gives what it holds."""
    data = _record(tmp_path, "--threads", [])
    whole = run_parser(["--input", str(data)])
    alone = run_parser(["--input", str(data / "data")])
    assert whole.returncode == alone.returncode == 0
    assert alone.stdout == whole.stdout
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(data / "data", moved / "data")
    res = run_parser(["--input", str(moved / "data")])
    assert res.returncode == 0
    assert res.stderr.count(b"data.N files") == 1
    assert decode(res.stdout)[0] == []


def test_directory_without_data_file(tmp_path: Path) -> None:
    res = run_parser(["--input", str(tmp_path)])
    assert res.returncode == 2
    assert res.stderr.decode().strip() == (
        f"perfparser: Failed to open file {tmp_path}/data: No such file or directory")
