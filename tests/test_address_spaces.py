"""Process address spaces: the `perf record -a` fork bug, fork + exec, PT_LOAD placement.

Each test builds its binaries with gcc and a pipe-mode perf.data in code (tests/synth.py),
runs the parser and checks which symbol and binary each sample resolves to.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.corpus.expect import decode, run_parser
from perfparser_py.perfdata.abi import (
    CONTEXT_USER,
    SAMPLE_CALLCHAIN,
    SAMPLE_IP,
    SAMPLE_PERIOD,
    SAMPLE_TID,
)
from tests.synth import PipeWriter

BASE = 0x555555554000
LIB = 0x7F0000000000


def _build(tmp: Path, name: str, source: str, *flags: str) -> tuple[Path, dict[str, int]]:
    src = tmp / f"{name}.c"
    src.write_text(source)
    exe = tmp / name
    subprocess.run(["gcc", "-O1", "-g", *flags, "-o", str(exe), str(src)], check=True)
    nm = subprocess.run(["nm", str(exe)], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2]] = int(parts[0], 16)
    return exe, syms


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bins")
    child = _build(tmp, "childprog", "int child_spin(int n){return n*3;}\nint main(){return child_spin(1);}\n")
    parent = _build(tmp, "parentprog", "int parent_work(int n){return n+1;}\nint main(){return parent_work(1);}\n")
    return tmp, child, parent


def _decoded(data: bytes, app: Path, name: str = "in.data"):
    """(samples, stream) of the parser's run on `data` with `app` as --app."""
    inp = app / name
    inp.write_bytes(data)
    res = run_parser(["--input", str(inp), "--app", str(app), "--kallsyms", "/dev/null"], timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    return decode(res.stdout)


def _symbols_of(data: bytes, app: Path) -> list[tuple[int, str | None, str | None]]:
    samples, _ = _decoded(data, app)
    return [(s.pid, s.frames[0].sym, s.frames[0].dso) for s in samples]


def test_synthesized_fork_keeps_childs_own_maps(binaries):
    """perf -a: the child's time-0 MMAP2s come first, then its time-0 FORK from pid 1 whose
    maps differ. Upstream replaces the child's maps with pid 1's; we must not."""
    tmp, (child, csyms), (parent, psyms) = binaries
    w = PipeWriter()
    w.comm(1, 1, b"init", 0)
    w.mmap2(1, BASE, 0x5000, 0, str(parent).encode(), 0)
    w.mmap2(100, BASE, 0x5000, 0, str(child).encode(), 0)
    w.fork(100, 1, 0)
    w.comm(100, 100, b"childprog", 0)
    w.finished_round()
    for t in range(10, 60, 10):
        w.sample(100, 100, t, BASE + csyms["child_spin"])
        w.sample(1, 1, t + 1, BASE + psyms["parent_work"])
    result = _symbols_of(w.data(), tmp)
    assert [r for r in result if r[0] == 100] == [(100, "child_spin", "childprog")] * 5
    assert [r for r in result if r[0] == 1] == [(1, "parent_work", "parentprog")] * 5


def test_real_fork_inherits_then_exec_purges(binaries):
    tmp, (child, csyms), (parent, psyms) = binaries
    w = PipeWriter()
    w.comm(200, 200, b"parentprog", 1)
    w.mmap2(200, BASE, 0x5000, 0, str(parent).encode(), 1)
    w.mmap2(200, LIB, 0x5000, 0, str(parent).encode(), 2)  # a second mapping, gone after exec
    w.fork(201, 200, 100)
    # before exec the child runs the parent's code (inherited maps)
    w.sample(201, 201, 120, BASE + psyms["parent_work"])
    w.comm(201, 201, b"childprog", 150, exec_=True)
    w.mmap2(201, BASE, 0x5000, 0, str(child).encode(), 150)
    w.sample(201, 201, 200, BASE + csyms["child_spin"])
    w.sample(201, 201, 210, LIB + psyms["parent_work"])  # stale inherited mapping: purged
    w.sample(200, 200, 220, LIB + psyms["parent_work"])  # the parent keeps it
    result = _symbols_of(w.data(), tmp)
    assert result == [
        (201, "parent_work", "parentprog"),
        (201, "child_spin", "childprog"),
        (201, None, None),
        (200, "parent_work", "parentprog"),
    ]


def test_samples_still_in_execve_name_the_old_programs_frames(binaries):
    """The COMM exec and the new program's first MMAPs come while the kernel is still in
    execve: a sample taken there has the old program's user registers (its ip in the old
    libc's execve), and perf names that frame from the old maps. Only until the new program
    runs in user mode: afterwards an old address is in no mapping."""
    tmp, (child, csyms), (parent, psyms) = binaries
    kernel_ip = 0xFFFFFFFF81000000
    old_ip = LIB + psyms["parent_work"]
    w = PipeWriter()
    w.comm(500, 500, b"parentprog", 1)
    w.mmap2(500, LIB, 0x5000, 0, str(parent).encode(), 2)
    w.comm(500, 500, b"childprog", 150, exec_=True)
    w.mmap2(500, BASE, 0x5000, 0, str(child).encode(), 160)
    w.sample(500, 500, 170, kernel_ip, [kernel_ip, CONTEXT_USER, old_ip], kernel=True)
    w.sample(500, 500, 200, BASE + csyms["child_spin"])  # the new program runs
    w.sample(500, 500, 210, kernel_ip, [kernel_ip, CONTEXT_USER, old_ip], kernel=True)
    samples, _ = _decoded(w.data(), tmp, "execve.data")
    assert [[f.sym for f in s.frames] for s in samples] == [
        [None, "parent_work"], ["child_spin"], [None, None]]


def test_samples_after_exit_keep_the_maps_until_the_pid_is_reused(binaries):
    """A task still runs its exit path after its EXIT record; perf -a samples it there and
    perf names those user frames from the dead task's maps. A reused pid starts anew with
    its FORK."""
    tmp, (child, csyms), (parent, psyms) = binaries
    w = PipeWriter()
    w.comm(400, 400, b"childprog", 1)
    w.mmap2(400, BASE, 0x5000, 0, str(child).encode(), 1)
    w.sample(400, 400, 10, BASE + csyms["child_spin"])
    w.exit(400, 20)
    w.sample(400, 400, 21, BASE + csyms["child_spin"])  # still in its exit path
    w.fork(400, 1, 30)  # the pid is reused: nothing of the old process survives
    w.sample(400, 400, 40, BASE + csyms["child_spin"])
    w.finished_round()
    assert _symbols_of(w.data(), tmp) == [
        (400, "child_spin", "childprog"), (400, "child_spin", "childprog"), (400, None, None)]


def test_recording_without_timestamps_keeps_file_order(binaries):
    """`perf record --per-thread` records no TIME: every record is at time 0 and the process's
    EXIT comes last in the file. Processed in file order, the samples keep their mappings and
    the ThreadEnd follows them (sorted first, the EXIT took every user symbol away)."""
    tmp, (child, csyms), _parent = binaries
    w = PipeWriter(sample_type=SAMPLE_IP | SAMPLE_TID | SAMPLE_CALLCHAIN | SAMPLE_PERIOD)
    w.comm(300, 300, b"childprog", 0, exec_=True)
    w.mmap2(300, BASE, 0x5000, 0, str(child).encode(), 0)
    for _ in range(4):
        w.sample(300, 300, 0, BASE + csyms["child_spin"])
    w.exit(300, 0)
    w.finished_round()
    samples, stream = _decoded(w.data(), tmp, "notime.data")
    assert [(s.frames[0].sym, s.frames[0].dso) for s in samples] == [("child_spin", "childprog")] * 4
    kinds = [type(m).__name__ for m in stream.messages if type(m).__name__ in ("Sample", "ThreadEnd")]
    assert kinds == ["Sample"] * 4 + ["ThreadEnd"]


def test_pt_load_with_distinct_offset_deltas(tmp_path):
    """A mapping is placed by the PT_LOAD covering its pgoff, not at addr - pgoff.

    The linker script puts .text at a file offset whose delta to its vaddr differs from the
    first segment's, as lld/mold layouts do; the executable mapping is recorded alone."""
    src = tmp_path / "split.c"
    src.write_text("int hot(int n){return n*5;}\nint main(){return hot(2);}\n")
    exe = tmp_path / "split"
    subprocess.run(["gcc", "-O1", "-g", "-Wl,-z,separate-code", "-Wl,-z,max-page-size=0x1000",
                    "-Wl,--section-start=.text=0x7000", "-pie", "-fpie", "-o", str(exe), str(src)],
                   check=True)
    from perfparser_py.elf.image import ElfImage

    image = ElfImage.open(str(exe))
    deltas = {off - vaddr for vaddr, _memsz, off, _filesz in image.segments}
    assert len(deltas) > 1, "test binary must have PT_LOADs with different offset deltas"
    nm = subprocess.run(["nm", str(exe)], check=True, capture_output=True, text=True).stdout
    hot = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" hot"))
    seg = next(s for s in image.segments if s[0] <= hot < s[0] + s[1])
    vaddr, memsz, off, _ = seg
    page = vaddr & ~0xFFF
    pgoff = off - (vaddr - page)
    w = PipeWriter()
    w.comm(300, 300, b"split", 1)
    w.mmap2(300, BASE + page, (memsz + 0xFFF) & ~0xFFF, pgoff, str(exe).encode(), 1)
    w.sample(300, 300, 10, BASE + hot)
    result = _symbols_of(w.data(), tmp_path)
    assert result == [(300, "hot", "split")]


