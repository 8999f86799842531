"""A 32-bit program on a 64-bit kernel, recorded with `--call-graph dwarf`.

perf samples a compat task's user registers in the 32-bit ABI (PERF_SAMPLE_REGS_ABI_32:
eax..eip in the x86 layout) and copies its stack as for any task. perf 6.1's own `perf
script` unwinds none of these stacks, so the truth is the program itself: built without frame
pointers, every sample in one of its leaves must unwind through its callers to main.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.corpus.expect import decode, run_parser
from tests.e2e.programs import build_c
from tests.e2e.test_fresh_recordings import WORKLOAD

# leaf_a or leaf_b <- mid3 <- mid2 <- mid1 <- recurse (1 to 5 deep, as main's i % 5 says) <- main
_PROGRAM_STACK = re.compile(r"leaf_[ab] mid3 mid2 mid1( recurse){1,5} main( |$)")


def test_dwarf_stacks_of_a_32_bit_program_unwind_to_main(tmp_path: Path) -> None:
    exe = build_c(tmp_path, "i386dw", WORKLOAD, "-m32", "-O2", "-g", "-fomit-frame-pointer")
    data = tmp_path / "i386dw.data"
    subprocess.run(["perf", "record", "-N", "-q", "-F", "1999", "--call-graph", "dwarf",
                    "-o", str(data), "--", str(exe), "30000"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    res = run_parser(["--input", str(data), "--app", str(tmp_path)])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    ours, _ = decode(res.stdout)
    in_leaves = [" ".join(f.sym or "??" for f in s.frames if not f.kernel) for s in ours
                 if s.comm == "i386dw" and s.frames and not s.frames[0].kernel
                 and s.frames[0].sym in ("leaf_a", "leaf_b")]
    assert len(in_leaves) > 100
    wrong = [stack for stack in in_leaves if not _PROGRAM_STACK.match(stack)]
    assert len(wrong) <= 0.02 * len(in_leaves), (len(wrong), len(in_leaves), wrong[:3])
