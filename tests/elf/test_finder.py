"""ElfFinder: build-id cache, recursive --app/--extra, sysroot, build-id checks, debug files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perfparser_py.elf.finder import ElfFinder, build_id_matches, normalize_path
from perfparser_py.elf.image import ElfImage

RECORDED = b"/tmp/corpus-build/gone/prog"


def build_id(path: Path) -> bytes:
    image = ElfImage.open(str(path))
    assert image is not None and image.build_id is not None
    return image.build_id


def place(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    return dst


def test_app_search_is_recursive_and_checks_build_id(built: dict[str, Path],
                                                     tmp_path: Path) -> None:
    app = tmp_path / "app"
    place(built["md5"], app / "prog")  # right name, wrong build id
    place(built["md5"], app / "A" / "prog")
    wanted = place(built["pie"], app / "b" / "deep" / "er" / "prog")
    place(built["pie"], app / "c" / "prog")
    os.symlink(app, app / "b" / "loop")  # directory cycles are visited once
    finder = ElfFinder(str(app), [], "/nonexistent-sysroot/", [],
                       {RECORDED: build_id(built["pie"])})
    path, image = finder.find(RECORDED)
    assert path == str(wanted) and image is not None
    assert image.build_id == build_id(built["pie"])
    # Without a recorded build id the first file of that name counts: the shallowest one.
    path, _ = ElfFinder(str(app), [], "/", [], {}).find(RECORDED)
    assert path == str(app / "prog")


def test_subdirectories_in_case_insensitive_order(built: dict[str, Path],
                                                  tmp_path: Path) -> None:
    app = tmp_path / "app"
    place(built["pie"], app / "b" / "prog")
    place(built["pie"], app / "A" / "prog")
    place(built["pie"], app / "C" / "prog")
    path, _ = ElfFinder(str(app), [], "/", [], {}).find(RECORDED)
    assert path == str(app / "A" / "prog")


def test_extra_paths_in_order_and_recursive(built: dict[str, Path], tmp_path: Path) -> None:
    e1, e2 = tmp_path / "e1", tmp_path / "e2"
    e1.mkdir()
    wanted = place(built["pie"], e2 / "x" / "y" / "prog")
    place(built["pie"], tmp_path / "e3" / "prog")
    finder = ElfFinder("", [str(e1), "", str(e2), str(tmp_path / "e3")], "/nowhere/", [],
                       {RECORDED: build_id(built["pie"])})
    assert finder.find(RECORDED)[0] == str(wanted)


def test_sysroot_and_missing(built: dict[str, Path], tmp_path: Path) -> None:
    sysroot = tmp_path / "root"
    wanted = place(built["pie"], sysroot / RECORDED.decode().lstrip("/"))
    finder = ElfFinder("", [], str(sysroot) + "/", [], {RECORDED: build_id(built["pie"])})
    path, image = finder.find(RECORDED)
    assert path == str(wanted) and image is not None
    assert finder.find(RECORDED)[1] is image  # cached per recorded path
    path, image = finder.find(b"/usr/lib/missing.so")
    assert path == str(sysroot / "usr/lib/missing.so") and image is None
    # The sysroot copy is rejected when the recorded build id differs.
    finder = ElfFinder("", [], str(sysroot), [], {RECORDED: build_id(built["md5"])})
    assert finder.find(RECORDED) == (str(wanted), None)


def test_build_id_cache_layouts(built: dict[str, Path], tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    cache = tmp_path / "cache"
    recorded = RECORDED.decode()
    flat = place(built["pie"], Path(f"{cache}{recorded}/{bid.hex()}"))
    finder = ElfFinder("", [], "/nowhere/", [str(tmp_path / "empty"), str(cache)],
                       {RECORDED: bid})
    assert finder.find(RECORDED)[0] == str(flat)
    flat.unlink()
    nested = place(built["pie"], Path(f"{cache}{recorded}/{bid.hex()}/elf"))
    finder = ElfFinder("", [], "/nowhere/", [str(cache)], {RECORDED: bid})
    path, image = finder.find(RECORDED)
    assert path == str(nested) and image is not None


@pytest.mark.parametrize("variant,length", [("md5", 16), ("short", 8)])
def test_build_ids_of_any_length(built: dict[str, Path], tmp_path: Path, variant: str,
                                 length: int) -> None:
    bid = build_id(built[variant])
    assert len(bid) == length
    app = tmp_path / "app"
    wanted = place(built[variant], app / "sub" / "prog")
    for recorded_id in (bid, bid + bytes(20 - length)):  # exact, or zero-padded to 20
        finder = ElfFinder(str(app), [], "/nowhere/", [], {RECORDED: recorded_id})
        assert finder.find(RECORDED)[0] == str(wanted)
    assert not build_id_matches(bid[:-1] + b"\x00" + bytes(20 - length), bid)


def test_one_image_per_real_file(built: dict[str, Path], tmp_path: Path) -> None:
    app = tmp_path / "app"
    place(built["pie"], app / "prog")
    os.symlink(app / "prog", app / "alias")
    finder = ElfFinder(str(app), [], "/", [], {})
    _, a = finder.find(b"/x/prog")
    _, b = finder.find(b"/y/alias")
    assert a is not None and a is b


@pytest.fixture(scope="module")
def no_build_id(built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory with `prog` (stripped, no build id, debuglink prog.debug) and its debug file."""
    d = tmp_path_factory.mktemp("nobid")
    full = d / "full"
    subprocess.run(["gcc", "-g", "-O1", "-Wl,--build-id=none", "-o", str(full),
                    str(built["pie"].parent / "p.c")], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(d / "prog.debug")],
                   check=True)
    subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + str(d / "prog.debug"),
                    str(full), str(d / "prog")], check=True)
    return d