def test_missing_file_is_reported_once(tmp_path):
    from perfparser_py import diagnostics
    from perfparser_py import protocol as P

    w = PipeWriter()
    for pid in (400, 401, 402):
        w.comm(pid, pid, b"prog", 1)
        w.mmap2(pid, BASE, 0x5000, 0, b"/nonexistent/libmissing.so", 1)
        w.sample(pid, pid, 10 + pid, BASE + 0x1000)
    inp = tmp_path / "in.data"
    inp.write_bytes(w.data())
    res = run_parser(["--input", str(inp), "--kallsyms", "/dev/null"], timeout=60)
    assert res.returncode == 0
    errors = [m for m in P.read_stream(res.stdout).messages if isinstance(m, P.Error)
              and not m.message.startswith(diagnostics.PREFIX)]  # the end-of-run report
    assert [e.code for e in errors] == [2]
    assert "/nonexistent/libmissing.so" in errors[0].message
    assert res.stderr.decode().count("MissingElfFile") == 1


def test_kallsyms_from_the_build_id_cache(tmp_path):
    """Without --kallsyms, perf's build-id cache copy of the recording kernel's kallsyms wins."""
    import gzip

    from perfparser_py.perfdata import events as ev
    from perfparser_py.perfdata.reader import PerfReader
    from perfparser_py.source import open_source
    from tests.corpus.expect import CORPUS

    data = CORPUS / "recorded" / "kernel" / "perf.data"
    features = next(e.features for e in PerfReader(open_source(str(data), None, 0)).events()
                    if isinstance(e, ev.FeaturesEvent))
    bid = next(b for _p, b, name in features.build_ids if name == b"[kernel.kallsyms]")
    cache = tmp_path / "debug" / "[kernel.kallsyms]" / bid.hex()
    cache.mkdir(parents=True)
    (cache / "kallsyms").write_bytes(gzip.decompress((CORPUS / "kallsyms" / "kallsyms.gz").read_bytes()))
    res = run_parser(["--input", str(data), "--app", str(data.parent), "--sysroot",
                      str(tmp_path / "nosysroot") + "/", "--debug", str(tmp_path / "debug")])
    assert res.returncode == 0
    samples, _ = decode(res.stdout)
    kernel_names = {f.sym for s in samples for f in s.frames if f.kernel}
    assert "entry_SYSCALL_64_after_hwframe" in kernel_names


