"""Which kallsyms names a run's kernel frames (DESIGN.md decision 6): only one of the
recording's kernel, placed where that kernel was.

The rules are checked on KernelSymbols directly (notes files and build-id caches made in
tmp_path), then end to end: the corpus `kernel` case comes from another kernel build than any
machine running the tests, and a fresh `perf record` here comes from the running one. Kernel
names are compared with `perf script`'s, frame by frame.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perfparser_py import cache, cpus, diagnostics
from perfparser_py import protocol as P
from perfparser_py.cache import PersistentCache
from perfparser_py.cli import make_options, parse_args
from perfparser_py.elf.vdso import RUNNING_KERNEL as NOTES
from perfparser_py.kernel import kallsyms
from perfparser_py.kernel.kallsyms import Kallsyms
from perfparser_py.kernel.symbols import (
    KernelSymbols, OwnCopy, likely_path, of_running_kernel, parsed_ahead, running_build_id,
)
from perfparser_py.kernel.worker import KallsymsWorker
from tests.corpus.expect import CORPUS, decode, run_parser
from tests.test_kernel_worker import run_with_worker

KERNEL_CASE = CORPUS / "recorded" / "kernel"
RECORDED_ID = bytes.fromhex("7bdad2f33eb864144f7545c504378f3db829fd87")  # its case.toml
TEXT = 0xFFFFFFFF81000000  # _text of the corpus kallsyms and of the case's kernel MMAP
NEEDS_PERF = pytest.mark.skipif(shutil.which("perf") is None and not os.environ.get("CI"),
                                reason="needs perf (CI has it)")


class _Writer:
    """The Error messages a KernelSymbols sends."""

    def __init__(self) -> None:
        self.errors: list[tuple[int, str]] = []

    def error(self, code: int, message: str) -> None:
        self.errors.append((code, message))


def _notes(path: Path, bid: bytes) -> str:
    """An ELF notes file like /sys/kernel/notes: another note, then the GNU build id."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x06\0\0\0\x04\0\0\0\x01\x01\0\0Linux\0\0\0\0\0\0\0"
                     + b"\x04\0\0\0" + len(bid).to_bytes(4, "little") + b"\x03\0\0\0GNU\0"
                     + bid + bytes(-len(bid) % 4))
    return str(path)


def _cache_copy(debug: Path, bid: bytes, text: bytes = b"ffffffff81000000 T _text\n") -> str:
    copy = debug / "[kernel.kallsyms]" / bid.hex() / "kallsyms"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(text)
    return str(copy)


def _symbols(kallsyms: str | None, sysroot: str, debug: Path,
             recorded: bytes | None) -> KernelSymbols:
    ks = KernelSymbols(_Writer(), kallsyms, sysroot, [str(debug)])
    if recorded is not None:
        ks.build_ids([(0, b"\1" * 20, b"/bin/x"), (-1, recorded, b"[kernel.kallsyms]")])
    return ks


def test_proc_kallsyms_only_for_the_recorded_kernel(tmp_path: Path) -> None:
    other = bytes(range(20))
    notes = _notes(tmp_path / "notes", RECORDED_ID)
    debug = tmp_path / "debug"
    assert _symbols(None, "/", debug, RECORDED_ID).choose(notes) == ("/proc/kallsyms", None)
    # a 16-byte id comes zero-padded to 20 in HEADER_BUILD_ID
    short = _notes(tmp_path / "short", RECORDED_ID[:16])
    assert _symbols(None, "", debug, RECORDED_ID[:16] + bytes(4)).choose(short) == (
        "/proc/kallsyms", None)
    # another kernel: nothing, and a warning that names both ids and the fix
    path, warning = _symbols(None, "/", debug, other).choose(notes)
    assert path is None
    assert other.hex() in warning and RECORDED_ID.hex() in warning and "--kallsyms" in warning
    # ... unless perf's build-id cache has the recording kernel's copy
    copy = _cache_copy(debug, other)
    assert _symbols(None, "/", debug, other).choose(notes) == (copy, None)
    # an unknown running kernel is not the recorded one
    path, warning = _symbols(None, "/", tmp_path, RECORDED_ID).choose(str(tmp_path / "none"))
    assert path is None and "none" in warning and RECORDED_ID.hex() in warning


