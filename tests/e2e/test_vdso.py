"""`[vdso]` frames of fresh recordings: named from perf's build-id cache copy
(`[vdso]/<id>/vdso`) when perf wrote one, else from our own vDSO when its build id is the
recorded one; unwound through with the vDSO's .eh_frame. Checked sample by sample against
`perf script`, which reads the same cache (HOME points at a temporary one).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from perfparser_py.elf.image import ElfImage
from perfparser_py.elf.vdso import own_vdso
from tests.corpus.expect import decode, run_parser
from tests.e2e.test_fresh_recordings import _alias_groups, _libc_files, _perf_script, _same
from tests.e2e.programs import build_c

WORKLOAD = r"""
#include <stdlib.h>
#include <time.h>
static volatile long sink;
/* runs for argv[1] ms, not a count of calls: the sample count must not shrink on a fast
   machine (15 M calls took 0.36 s here and 0.24 s on CI) */
__attribute__((noinline)) void spin(long ms)
{
    struct timespec ts, start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do { clock_gettime(CLOCK_MONOTONIC, &ts); sink += ts.tv_nsec; }
    while ((ts.tv_sec - start.tv_sec) * 1000 + (ts.tv_nsec - start.tv_nsec) / 1000000 < ms);
}
int main(int argc, char **argv) { spin(atol(argv[1])); return 0; }
"""

CALL_GRAPHS = {"fp": ["-g"], "dwarf": ["--call-graph", "dwarf,16384"]}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> Path:
    """fp/dwarf recordings with (`<kind>.data`) and without (`<kind>-N.data`) perf's
    build-id cache update, and without build ids at all (`<kind>-B.data`, as pipe mode and
    `--switch-output` files have none); the cache is `home/.debug`."""
    tmp = tmp_path_factory.mktemp("vdso")
    build_c(tmp, "cg", WORKLOAD, "-O2", "-g", "-fno-omit-frame-pointer")
    (tmp / "home").mkdir()  # perf writes its cache below an existing HOME only
    env = {**os.environ, "HOME": str(tmp / "home")}
    for kind, call_graph in CALL_GRAPHS.items():
        for suffix, flags in (("", []), ("-N", ["-N"]), ("-B", ["-B"])):
            subprocess.run(["perf", "record", *flags, "-q", "-F", "999", *call_graph, "-o",
                            str(tmp / f"{kind}{suffix}.data"), "--", str(tmp / "cg"),
                            "800"], check=True, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=120)
    return tmp


def _vdso_actual_paths(stream: P.Stream) -> set[bytes | None]:
    s = {m.id: m.string for m in stream.messages if isinstance(m, P.String)}
    return {s.get(m.actual_path) for m in stream.messages
            if isinstance(m, P.Symbol) and s.get(m.path) == b"[vdso]"}


def _vdso_aliases(home: Path) -> dict[str, frozenset[str]]:
    """Names sharing an address in the vDSO (.dynsym only): __vdso_clock_gettime and the
    weak clock_gettime."""
    groups: dict[str, frozenset[str]] = {}
    for f in home.glob(".debug/[[]vdso]/*/vdso"):
        nm = subprocess.run(["nm", "-D", "--defined-only", str(f)], capture_output=True,
                            text=True, check=True).stdout
        by_addr: dict[str, set[str]] = {}
        for line in nm.splitlines():
            addr, _kind, name = line.split()
            by_addr.setdefault(addr, set()).add(name.split("@")[0])
        for names in by_addr.values():
            for n in names:
                groups[n] = groups.get(n, frozenset()) | frozenset(names)
    return groups


@pytest.mark.parametrize("kind", sorted(CALL_GRAPHS))
@pytest.mark.parametrize("suffix", ["", "-N", "-B"], ids=["cache-copy", "own-vdso",
                                                          "no-build-id"])
def test_vdso_frames_match_perf_script(recordings: Path, kind: str, suffix: str,
                                       monkeypatch) -> None:
    home = recordings / "home"
    monkeypatch.setenv("HOME", str(home))  # perf script and the parser's default ~/.debug
    cached = not suffix
    data = recordings / f"{kind}{suffix}.data"
    # own vDSO: no debug directory holds a copy, so only our memory can name the frames
    debug = [] if cached else ["--debug", str(recordings / "no-such-cache")]
    res = run_parser(["--input", str(data), "--app", str(recordings), *debug])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ours, stream = decode(res.stdout)
    (cache_copy,) = home.glob(".debug/[[]vdso]/*/vdso")
    assert _vdso_actual_paths(stream) == ({os.fsencode(cache_copy)} if cached else {None})
    # perf names the -N recording's frames too: the cache copy of the other recordings has
    # the same build id (one boot)
    perf = _perf_script(data)
    aliases = {**_alias_groups(_libc_files()), **_vdso_aliases(home)}
    in_vdso = [s for s in ours if s.frames and s.frames[0].dso in (None, "") and
               (perf.get((s.tid, s.time)) or [None])[0] in aliases]
    assert len(in_vdso) > 0.3 * len(ours) > 100
    bad = [([f.sym for f in s.frames], perf.get((s.tid, s.time))) for s in in_vdso
           if not _same([f.sym for f in s.frames], perf[(s.tid, s.time)], aliases)]
    assert not bad, (len(bad), len(in_vdso), bad[:3])
    if kind == "dwarf":
        # unwound through the vDSO by its CFI, up to main
        assert all("main" in [f.sym for f in s.frames] for s in in_vdso)


def test_never_a_vdso_of_another_build_id(tmp_path: Path) -> None:
    """A cache entry whose file has another build id, and our own vDSO under another
    recorded id, are both refused; the recorded id finds our own."""
    from perfparser_py.elf.finder import ElfFinder

    data = own_vdso()
    assert data is not None
    own_id = ElfImage.from_bytes("[vdso]", data).build_id
    other = bytes(20)
    wrong = tmp_path / "[vdso]" / other.hex() / "vdso"
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(data)  # our vDSO filed under a foreign id: its own id decides
    finder = ElfFinder("", [], "/", [str(tmp_path)], {b"[vdso]": other})
    assert finder.find_vdso(None) == (None, None)
    assert finder.find_vdso(other) == (None, None)
    local, image = finder.find_vdso(own_id)  # the MMAP2 record's id wins over the header's
    assert local is None and image is not None and image.build_id == own_id
    assert ElfFinder("", [], "/", [], {}).find_vdso(None) == (None, None)  # no id: unchecked


@pytest.fixture(scope="module")
def compat_recordings(tmp_path_factory) -> Path:
    """A 32-bit program (gcc -m32) in the vDSO, recorded with the build-id cache update
    (`fp.data`: perf files the compat vDSO, `[vdso32]` in its table, by its build id) and
    without (`fp-N.data`)."""
    tmp = tmp_path_factory.mktemp("vdso32")
    build_c(tmp, "cg32", WORKLOAD, "-m32", "-O2", "-g", "-fno-omit-frame-pointer")
    (tmp / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp / "home")}
    for suffix, flags in (("", []), ("-N", ["-N"])):
        subprocess.run(["perf", "record", *flags, "-q", "-F", "999", "-g", "-o",
                        str(tmp / f"fp{suffix}.data"), "--", str(tmp / "cg32"), "800"],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)
    return tmp


@pytest.mark.parametrize("suffix", ["", "-N"], ids=["cache-copy", "not-cached"])
def test_a_32_bit_process_has_the_compat_vdso(compat_recordings: Path, suffix: str,
                                              monkeypatch) -> None:
    """A 32-bit process on a 64-bit kernel has the kernel's compat vDSO. From perf's copy
    its frames are named as perf names them (`__vdso_clock_gettime64`); without it they stay
    unnamed: our own vDSO, the 64-bit one, named them after its own functions
    (`__vdso_getrandom`)."""
    home = compat_recordings / "home"
    monkeypatch.setenv("HOME", str(home))
    data = compat_recordings / f"fp{suffix}.data"
    # not cached: no debug directory holds a copy (the cache-copy recording filed one)
    debug = ["--debug", str(compat_recordings / "no-such-cache")] if suffix else []
    res = run_parser(["--input", str(data), "--app", str(compat_recordings), *debug])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ours, stream = decode(res.stdout)
    in_vdso = [s for s in ours if s.frames and not s.frames[0].kernel
               and s.frames[0].dso in (None, "") and s.comm == "cg32"]
    assert len(in_vdso) > 0.3 * len(ours) > 100
    if suffix:
        assert {s.frames[0].sym for s in in_vdso} == {None}
        return
    copies = [ElfImage.open(str(f)) for f in home.glob(".debug/[[]vdso]/*/vdso")]
    assert any(not image.is_64 for image in copies)  # perf filed the compat one
    perf = _perf_script(data)
    aliases = _vdso_aliases(home)
    bad = [([f.sym for f in s.frames], perf.get((s.tid, s.time))) for s in in_vdso
           if not _same([f.sym for f in s.frames][:1], perf[(s.tid, s.time)][:1], aliases)]
    assert not bad, (len(bad), len(in_vdso), bad[:3])
