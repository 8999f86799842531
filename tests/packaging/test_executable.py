"""The frozen executable runs without Python, the project or any environment."""

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO

# Start-up time is measured by packaging/README.md's benchmark, not asserted here.


def run_clean(exe, *args):
    """Run with an empty environment from /: nothing of the build machine's Python leaks in."""
    done = subprocess.run([str(exe), *args], env={}, cwd="/", capture_output=True, timeout=60)
    return done, None


def test_version_from_clean_environment(perfparser_exe):
    done, _ = run_clean(perfparser_exe, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"perfparser-py ") and b"perfparser 10.0" in done.stdout
    # the executable bundles the compiled core (packaging/perfparser.spec)
    assert done.stdout.endswith(b"\nperfparser-py core: compiled\n")


def test_hotspot_perfparser_name(perfparser_exe):
    link = perfparser_exe.parent / "hotspot-perfparser"
    # The build script makes the link; a prebuilt PERFPARSER_EXE may come without it.
    if link.exists() or "PERFPARSER_EXE" not in os.environ:
        done, _ = run_clean(link, "--version")
        assert done.stdout.startswith(b"perfparser-py ")


def test_unknown_option_exit_code(perfparser_exe):
    done, _ = run_clean(perfparser_exe, "--no-such-option")
    assert done.returncode == 1
    assert b"Unknown option 'no-such-option'" in done.stderr
    assert b"Traceback" not in done.stderr


def _build_id(path):
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        notes = ELFFile(f).get_section_by_name(".note.gnu.build-id")
        return next(note["n_desc"] for note in notes.iter_notes())


def _built_here(exe):
    """REPO/build when `exe` was built there (build.sh's interpreter and venv are beside it);
    a prebuilt executable from elsewhere is its builder's business."""
    build = REPO / "build"
    if build not in exe.parents:
        pytest.skip("a prebuilt executable from elsewhere")
    return build


def _run_python(python, code):
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()


def test_bundles_the_distributions_interpreter_and_the_compiled_core(perfparser_exe):
    """The tests' build (conftest: PYTHON=.venv/bin/python) freezes the .venv's interpreter, the
    distribution's (tools/venv-python), whose libpython carries the distribution's security
    fixes, with the compiled core."""
    _built_here(perfparser_exe)
    libdir = _run_python(REPO / ".venv" / "bin" / "python",
                         "import sysconfig as s; print(s.get_config_var('LIBDIR'))")[0]
    bundled = next((perfparser_exe.parent / "_internal").glob("libpython3*.so*"))
    system = Path(libdir) / bundled.name
    assert system.exists() and _build_id(bundled) == _build_id(system.resolve())
    done = subprocess.run([str(perfparser_exe), "--version"], capture_output=True, text=True)
    assert "core: compiled" in done.stdout


# What the parser imports from compiled dependencies (lazily, where a failed import falls back
# to a slower path instead of failing: deflate -> zlib): PyInstaller's analysis cannot see the
# imports made from C, so the bundle is checked against what really loads.
ACCELERATORS = ("deflate", "zstandard", "lz4.block", "lz4.frame", "pyderust",
                "cpp_demangle")


def test_bundle_holds_every_module_the_accelerators_load(perfparser_exe):
    _built_here(perfparser_exe)
    packages = tuple({name.split(".")[0] for name in ACCELERATORS})
    loaded = _run_python(REPO / ".venv" / "bin" / "python",
                         f"import sys; import {', '.join(ACCELERATORS)}; "
                         f"print(*sorted(m for m in sys.modules if m.split('.')[0] in {packages}))")
    internal = perfparser_exe.parent / "_internal"
    missing = [name for name in loaded
               if not any(internal.glob(name.replace(".", "/") + ".*"))
               and not (internal / name.replace(".", "/") / "__init__.pyc").exists()]
    assert loaded and not missing


def test_a_second_open_replays_the_first(perfparser_exe, tmp_path):
    """The replay cache works frozen: the second run gives the stored stream (the entry is
    read, not rewritten), and a changed library makes the next run store anew."""
    import shutil
    import time

    case = REPO.parent / "shared" / "corpus" / "recorded" / "sharedlib"
    app = tmp_path / "app"
    app.mkdir()
    for name in ("perf.data", "libuser", "libhot.so"):
        shutil.copy2(case / name, app / name)
    time.sleep(1.1)  # older than a second: stored (replay.py)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = [str(perfparser_exe), "--input", str(app / "perf.data"), "--app", str(app)]

    def run():
        done = subprocess.run(args, env=env, cwd="/", capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        (entry,) = (tmp_path / "cache" / "perfparser-py").glob("*.ppr")
        st = entry.stat()
        return done.stdout, (st.st_ino, st.st_mtime_ns)

    first, stored = run()
    time.sleep(0.05)
    second, read = run()
    assert second == first
    assert read[0] == stored[0] and read[1] > stored[1]
    os.utime(app / "libhot.so", ns=(0, 10**9))
    time.sleep(1.1)
    third, again = run()
    assert third == first and again[0] != stored[0]
