"""The CPUs this process may use: the helper processes are worth starting only with two, and
helpers that work ahead for the main thread run at a lower priority than it."""

from __future__ import annotations

import os
import sys

# How much lower: on a busy machine the main thread, whose results everything waits for,
# keeps its share of a CPU instead of splitting it with work it does not need yet, while an
# idle CPU still runs the helpers at full speed (docs/performance.md, round 9). Small enough
# that a fully loaded machine still gives them about half a normal share, never starving
# the main thread that waits for them.
HELPER_NICENESS = 3


def usable() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def lower_helper_priority() -> None:
    """Lower the calling thread's priority by HELPER_NICENESS (best effort). Linux only: there
    the nice value belongs to the thread, elsewhere it would slow the whole process."""
    if sys.platform.startswith("linux"):
        try:
            os.nice(HELPER_NICENESS)
        except OSError:
            pass
