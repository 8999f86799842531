"""Choice of the protocol flavour: --protocol, then PERFPARSER_PROTOCOL, then `auto`.

hotspot never tells its parser which message layout it reads (PROTOCOL.md §5.2), so `auto`
looks at the process that launched us: if it is a hotspot binary whose version can be told
reliably, its flavour is used, otherwise `current`. The version comes from the dpkg database
(Debian/Ubuntu packages) or from the version string Qt embeds in the binary; the answer is
cached per binary (path, size, mtime, inode) under $XDG_CACHE_HOME/perfparser-py/, so the
common case costs a few /proc reads and one small JSON read, and never a subprocess.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from .tuples import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

FLAVOURS = ("current", "1.5", "1.4", "1.3")
AUTO = "auto"
ENV_VAR = "PERFPARSER_PROTOCOL"

# Ancestors skipped on the way up to hotspot: wrapper scripts (HOTSPOT_PERFPARSER may name a
# shell script) and the onefile bootloader, which runs our interpreter as its child.
_WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "busybox", "env", "nice", "timeout"})
_MAX_HOPS = 4
_HOTSPOT_NAMES = frozenset({"hotspot"})

_DPKG_DIR = "/var/lib/dpkg"
_DPKG_PACKAGES = ("hotspot",)

# Patterns, compiled (and cached by re) on first use: most runs never look at a binary.
# Qt5 QStringLiteral: static QArrayData header (ref -1, size, alloc 0, offset 24) + UTF-16LE.
_QT5_LITERAL = (
    rb"\xff\xff\xff\xff[\x05-\x10]\x00\x00\x00\x00{8}\x18\x00{7}((?:[0-9.]\x00){5,16})\x00\x00"
)
# Qt6 QStringLiteral: bare NUL-terminated UTF-16LE in .rodata.
_UTF16_VERSION = (
    rb"(?<![\x20-\x7e]\x00)((?:[0-9]\x00){1,2}\.\x00(?:[0-9]\x00){1,2}\.\x00(?:[0-9]\x00){1,3})\x00\x00"
)
_VERSION = r"(\d+)\.(\d+)\.(\d+)"
_SCAN_LIMIT = 64 << 20


class FlavourError(ValueError):
    """An explicitly requested flavour (option or environment) is not one we can write."""


def choose_flavour(cli_value: str | None, env: Mapping[str, str]) -> str:
    """The flavour to write: --protocol value, else $PERFPARSER_PROTOCOL, else auto-detected.

    Empty or "auto" values fall through to the next source. Raises FlavourError for a value
    that names no flavour (the CLI reports it as an invalid option).
    """
    for value, source in ((cli_value, "--protocol"), (env.get(ENV_VAR), ENV_VAR)):
        if value and value != AUTO:
            if value not in FLAVOURS:
                choices = ", ".join((AUTO, *FLAVOURS))
                raise FlavourError(f"{source}: unknown protocol {value!r} (choose from {choices})")
            return value
    return launcher_flavour(env)


def launcher_flavour(env: Mapping[str, str], pid: int | None = None) -> str:
    """Flavour of the hotspot that launched process `pid` (default: us), else "current"."""
    try:
        exe = find_launcher(os.getpid() if pid is None else pid)
        if exe is None:
            return "current"
        version = cached_hotspot_version(exe, cache_dir(env))
    except OSError:
        return "current"
    return flavour_for_version(version)


def flavour_for_version(version: tuple[int, int, int] | None) -> str:
    """The layout each hotspot release reads (PROTOCOL.md §5.2)."""
    if version is None:
        return "current"
    major_minor = version[:2]
    if major_minor < (1, 4):
        return "1.3"
    if major_minor < (1, 5):
        return "1.4"
    if major_minor < (1, 6):
        return "1.5"
    return "current"


def find_launcher(pid: int) -> str | None:
    """/proc path of the hotspot executable that started `pid`, skipping wrappers; or None."""
    # Only a frozen executable has a bootloader parent running the same file as itself.
    own = _real_exe(pid) if getattr(sys, "frozen", False) else None
    for _ in range(_MAX_HOPS):
        pid = _parent_pid(pid)
        if pid <= 1:
            return None
        exe = _real_exe(pid)
        name = os.path.basename(exe)
        if name in _HOTSPOT_NAMES or _argv0_name(pid) in _HOTSPOT_NAMES:
            return f"/proc/{pid}/exe"
        if exe != own and name not in _WRAPPERS:
            return None
    return None


def _real_exe(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    # comm (field 2) may contain spaces and parentheses: fields resume after the last ')'.
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def _argv0_name(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv0 = f.read().split(b"\0", 1)[0]
    return os.path.basename(argv0.decode(errors="replace"))


def cache_dir(env: Mapping[str, str]) -> Path:
    from pathlib import Path  # not imported up front: only a run launched by hotspot needs it

    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or "/", ".cache")
    return Path(base) / "perfparser-py"


def cached_hotspot_version(exe: str, cache: Path) -> tuple[int, int, int] | None:
    """hotspot_version(exe), remembered in cache/launchers.json keyed by the binary's identity."""
    import json

    st = os.stat(exe)
    key = f"{os.path.realpath(exe)}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
    path = cache / "launchers.json"
    try:
        known = json.loads(path.read_text())
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if key in known:
        hit = known[key]
        return tuple(hit) if isinstance(hit, list) and len(hit) == 3 else None
    version = hotspot_version(exe)
    known[key] = list(version) if version else None
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f"launchers.json.{os.getpid()}"
        tmp.write_text(json.dumps(known))
        os.replace(tmp, path)  # atomic: concurrent parsers never see a half-written file
    except OSError:
        pass  # a read-only cache only costs the scan next time
    return version


def hotspot_version(exe: str) -> tuple[int, int, int] | None:
    """Version of the hotspot binary `exe` (a path or /proc/<pid>/exe), None if not certain."""
    return dpkg_version(os.path.realpath(exe)) or embedded_version(exe)


def dpkg_version(real_path: str) -> tuple[int, int, int] | None:
    """Upstream version of the Debian package that installed `real_path`, if it is hotspot's."""
    for package in _DPKG_PACKAGES:
        try:
            with open(os.path.join(_DPKG_DIR, "info", f"{package}.list"),
                      encoding="utf-8", errors="replace") as f:
                owned = f.read()
        except OSError:
            continue
        if real_path not in owned.splitlines():
            continue
        return _parse_version(_dpkg_status_version(package) or "")
    return None


def _dpkg_status_version(package: str) -> str | None:
    with open(os.path.join(_DPKG_DIR, "status"), encoding="utf-8", errors="replace") as status:
        in_stanza = False
        for line in status:
            if line.startswith("Package: "):
                in_stanza = line[9:].strip() == package
            elif in_stanza and line.startswith("Version: "):
                # "1:1.3.0-2" -> "1.3.0-2": drop the epoch.
                return line[9:].strip().split(":", 1)[-1]
    return None


def embedded_version(exe: str) -> tuple[int, int, int] | None:
    """The application version string compiled into a Qt binary, if exactly one is found."""
    import re

    with open(exe, "rb") as f:
        data = f.read(_SCAN_LIMIT)
    for pattern in (_QT5_LITERAL, _UTF16_VERSION):
        found = {m.group(1).decode("utf-16-le") for m in re.finditer(pattern, data)}
        versions = {v for v in map(_parse_version, found) if v}
        if len(versions) == 1:
            return versions.pop()
        if versions:
            return None  # several candidates: not reliable
    return None


def _parse_version(text: str) -> tuple[int, int, int] | None:
    import re

    m = re.match(_VERSION, text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None
