"""Protocol flavour selection: explicit choices, version mapping, launcher detection, cache."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import flavour
from perfparser_py.flavour import FlavourError, choose_flavour, flavour_for_version

REPO = Path(__file__).resolve().parents[1]


def qt5_literal(text: str) -> bytes:
    """A static Qt5 QStringLiteral as the compiler lays it out in .rodata."""
    header = struct.pack("<iiIIq", -1, len(text), 0, 0, 24)
    return header + text.encode("utf-16-le") + b"\0\0"


def fake_hotspot(tmp_path: Path, version: str) -> Path:
    """A runnable binary named hotspot (a copy of bash) with a version string appended."""
    exe = tmp_path / "bin" / "hotspot"
    exe.parent.mkdir()
    shutil.copy(shutil.which("bash"), exe)
    with open(exe, "ab") as f:
        f.write(b"\0" * 16 + qt5_literal(version) + b"\0" * 16)
    return exe


PY_SNIPPET = (
    f"{sys.executable} -c 'import os; from perfparser_py.flavour import choose_flavour; "
    "print(choose_flavour(None, os.environ))'"
)


def run_detection(shell: str | Path, snippet: str, cache: Path) -> str:
    """Flavour detected by the Python that `shell -c snippet` starts."""
    env = {"XDG_CACHE_HOME": str(cache), "PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)}
    # "; true" keeps bash from exec-ing python in its own place: python must be its child.
    cmd = [str(shell), "-c", f"{snippet}; true"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize(
    ("cli", "env", "expected"),
    [
        ("1.3", {"PERFPARSER_PROTOCOL": "current"}, "1.3"),
        ("auto", {"PERFPARSER_PROTOCOL": "1.5"}, "1.5"),
        (None, {"PERFPARSER_PROTOCOL": "1.3"}, "1.3"),
        ("", {"PERFPARSER_PROTOCOL": "current"}, "current"),
    ],
)
def test_explicit_choice_order(cli, env, expected):
    assert choose_flavour(cli, env) == expected


@pytest.mark.parametrize(("cli", "env"), [("1.6", {}), (None, {"PERFPARSER_PROTOCOL": "old"})])
def test_unknown_flavour_is_rejected(cli, env):
    with pytest.raises(FlavourError, match="unknown protocol"):
        choose_flavour(cli, env)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (None, "current"),
        ((1, 2, 0), "1.3"),
        ((1, 3, 0), "1.3"),
        ((1, 4, 1), "1.4"),
        ((1, 5, 1), "1.5"),
        ((1, 6, 0), "current"),
        ((2, 0, 0), "current"),
    ],
)
def test_flavour_for_version(version, expected):
    assert flavour_for_version(version) == expected


def test_embedded_version_qt5_and_qt6(tmp_path):
    qt5 = tmp_path / "qt5"
    qt5.write_bytes(b"\x7fELF" + b"x" * 100 + qt5_literal("1.4.1") + b"junk")
    assert flavour.embedded_version(str(qt5)) == (1, 4, 1)
    qt6 = tmp_path / "qt6"
    qt6.write_bytes(b"\x7fELF\0\0" + "1.6.0".encode("utf-16-le") + b"\0\0" + b"y" * 50)
    assert flavour.embedded_version(str(qt6)) == (1, 6, 0)


def test_embedded_version_ambiguous_or_absent(tmp_path):
    two = tmp_path / "two"
    two.write_bytes(qt5_literal("1.3.0") + b"\0" * 8 + qt5_literal("1.5.0"))
    assert flavour.embedded_version(str(two)) is None
    # A version inside a longer text is not the application version.
    other = tmp_path / "other"
    other.write_bytes("Qt 5.15.8".encode("utf-16-le") + b"\0\0")
    assert flavour.embedded_version(str(other)) is None


def test_dpkg_version(tmp_path, monkeypatch):
    (tmp_path / "info").mkdir()
    (tmp_path / "info" / "hotspot.list").write_text("/.\n/usr/bin\n/usr/bin/hotspot\n")
    (tmp_path / "status").write_text(
        "Package: hotspot-extra\nVersion: 9.9.9\n\n"
        "Package: hotspot\nStatus: install ok installed\nVersion: 1:1.3.0-2\n\n"
    )
    monkeypatch.setattr(flavour, "_DPKG_DIR", tmp_path)
    assert flavour.dpkg_version("/usr/bin/hotspot") == (1, 3, 0)
    assert flavour.dpkg_version("/usr/local/bin/hotspot") is None


def test_cache_is_used_and_keyed_by_binary(tmp_path, monkeypatch):
    exe = tmp_path / "hotspot"
    exe.write_bytes(qt5_literal("1.3.0"))
    cache = tmp_path / "cache"
    assert flavour.cached_hotspot_version(str(exe), cache) == (1, 3, 0)
    entries = json.loads((cache / "launchers.json").read_text())
    assert list(entries.values()) == [[1, 3, 0]]

    calls = []
    monkeypatch.setattr(flavour, "hotspot_version", lambda p: calls.append(p) or (9, 9, 9))
    assert flavour.cached_hotspot_version(str(exe), cache) == (1, 3, 0)
    assert calls == []
    exe.write_bytes(qt5_literal("1.5.0") + b"changed")  # new size/mtime: scanned again
    assert flavour.cached_hotspot_version(str(exe), cache) == (9, 9, 9)
    assert len(calls) == 1


def test_corrupt_cache_is_ignored(tmp_path):
    exe = tmp_path / "hotspot"
    exe.write_bytes(qt5_literal("1.5.1"))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "launchers.json").write_text("[not json")
    assert flavour.cached_hotspot_version(str(exe), cache) == (1, 5, 1)


def test_detects_hotspot_parent(tmp_path):
    exe = fake_hotspot(tmp_path, "1.3.0")
    assert run_detection(exe, PY_SNIPPET, tmp_path / "cache") == "1.3"


def test_detects_hotspot_through_wrapper_script(tmp_path):
    exe = fake_hotspot(tmp_path, "1.5.1")
    script = tmp_path / "wrap.sh"
    script.write_text('"$@"; true\n')
    assert run_detection(exe, f"bash {script} {PY_SNIPPET}", tmp_path / "cache") == "1.5"


def test_unrelated_parent_gives_current(tmp_path):
    assert run_detection(shutil.which("bash"), PY_SNIPPET, tmp_path / "cache") == "current"
    assert not (tmp_path / "cache").exists()  # nothing to remember without a hotspot


@pytest.mark.skipif(not Path("/usr/bin/hotspot").exists(), reason="Debian's hotspot not installed")
def test_debian_hotspot_is_recognised():
    # Both sources agree on Debian's 1.3.0 package; CI installs it for the GUI check.
    assert flavour.dpkg_version("/usr/bin/hotspot") == (1, 3, 0)
    assert flavour.embedded_version("/usr/bin/hotspot") == (1, 3, 0)
