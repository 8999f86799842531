"""The CPUs this process may use: the helper processes are worth starting only with two."""

from __future__ import annotations

import os


def usable() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