def test_debuglink_with_crc(no_build_id: Path, tmp_path: Path) -> None:
    image = ElfImage.open(str(no_build_id / "prog"))
    assert image.build_id is None and image.debuglink[0] == "prog.debug"
    app = tmp_path / "app"
    place(no_build_id / "prog", app / "prog")
    good = place(no_build_id / "prog.debug", app / "prog.debug")
    _, image = ElfFinder(str(app), [], "/", [], {}).find(b"/gone/prog")
    assert image.debug is not None and image.debug.path == str(good)
    assert image.section(".debug_info") is not None
    nm = subprocess.run(["nm", str(good)], capture_output=True, text=True, check=True).stdout
    main = int(next(line.split()[0] for line in nm.splitlines() if line.endswith(" main")), 16)
    assert image.symbol_at(main + 1)[:2] == ("main", main)
    # Same name, wrong CRC: not attached.
    app2 = tmp_path / "app2"
    place(no_build_id / "prog", app2 / "prog")
    (app2 / "prog.debug").write_bytes(good.read_bytes()[:-1] + b"\x01")
    _, image = ElfFinder(str(app2), [], "/", [], {}).find(b"/gone/prog")
    assert image.debug is None


def test_debuglink_in_debug_dir_mirror(no_build_id: Path, tmp_path: Path) -> None:
    app = tmp_path / "app"
    main = place(no_build_id / "prog", app / "prog")
    debug_dir = tmp_path / "dbg"
    place(no_build_id / "prog.debug", Path(f"{debug_dir}{app}/prog.debug"))
    _, image = ElfFinder(str(app), [], "/", [str(debug_dir)], {}).find(b"/gone/prog")
    assert image.path == str(main) and image.debug is not None


def test_debuglink_under_sysroot_usr_lib_debug(no_build_id: Path, tmp_path: Path) -> None:
    sysroot = tmp_path / "root"  # no trailing slash: the sysroot itself is the root
    place(no_build_id / "prog", sysroot / "usr/lib/prog")
    place(no_build_id / "prog.debug", sysroot / "usr/lib/debug/usr/lib/prog.debug")
    _, image = ElfFinder("", [], str(sysroot), [], {}).find(b"/usr/lib/prog")
    assert image is not None and image.debug is not None