def test_executable_mapped_a_second_time_is_its_own_module(tmp_path):
    """An ET_EXEC whose text is mapped again elsewhere from a file offset inside the segment
    (V8 remaps node's builtins so): each placement resolves by its own bias, and an offset
    into one placement's piece never reuses the location of the same offset into the other
    (the shared cache's key, SEMANTICS §10.1)."""
    exe, syms = _build(tmp_path, "twice", "__attribute__((aligned(4096), noinline)) int far_fn(int n)"
                       "{return n*7;}\nint main(int c, char **v){return far_fn(c);}\n", "-no-pie")
    from perfparser_py.elf.image import ElfImage

    image = ElfImage.open(str(exe))
    assert image.elf_type == 2
    vaddr, memsz, off, _ = next(s for s in image.segments if s[0] <= syms["far_fn"] < s[0] + s[1])
    text = vaddr & ~0xFFF
    first_piece = off & ~0xFFF
    far_off = first_piece + syms["far_fn"] - text  # page-aligned: far_fn is
    assert far_off & 0xFFF == 0 and far_off > first_piece
    at_text_start = image.symbol_at(text)[0]
    assert at_text_start != "far_fn"
    second = LIB + 0x200000
    w = PipeWriter()
    w.comm(500, 500, b"twice", 1)
    w.mmap2(500, text, (memsz + 0xFFF) & ~0xFFF, first_piece, str(exe).encode(), 1)
    w.mmap2(500, second, 0x1000, far_off, str(exe).encode(), 2)
    w.sample(500, 500, 10, text)  # offset 0 into the kernel's piece
    w.sample(500, 500, 11, second)  # offset 0 into the second placement: far_fn
    w.sample(500, 500, 12, syms["far_fn"])  # far_fn at its link address
    w.sample(500, 500, 13, second + 3)
    assert _symbols_of(w.data(), tmp_path) == [
        (500, at_text_start, "twice"), (500, "far_fn", "twice"), (500, "far_fn", "twice"),
        (500, "far_fn", "twice")]