def test_perfs_copy_of_another_machines_kernel_is_searched_in_place(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """The recording's kernel is not the running one, and perf's build-id cache has its
    kallsyms (`perf archive` unpacked from the recording machine): that copy is the kernel's
    text too, searched in place, with the names its parse gives."""
    monkeypatch.setattr(cache, "_current", None)  # the table itself, no cache record around it
    text = _corpus_kallsyms()
    other = bytes(range(20))  # no running kernel's
    _cache_copy(tmp_path / "debug", other, text)
    ks = _symbols(None, "/", tmp_path / "debug", other)
    ks.kernel_mmap(b"[kernel.kallsyms]_text", TEXT, 1 << 64, TEXT)
    whole = Kallsyms.parse(text)
    _core, image = _image_sample(whole)
    assert [ks.lookup(a) for a in image] == [whole.lookup(a) for a in image]
    assert isinstance(ks._table, kallsyms.SortedKallsyms)


def test_without_a_recorded_kernel_id_proc_kallsyms_with_a_warning(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes", RECORDED_ID)
    path, warning = _symbols(None, "/", tmp_path, None).choose(notes)
    assert path == "/proc/kallsyms" and "no kernel build-id" in warning


def test_a_kernel_mmap2_build_id_is_the_recorded_one(tmp_path: Path) -> None:
    """`perf record --buildid-mmap` writes no build-id table; its kernel MMAP2 names the id."""
    notes = _notes(tmp_path / "notes", RECORDED_ID)
    ks = _symbols(None, "/", tmp_path, None)
    ks.kernel_mmap(b"[kernel.kallsyms]_text", TEXT, TEXT + 0x1000000, TEXT, RECORDED_ID)
    assert ks.choose(notes) == ("/proc/kallsyms", None)
    other = bytes(range(20))
    ks = _symbols(None, "/", tmp_path, None)
    ks.kernel_mmap(b"[kernel.kallsyms]_text", TEXT, TEXT + 0x1000000, TEXT, other)
    path, warning = ks.choose(notes)
    assert path is None and other.hex() in warning
    # a module's MMAP2 id is not the kernel's
    ks = _symbols(None, "/", tmp_path, None)
    ks.kernel_mmap(b"/lib/modules/x/ext4.ko", TEXT, TEXT + 0x1000, 0, other)
    assert "no kernel build-id" in ks.choose(notes)[1]


def test_of_the_running_kernel(tmp_path: Path) -> None:
    """What a vDSO without a recorded build id is taken to be our own by (elf.finder)."""
    notes = _notes(tmp_path / "notes", RECORDED_ID)
    assert of_running_kernel(None, "/", None, notes)  # the recording names none
    assert of_running_kernel(None, "/", RECORDED_ID, notes)
    assert not of_running_kernel(None, "/", bytes(range(20)), notes)
    assert not of_running_kernel(None, str(tmp_path), None, notes)
    assert not of_running_kernel("/k", "/", None, notes)


def test_an_explicit_file_is_trusted(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes", bytes(range(20)))
    assert _symbols("/k", "/", tmp_path, RECORDED_ID).choose(notes) == ("/k", None)
    assert _symbols("/k", "/", tmp_path, None).choose(notes) == ("/k", None)


def test_a_sysroot_pairs_its_proc_with_its_own_notes(tmp_path: Path) -> None:
    """The sysroot is the recording machine's root: the notes beside its /proc/kallsyms say
    which kernel that is (the running kernel's do not); without notes, a copy put there for
    upstream's default path is taken as the recording machine's."""
    host_notes = _notes(tmp_path / "host-notes", RECORDED_ID)
    sysroot = tmp_path / "sysroot"
    (sysroot / "proc").mkdir(parents=True)
    proc = str(sysroot) + "/proc/kallsyms"
    assert _symbols(None, str(sysroot), tmp_path, RECORDED_ID).choose(host_notes)[0] is None
    Path(proc).write_text("ffffffff81000000 T _text\n")
    assert _symbols(None, str(sysroot), tmp_path, RECORDED_ID).choose(host_notes) == (proc, None)
    _notes(sysroot / "sys/kernel/notes", bytes(range(20)))
    path, warning = _symbols(None, str(sysroot), tmp_path, RECORDED_ID).choose(host_notes)
    assert path is None and bytes(range(20)).hex() in warning
    _notes(sysroot / "sys/kernel/notes", RECORDED_ID)
    assert _symbols(None, str(sysroot), tmp_path, RECORDED_ID).choose(host_notes) == (proc, None)


KALLSYMS = (b"ffffffff82000000 T _stext\n"
            b"ffffffff82000000 T _text\n"
            b"ffffffff82000100 T do_work\n"
            b"ffffffff82000200 t helper\n"
            b"ffffffffc0001000 t mod_fn\t[mod]\n")


def test_the_file_is_moved_to_where_the_recorded_kernel_was(tmp_path: Path, capsys) -> None:
    """Another boot (KASLR): the file's _text is 0xffffffff82000000, the recording's
    0xffffffff81000000; core addresses move by the difference, module ones do not (perf
    places modules by their own maps)."""
    path = tmp_path / "kallsyms"
    path.write_bytes(KALLSYMS)
    ks = _symbols(str(path), "/", tmp_path, RECORDED_ID)
    ks.kernel_mmap(b"[kernel.kallsyms]_text", TEXT, TEXT + 0x1000000, TEXT)
    ks.kernel_mmap(b"/lib/modules/mod.ko", 0xFFFFFFFFC0000000, 0xFFFFFFFFC0010000, 0)
    assert ks.lookup(TEXT + 0x105) == (TEXT + 0x100, "do_work", "")
    assert ks.lookup(TEXT + 0x200) == (TEXT + 0x200, "helper", "")
    assert ks.lookup(0xFFFFFFFFC0001010) == (0xFFFFFFFFC0001000, "mod_fn", "[mod]")
    assert ks.lookup(TEXT - 1) is None
    assert ks._writer.errors == [] and capsys.readouterr().err == ""


def test_a_file_without_the_reference_symbol_is_used_as_it_is(tmp_path: Path, capsys) -> None:
    path = tmp_path / "kallsyms"
    path.write_bytes(b"".join(line for line in KALLSYMS.splitlines(keepends=True)
                              if b" _text" not in line))
    ks = _symbols(str(path), "/", tmp_path, RECORDED_ID)
    ks.kernel_mmap(b"[kernel.kallsyms]_text", TEXT, TEXT + 0x1000000, TEXT)
    assert ks.lookup(0xFFFFFFFF82000105) == (0xFFFFFFFF82000100, "do_work", "")
    assert ks.lookup(0xFFFFFFFF82000205) == (0xFFFFFFFF82000200, "helper", "")
    [(code, message)] = ks._writer.errors
    assert code == 3 and "no _text symbol" in message and str(path) in message
    assert capsys.readouterr().err.count("no _text symbol") == 1


def _image_shifted(text: bytes, by: int, extra: bytes) -> bytes:
    """kallsyms text as another boot of its kernel would have it: the image's symbols (lines
    without a module) `by` higher, no module of this boot, and `extra` lines."""
    lines = []
    for line in text.splitlines(keepends=True):
        addr, rest = line.split(b" ", 1)
        if b"\t" not in rest and int(addr, 16):
            lines.append(b"%016x %s" % (int(addr, 16) + by, rest))
    return b"".join(lines) + extra


LIVE = kallsyms.LIVE


def _placed(running: bytes, at: int, path: str | None = None, debug: tuple[str, ...] = (),
            own: OwnCopy | None = None) -> KernelSymbols:
    """The KernelSymbols of a run (`--kallsyms` `path`, `--debug` `debug`, its own copy
    `own`) of a recording of the running kernel, its _text at `at`."""
    ks = KernelSymbols(_Writer(), path, "/", list(debug), own=own)
    ks.build_ids([(-1, running + bytes(20 - len(running)), b"[kernel.kallsyms]")])
    ks.kernel_mmap(b"[kernel.kallsyms]_text", at, 1 << 64, at)
    return ks


def _image_sample(table: Kallsyms) -> tuple[list[int], list[int]]:
    """(Core kernel symbol addresses of `table`, addresses to look up in the image: every
    97th symbol and one past it, and the last but one)."""
    core = [table._addrs[i] for i in range(len(table)) if b"\t" not in table._lines[i]]
    return core, [a + d for a in core[::97] for d in (0, 1)] + [core[-2]]


def _loads(monkeypatch) -> list[str]:
    """The kallsyms files Kallsyms.load reads from now on, in order."""
    loaded: list[str] = []
    real_load = Kallsyms.load

    def load(path: str, worker=None, own=None, in_place=False):
        loaded.append(path)
        return real_load(path, worker, own, in_place)

    monkeypatch.setattr(Kallsyms, "load", staticmethod(load))
    return loaded


@pytest.mark.parametrize("copy_kind", ["another boot", "unusable"])
def test_the_running_kernels_cache_copy_names_its_image(tmp_path: Path, copy_kind: str,
                                                        monkeypatch) -> None:
    """perf's build-id cache copy of the running kernel's kallsyms names the kernel image's
    addresses as /proc/kallsyms does, though written in another boot (KASLR): /proc/kallsyms
    is read only for an address outside the image, where a boot puts modules, BPF programs
    and trampolines. An unusable copy (kptr_restrict zeroed it) leaves all to /proc/kallsyms."""
    running, why = running_build_id(NOTES)
    assert running is not None, why
    text = kallsyms.read(LIVE)[0]
    table = Kallsyms.parse(text)
    at = table.address_of(b"_text")
    assert at is not None  # root sees the addresses (CI runs as root)
    shift = 0x3A00000
    bogus = 0xFFFFFFFFFF000000  # a trampoline only the copy's boot had
    debug = tmp_path / "debug"
    _cache_copy(debug, running, _image_shifted(text, shift, b"%x t bogus\t[gone]\n" % bogus)
                if copy_kind == "another boot" else b"0000000000000000 T _text\n")
    assert likely_path(None, "/", [str(debug)]) == str(
        debug / "[kernel.kallsyms]" / running.hex() / "kallsyms")
    core, image = _image_sample(table)
    outside = [core[-1] + 0x100, bogus - shift, core[0] - 1]
    truth = _placed(running, at, LIVE, (str(debug),))
    expected = [truth.lookup(a) for a in image], [truth.lookup(a) for a in outside]
    ours = _placed(running, at, None, (str(debug),))
    loaded = _loads(monkeypatch)  # the kallsyms files ours reads
    assert [ours.lookup(a) for a in image] == expected[0]
    # the copy names the image without reading /proc/kallsyms, unless it is unusable
    assert (LIVE in loaded) == (copy_kind == "unusable")
    assert [ours.lookup(a) for a in outside] == expected[1]
    assert LIVE in loaded  # for the addresses outside the image
    assert all(hit is None or hit[1] != "bogus" for hit in map(ours.lookup, outside))


def test_no_worker_parses_a_copy_of_the_running_kernels_kallsyms(tmp_path: Path) -> None:
    """A copy of the running kernel's kallsyms (perf's, or the run's own) is searched in
    place: nothing is parsed ahead. /proc/kallsyms and a `--kallsyms` file are."""
    running, why = running_build_id(NOTES)
    assert running is not None, why
    debug = tmp_path / "debug"
    copy = _cache_copy(debug, running)
    assert likely_path(None, "/", [str(debug)]) == copy
    assert parsed_ahead(None, "/", [str(debug)]) is None
    assert parsed_ahead(None, "/", [str(tmp_path / "none")]) == LIVE
    assert parsed_ahead(copy, "/", [str(debug)]) == copy  # named: parsed, order unknown
    assert parsed_ahead(None, "/sr", [str(debug)]) == "/sr/proc/kallsyms"


def test_a_run_keeps_a_copy_of_the_running_kernels_kallsyms_for_the_next(
        tmp_path: Path, monkeypatch) -> None:
    """Without perf's build-id cache copy, the first run reads /proc/kallsyms and keeps its
    text in the persistent cache, named by the running kernel's build id; the next runs name
    the image from that file, as from perf's copy, without /proc/kallsyms (~45 ms of kernel
    time), and with the same names."""
    running, why = running_build_id(NOTES)
    assert running is not None, why
    table = Kallsyms.parse(kallsyms.read(LIVE)[0])
    at = table.address_of(b"_text")
    assert at is not None  # root sees the addresses (CI runs as root)
    _core, image = _image_sample(table)
    live = _placed(running, at)
    truth = [live.lookup(a) for a in image]
    store = PersistentCache(str(tmp_path / "cache"))
    own = OwnCopy.of_running_kernel(store, None, "/")
    assert own is not None and not own.exists()
    assert own.path == str(tmp_path / "cache" / f"kallsyms-{running.hex()}.ppk")
    assert likely_path(None, "/", [], own) == LIVE
    loaded = _loads(monkeypatch)
    first = _placed(running, at, own=own)
    assert [first.lookup(a) for a in image] == truth
    assert loaded == [LIVE] and own.exists()
    assert Kallsyms.parse(Path(own.path).read_bytes()).address_of(b"_text") == at
    assert likely_path(None, "/", [], own) == own.path
    loaded.clear()
    os.utime(own.path, (0, 0))
    second = _placed(running, at, own=own)
    assert [second.lookup(a) for a in image] == truth
    assert loaded == [own.path]
    assert os.stat(own.path).st_mtime > 0  # used: the cache's trim keeps it longest
    # a copy that cannot be used (here: no _text to move it by) is replaced
    Path(own.path).write_bytes(b"ffffffff81000000 T a\n")
    loaded.clear()
    third = _placed(running, at, own=own)
    assert [third.lookup(a) for a in image] == truth
    assert loaded == [own.path, LIVE]
    assert Kallsyms.parse(Path(own.path).read_bytes()).address_of(b"_text") == at
    # a link there is not the cache's own file: not used, and replaced by one
    kept = tmp_path / "kept"
    Path(own.path).rename(kept)
    Path(own.path).symlink_to(kept)
    loaded.clear()
    fourth = _placed(running, at, own=own)
    assert [fourth.lookup(a) for a in image] == truth
    assert loaded == [LIVE] and own.exists() and not Path(own.path).is_symlink()
    # only the running kernel's, and only with a cache
    assert OwnCopy.of_running_kernel(None, None, "/") is None
    assert OwnCopy.of_running_kernel(store, LIVE, "/") is None
    assert OwnCopy.of_running_kernel(store, None, str(tmp_path)) is None


def test_no_copy_is_kept_of_a_kallsyms_that_hides_its_addresses(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """/proc/kallsyms read under kptr_restrict gives every address as 0: nothing to keep."""
    running, why = running_build_id(NOTES)
    assert running is not None, why
    real_read = kallsyms.read
    monkeypatch.setattr(kallsyms, "read", lambda path: (
        (b"0000000000000000 T _text\n0000000000000000 T a\n", None) if path == LIVE
        else real_read(path)))
    own = OwnCopy.of_running_kernel(PersistentCache(str(tmp_path / "cache")), None, "/")
    ks = _placed(running, TEXT, own=own)
    assert ks.lookup(TEXT + 0x10) is None and ks.unnamed_because == "hidden"
    assert not own.exists()


def test_a_hidden_proc_kallsyms_behind_the_copy_is_why_the_rest_is_unnamed(
        tmp_path: Path, monkeypatch, capsys) -> None:
    """The copy names the image; an address past it needs /proc/kallsyms, which a user under
    kptr_restrict reads as zeros: that frame stays unnamed, and the run says why."""
    running, why = running_build_id(NOTES)
    assert running is not None, why
    debug = tmp_path / "debug"
    _cache_copy(debug, running, b"ffffffff81000000 T _text\nffffffff81000100 T a\n"
                b"ffffffff81000200 T _end\n")
    real_load = Kallsyms.load

    def load(path: str, worker=None, own=None, in_place=False):
        if path == LIVE:
            raise kallsyms.KallsymsError(kallsyms.EMPTY_MAPPING)
        return real_load(path, worker, own, in_place)

    monkeypatch.setattr(Kallsyms, "load", staticmethod(load))
    ks = _placed(running, TEXT + 0x1000, None, (str(debug),))
    assert ks.lookup(TEXT + 0x1110) == (TEXT + 0x1100, "a", "")
    assert ks.unnamed_because is None
    assert ks.lookup(TEXT + 0x1300) is None
    assert ks.unnamed_because == "hidden"
    assert capsys.readouterr().err.count(LIVE) == 1


@pytest.mark.skipif(cpus.usable() < 2, reason="the worker needs two CPUs")  # CI has them
def test_the_worker_is_ended_when_the_run_reads_no_file(tmp_path: Path, capsys) -> None:
    """The worker parses /proc/kallsyms from the start; a recording of another kernel must
    not take its table, and ends it."""
    worker = KallsymsWorker.start(likely_path(None, "/"))
    assert worker is not None
    ks = KernelSymbols(_Writer(), None, "/", [str(tmp_path)], worker)
    ks.build_ids([(-1, RECORDED_ID, b"[kernel.kallsyms]")])
    assert ks.lookup(TEXT + 0x100) is None
    assert worker._pid == 0 and worker._replies == -1  # ended and reaped, no table read
    assert capsys.readouterr().err.count(RECORDED_ID.hex()) == 1


# -- end to end ---------------------------------------------------------------------------

def _corpus_kallsyms() -> bytes:
    return gzip.decompress((CORPUS / "kallsyms" / "kallsyms.gz").read_bytes())


def _kernel_frames(stdout: bytes) -> dict[tuple[int, int], list[str | None]]:
    samples, _ = decode(stdout)
    return {(s.tid, s.time): [f.sym for f in s.frames if f.kernel] for s in samples}


def _perf_kernel_frames(data: Path, kallsyms: str) -> dict[tuple[int, int], list[str | None]]:
    """perf script's kernel frame names per sample (tid, time in ns); None for [unknown].

    A frame is the kernel's when its address is in the kernel half and perf maps it to a kernel
    dso, as it does every address of the chain's kernel context. The address alone does not
    tell: a user-context return address read through a garbage frame pointer may be any value,
    and perf maps one in the kernel half to the thread's maps, "[unknown]"."""
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "tid,time,ip,sym,dso", "--ns",
                          "--kallsyms", kallsyms], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    samples: dict[tuple[int, int], list[str | None]] = {}
    key = None
    for line in out.splitlines():
        if not line.startswith("\t"):
            if line.strip():
                tid, time = line.split()[:2]
                secs, ns = time.rstrip(":").split(".")
                key = (int(tid), int(secs) * 10**9 + int(ns))
                samples[key] = []
            continue
        frame, _, dso = line.strip().rpartition(" (")
        ip, _, sym = frame.partition(" ")
        if int(ip, 16) >= 1 << 63 and dso not in ("[unknown])", "[vsyscall])"):
            name = sym.split("+0x")[0].strip()
            samples[key].append(None if name == "[unknown]" else name)
    return samples


def _run(tmp_path: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    res = run_parser(["--input", str(data), "--app", str(data.parent),
                      "--debug", str(tmp_path / "debug"), *args], timeout=120)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return res


def test_another_kernels_recording_gets_no_kernel_names_and_one_warning(tmp_path: Path) -> None:
    data = KERNEL_CASE / "perf.data"
    running, why = running_build_id("/sys/kernel/notes")
    assert running != RECORDED_ID  # the recording machine's kernel is not ours
    res = _run(tmp_path, data)
    frames = _kernel_frames(res.stdout)
    assert sum(map(len, frames.values())) == 2158  # perf: every one [unknown]
    assert {name for names in frames.values() for name in names} == {None}
    errors = [m for m in P.read_stream(res.stdout).messages if isinstance(m, P.Error)]
    [error] = [e for e in errors if not e.message.startswith(diagnostics.PREFIX)]
    theirs = running.hex() if running else why
    assert error.code == 3 and RECORDED_ID.hex() in error.message and theirs in error.message
    # the end-of-run report says why the kernel frames stay unresolved
    [report] = [e for e in errors if "[kernel.kallsyms]" in e.message]
    assert report.code == 3 and "another kernel" in report.message
    [line] = [x for x in res.stderr.decode().splitlines() if "kernel" in x]
    assert RECORDED_ID.hex() in line and theirs in line and "--kallsyms" in line


@NEEDS_PERF
def test_the_build_id_cache_copy_names_kernel_frames_as_perf(tmp_path: Path) -> None:
    data = KERNEL_CASE / "perf.data"
    copy = _cache_copy(tmp_path / "debug", RECORDED_ID, _corpus_kallsyms())
    res = _run(tmp_path, data)
    assert b"kernel" not in res.stderr
    ours = _kernel_frames(res.stdout)
    assert ours == _perf_kernel_frames(data, copy)
    assert sum(map(len, ours.values())) == 2158 and None not in {
        name for names in ours.values() for name in names}


@NEEDS_PERF
@pytest.mark.parametrize("case", ["perf.data", "perf.dwarf.data"])
def test_kallsyms_of_another_boot_is_relocated_as_perf_does(tmp_path: Path, case: str) -> None:
    """The corpus kallsyms as another boot of that kernel would have it: every core symbol
    58 MiB higher. Both perf and we must name every frame as with the original file."""
    data = KERNEL_CASE / case
    shifted = tmp_path / "kallsyms"
    lines = []
    for line in _corpus_kallsyms().splitlines(keepends=True):
        addr, rest = line.split(b" ", 1)
        value = int(addr, 16)
        if value and b"\t" not in rest:
            value += 0x3A00000
        lines.append(b"%016x %s" % (value, rest))
    shifted.write_bytes(b"".join(lines))
    plain = tmp_path / "plain"
    plain.write_bytes(_corpus_kallsyms())
    moved = _run(tmp_path, data, "--kallsyms", str(shifted))
    assert moved.stderr.count(b"kallsyms") == 0
    ours = _kernel_frames(moved.stdout)
    assert ours == _kernel_frames(_run(tmp_path, data, "--kallsyms", str(plain)).stdout)
    assert ours == _perf_kernel_frames(data, str(shifted))
    assert None not in {name for names in ours.values() for name in names}


@NEEDS_PERF
def test_the_second_run_names_the_kernel_from_the_first_runs_copy(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """End to end, on a fresh `perf record -N -g` (perf keeps no copy): the first run keeps
    its copy of /proc/kallsyms in the persistent cache, the second reads it, and both write
    the same stream and stderr, kernel frames named as perf names them."""
    data = tmp_path / "fresh.data"
    subprocess.run(["perf", "record", "-N", "-q", "-g", "-F", "2999", "-o", str(data), "--",
                    "dd", "if=/dev/zero", "of=/dev/null", "bs=1k", "count=100000"],
                   check=True, capture_output=True, timeout=120)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    running = running_build_id(NOTES)[0]
    assert running is not None
    copy = tmp_path / "xdg" / "perfparser-py" / f"kallsyms-{running.hex()}.ppk"
    first = _run(tmp_path, data)
    assert copy.is_file()
    second = _run(tmp_path, data)
    assert (second.stdout, second.stderr) == (first.stdout, first.stderr)
    names = [name for frames in _kernel_frames(second.stdout).values() for name in frames]
    assert len(names) > 100 and None not in names
    copy.unlink()
    _run(tmp_path, data, "--no-cache")
    assert not copy.exists()


@NEEDS_PERF
def test_a_recording_of_the_running_kernel_is_named_from_proc_kallsyms(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """A fresh `perf record -g` here: its kernel build-id is the running kernel's, so kernel
    frames are named from /proc/kallsyms (by the worker's table, parsed while the run starts),
    as perf names them."""
    data = tmp_path / "fresh.data"
    subprocess.run(["perf", "record", "-N", "-q", "-g", "-F", "2999", "-o", str(data), "--",
                    "dd", "if=/dev/zero", "of=/dev/null", "bs=1k", "count=300000"],
                   check=True, capture_output=True, timeout=120)
    res = _run(tmp_path, data)
    assert b"kernel" not in res.stderr
    ours = _kernel_frames(res.stdout)
    names = [name for frames in ours.values() for name in frames]
    assert len(names) > 300 and None not in names
    assert ours == _perf_kernel_frames(data, "/proc/kallsyms")
    if cpus.usable() < 2:
        return
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "0")
    options = make_options(parse_args(["--input", str(data), "--debug", str(tmp_path)]))
    _stream, path, asked = run_with_worker(monkeypatch, options)
    assert asked == [path]