def test_build_id_debug_dir_for_corpus_libc(corpus_dir: Path) -> None:
    sysroot = corpus_dir / "sysroot"
    finder = ElfFinder("", [], str(sysroot), [str(sysroot / "usr/lib/debug")], {})
    path, image = finder.find(b"/usr/lib/x86_64-linux-gnu/libc.so.6")
    assert path == normalize_path(str(sysroot / "usr/lib/x86_64-linux-gnu/libc.so.6"))
    assert image is not None and image.debug is not None
    assert image.debug.path.endswith(image.build_id.hex()[2:] + ".debug")
    assert image.section(".debug_info") is not None  # from the debug file
    assert image.section(".eh_frame") is not None  # own copy (NOBITS in the debug file)


@pytest.mark.parametrize("listed", [False, True])
def test_debug_file_looked_for_on_first_use(corpus_dir: Path, listed: bool) -> None:
    """A mapped file's debug file is looked for when its image is first read (most files of a
    system-wide recording never get a sample); one perf lists with samples at once."""
    from perfparser_py import probes

    sysroot = corpus_dir / "sysroot"
    libc = b"/usr/lib/x86_64-linux-gnu/libc.so.6"
    bid = build_id(Path(str(sysroot) + os.fsdecode(libc)))
    finder = ElfFinder("", [], str(sysroot), [str(sysroot / "usr/lib/debug")],
                       {libc: bid} if listed else {})
    finder.prefetch = True
    debug_file = str(sysroot / "usr/lib/debug/.build-id" / bid.hex()[:2]
                     / (bid.hex()[2:] + ".debug"))
    probes.start()
    try:
        image = finder.find(libc)[1]
        assert image is not None
        assert (probes._STAT + debug_file in probes._seen) == listed
        image.load_symbols()  # the first read
        assert probes._STAT + debug_file in probes._seen
        assert image.debug is not None and image.debug.path == debug_file
    finally:
        probes.taken()


def test_images_go_with_their_run(corpus_dir: Path) -> None:
    """Once the run is over (ElfFinder.done, from pipeline.Run.done) a run's images and their
    file mappings go by reference counting alone: a pending debug search ties image and
    finder into a cycle, which a process that runs main() again after gc.freeze() (the
    fuzzer's) never frees."""
    import gc
    import weakref

    sysroot = corpus_dir / "sysroot"
    finder = ElfFinder("", [], str(sysroot), [str(sysroot / "usr/lib/debug")], {})
    image = finder.find(b"/usr/lib/x86_64-linux-gnu/libc.so.6")[1]
    assert image is not None and image.debug_search is not None  # not listed: pending
    gone = weakref.ref(image)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        finder.done()
        del finder, image
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()


def test_normalize_path() -> None:
    assert normalize_path("//usr/lib/../lib/./x.so") == "/usr/lib/x.so"
    assert normalize_path("rel") == os.path.join(os.getcwd(), "rel")


def test_kernel_module_from_sysroot(built: dict[str, Path], tmp_path: Path) -> None:
    sysroot = tmp_path / "root"
    module = place(built["pie"], sysroot / "lib/modules/6.1/kernel/x.ko")
    (sysroot / "lib/modules/6.1/kernel/notelf.ko").write_text("text")
    finder = ElfFinder("", [], str(sysroot), [], {})
    path, image = finder.find_kernel_module(b"/lib/modules/6.1/kernel/x.ko")
    assert path == str(module) and image is not None
    assert finder.find_kernel_module(b"/lib/modules/6.1/kernel/notelf.ko")[1] is None


def test_a_name_listed_with_two_build_ids_keeps_both() -> None:
    """perf's build-id table may list one path twice (a container's file and this machine's
    at the same path): the last picks the file here, as before, and a process's own view
    takes a file with either."""
    finder = ElfFinder("", [], "/", [], {})
    a, b = bytes(range(20)), bytes(range(1, 21))
    finder.add_build_ids([(-1, a, b"/usr/lib/libx.so"), (-1, b, b"/usr/lib/libx.so"),
                          (-1, a, b"/usr/lib/liby.so")])
    assert finder.build_ids == {b"/usr/lib/libx.so": b, b"/usr/lib/liby.so": a}
    assert finder._ids(b"/usr/lib/libx.so") == {a, b}
    assert finder._ids(b"/usr/lib/liby.so") == {a}
    assert finder._ids(b"/usr/lib/libz.so") == set()
