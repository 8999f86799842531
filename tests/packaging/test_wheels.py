"""`pip wheel .` gives the compiled wheel where a compiler is, PERFPARSER_PY_PURE=1 the pure
one (setup.py); both carry the license, no Cython C, metadata twine accepts, and run. The
sdist carries the compiled modules' C types.

One build of each kind, from a copy of the sources (no .venv, build/ or extensions built in
place), in pip's isolated build environment as a user's `pip wheel .` has it."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO

# what a checkout holds besides the sources: build outputs and the compiled core built in place
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info",
                                     "__pycache__", ".*_cache", "*.so", "*.c")


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "perfparser-py"
    shutil.copytree(REPO, src, ignore=NOT_SOURCES)
    return src


def build_wheel(sources: Path, out: Path, pure: bool) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "PERFPARSER_PY_PURE"}
    if pure:
        env["PERFPARSER_PY_PURE"] = "1"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                           str(sources)], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def compiled_tag() -> str:
    """The tag of a wheel with extensions for this interpreter: cp311-cp311-linux_x86_64."""
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{abi}-{abi}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def check_wheel(wheel: Path, tag: str, extensions: bool, tmp: Path) -> None:
    assert wheel.name == f"perfparser_py-{version()}-{tag}.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        dist_info = f"perfparser_py-{version()}.dist-info"
        assert f"{dist_info}/licenses/LICENSE" in names
        assert z.read(f"{dist_info}/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
        assert f"Tag: {tag}" in z.read(f"{dist_info}/WHEEL").decode()
        # the commands are scripts/perfparser (it says why), not entry points
        script = (REPO / "scripts" / "perfparser").read_bytes()
        for command in ("perfparser", "hotspot-perfparser"):
            assert z.read(f"perfparser_py-{version()}.data/scripts/{command}") == script
        assert "perfparser =" not in z.read(f"{dist_info}/entry_points.txt").decode()
    assert not [n for n in names if n.endswith(".c")]
    built = {n for n in names if n.endswith(".so")}
    assert (len(built) == len(compiled_modules())) if extensions else not built
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # installed on its own (the dependencies from this environment), it runs, with its core
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PERFPARSER_PY_PURE"}
    env["PYTHONPATH"] = str(target)
    done = subprocess.run([sys.executable, "-m", "perfparser_py", "--version"], env=env,
                          cwd=tmp, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"perfparser-py {version()}")
    core = "compiled" if extensions else "interpreted"
    assert done.stdout.endswith(f"\nperfparser-py core: {core}\n")


def version() -> str:
    import perfparser_py

    return perfparser_py.__version__


def compiled_modules() -> list:
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["perfparser-py"]["compiled"]


def test_pure_wheel(sources, tmp_path):
    wheel = build_wheel(sources, tmp_path / "wheel", pure=True)
    check_wheel(wheel, "py3-none-any", extensions=False, tmp=tmp_path)


def test_compiled_wheel(sources, tmp_path):
    wheel = build_wheel(sources, tmp_path / "wheel", pure=False)
    check_wheel(wheel, compiled_tag(), extensions=True, tmp=tmp_path)


def test_sdist_carries_the_c_types(sources, tmp_path):
    """Every .pxd is in the sdist (MANIFEST.in): built from an sdist without them, each module
    compiles without its C types, as Python objects. Made by `python -m build` in its isolated
    environment, as a release makes it; PERFPARSER_PY_PURE=1 spares it Cython's C, which the
    check of its file list does not need."""
    env = dict(os.environ, PERFPARSER_PY_PURE="1")
    done = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path),
                           str(sources)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [sdist] = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as t:
        shipped = {name.split("/", 1)[1] for name in t.getnames() if name.endswith(".pxd")}
    pxds = {p.relative_to(sources).as_posix() for p in (sources / "perfparser_py").rglob("*.pxd")}
    assert pxds and shipped == pxds
