"""cpus.lower_helper_priority: a helper thread yields to the main thread on a busy machine,
and only the helper does (on Linux the nice value belongs to the thread)."""

from __future__ import annotations

import os
import threading

from perfparser_py import cpus


def test_lower_helper_priority_lowers_only_the_calling_thread() -> None:
    main_before = os.getpriority(os.PRIO_PROCESS, 0)
    seen = []

    def helper() -> None:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        cpus.lower_helper_priority()
        seen.append((before, os.getpriority(os.PRIO_PROCESS, 0)))

    thread = threading.Thread(target=helper)
    thread.start()
    thread.join()
    assert seen == [(main_before, min(19, main_before + cpus.HELPER_NICENESS))]
    assert os.getpriority(os.PRIO_PROCESS, 0) == main_before
