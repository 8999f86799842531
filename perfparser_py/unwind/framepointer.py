"""Frames from a sample's kernel-recorded callchain and LBR branch stack (SEMANTICS §11.2)."""

from __future__ import annotations

from ..perfdata.abi import CONTEXT_HV, CONTEXT_KERNEL, CONTEXT_MAX, CONTEXT_USER


def callchain_frames(callchain, ip: int, ip_is_user: bool, branch_stack) -> list[tuple[int, bool]]:
    """(address, is_kernel) leaf first, context markers removed.

    perf sometimes omits the leaf user frame: the sample ip is put in front of the first user
    frame when it differs. Unlike upstream we only do that for a user-space sample ip (upstream
    inserts a kernel ip as a bogus user frame, SEMANTICS §18 #16). With an LBR branch stack the
    user part comes from the branches: callee of the newest branch, then every caller."""
    frames: list[tuple[int, bool]] = []
    kernel = False
    user_seen = False
    for addr in callchain:
        if addr >= CONTEXT_MAX:
            if addr == CONTEXT_KERNEL or addr == CONTEXT_HV:
                kernel = True
            elif addr == CONTEXT_USER:
                kernel = False
            else:
                break  # guest contexts: not ours to resolve
            continue
        if not kernel:
            if not user_seen and ip_is_user and addr != ip:
                frames.append((ip, False))
            if branch_stack:
                break
            user_seen = True
        frames.append((addr, kernel))
    if not kernel and branch_stack:
        frames.append((branch_stack[0][1], False))
        for entry in branch_stack:  # a loop, not a generator: no closure in a cpdef function
            frames.append((entry[0], False))
    return frames
