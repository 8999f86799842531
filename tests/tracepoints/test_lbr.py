"""Recorded call chains stitched with an LBR call stack (SEMANTICS §11.2)."""

from __future__ import annotations

from perfparser_py.perfdata.abi import CONTEXT_KERNEL, CONTEXT_USER
from perfparser_py.unwind.framepointer import callchain_frames

K1, K2 = 0xFFFFFFFF81000010, 0xFFFFFFFF81000020
IP, U2 = 0x401000, 0x402000
LBR = ((0x401100, 0x401200, 0), (0x401300, 0x401400, 0), (0x401500, 0x401600, 0))


def test_user_sample_frames_come_from_the_branch_stack() -> None:
    # callee of the newest branch, then every caller; the recorded user part is dropped
    frames = callchain_frames((CONTEXT_USER, IP, U2), IP, True, LBR)
    assert frames == [(0x401200, False), (0x401100, False), (0x401300, False), (0x401500, False)]


def test_kernel_part_is_kept_before_the_branch_stack() -> None:
    chain = (CONTEXT_KERNEL, K1, K2, CONTEXT_USER, IP, U2)
    frames = callchain_frames(chain, K1, False, LBR)
    assert frames[:2] == [(K1, True), (K2, True)]
    assert frames[2:] == [(0x401200, False), (0x401100, False), (0x401300, False),
                          (0x401500, False)]


def test_user_leaf_missing_from_the_chain_is_added_before_the_branches() -> None:
    frames = callchain_frames((CONTEXT_USER, U2), IP, True, LBR[:1])
    assert frames == [(IP, False), (0x401200, False), (0x401100, False)]


def test_walk_ending_in_kernel_context_ignores_the_branch_stack() -> None:
    frames = callchain_frames((CONTEXT_KERNEL, K1, K2), K1, False, LBR)
    assert frames == [(K1, True), (K2, True)]


def test_guest_context_stops_the_walk() -> None:
    guest = 2**64 - 2048
    frames = callchain_frames((CONTEXT_USER, IP, guest, U2), IP, True, ())
    assert frames == [(IP, False)]


def test_without_branch_stack_the_callchain_is_used() -> None:
    frames = callchain_frames((CONTEXT_KERNEL, K1, CONTEXT_USER, U2), K1, False, ())
    assert frames == [(K1, True), (U2, False)]  # a kernel ip is never a user frame (quirk 16)
    frames = callchain_frames((CONTEXT_USER, U2), IP, True, ())
    assert frames == [(IP, False), (U2, False)]
