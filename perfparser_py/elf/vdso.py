"""The running process's own vDSO image, for recordings of this boot.

The kernel maps the same vDSO into every process of one architecture and boot, so when a
recording's `[vdso]` build id equals ours, our own copy is the recorded code: its .dynsym
names the frames and its .eh_frame unwinds through them, as perf's build-id cache copy
(`[vdso]/<id>/vdso`) would. The finder checks the build id; this module only reads memory.
"""

from __future__ import annotations

from functools import cache

from .. import probes

VDSO_NAME = b"[vdso]"


def _vdso_range(maps: bytes) -> tuple[int, int] | None:
    """(start, end) of the `[vdso]` line of a /proc/PID/maps text."""
    for line in maps.splitlines():
        if line.endswith(b" [vdso]"):
            start, _, end = line.split(None, 1)[0].partition(b"-")
            return int(start, 16), int(end, 16)
    return None


def own_vdso() -> bytes | None:
    """The bytes of this process's vDSO mapping (an ELF image), None where there is none or
    it cannot be read (no /proc, a kernel without vDSO)."""
    try:
        probes.content(RUNNING_KERNEL)  # its build id decides what our vDSO is
    except OSError:
        pass
    return _own_vdso()


RUNNING_KERNEL = "/sys/kernel/notes"


@cache
def _own_vdso() -> bytes | None:
    try:
        with open("/proc/self/maps", "rb") as f:
            span = _vdso_range(f.read())
        if span is None:
            return None
        start, end = span
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            mem.seek(start)
            data = mem.read(end - start)
    except (OSError, ValueError, OverflowError):
        return None
    return data if len(data) == end - start else None