def test_an_mmap2_build_id_picks_the_matching_copy(tmp_path):
    """perf record --buildid-mmap: the MMAP2 carries its file's build id. Of two copies of a
    library found by name, the one with that build id is used, as with the header's table."""
    from perfparser_py.elf.image import ElfImage

    copies = {}
    for name, fn in (("a", "alpha_fn"), ("b", "beta_fn")):
        d = tmp_path / name
        d.mkdir()
        lib, syms = _build(d, "libx.so", f"int {fn}(int n){{return n*7+1;}}\n", "-shared",
                           "-fPIC", "-Wl,--build-id")
        copies[name] = (lib, syms[fn], ElfImage.open(str(lib)).build_id)
    lib_b, beta, bid_b = copies["b"]
    assert copies["a"][2] != bid_b

    def run(build_id):
        w = PipeWriter()
        w.comm(300, 300, b"prog", 1)
        w.mmap2(300, LIB, 0x5000, 0, b"/usr/lib/libx.so", 1, build_id=build_id)
        w.sample(300, 300, 10, LIB + beta)
        inp = tmp_path / "in.data"
        inp.write_bytes(w.data())
        res = run_parser(["--input", str(inp), "--extra", f"{tmp_path / 'a'}:{tmp_path / 'b'}",
                          "--kallsyms", "/dev/null", "--no-cache"], timeout=60)
        assert res.returncode == 0, res.stderr.decode()
        samples, _ = decode(res.stdout)
        return samples[0].frames[0].sym

    assert run(bid_b) == "beta_fn"
    assert run(None) != "beta_fn"  # by name alone the first copy (a's) is taken
