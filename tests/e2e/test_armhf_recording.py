"""A 32-bit Arm (armhf) `--call-graph dwarf` recording through the whole parser: the recorded
machine's name, the samples' 32-bit registers and stack copies, a stripped library that has
only its exception-handling index (elf.exidx) and names its Thumb functions. No Arm machine
records here: the recording is written in code (tests/synth.py) from a library clang builds,
its samples' stacks as tests/arm_programs.walkable_stack lays them out."""

from __future__ import annotations

import subprocess
from array import array
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from perfparser_py.elf.image import ElfImage
from perfparser_py.perfdata.events import packed_regs
from perfparser_py.perfdata.abi import SAMPLE_IP, SAMPLE_PERIOD, SAMPLE_TID, SAMPLE_TIME
from perfparser_py.unwind import dwarf
from perfparser_py.unwind.history import History
from perfparser_py.unwind.process import ModuleAt
from perfparser_py.unwind.rules import cfi_for_image
from tests import arm_programs
from tests.corpus.expect import decode, run_parser
from tests.synth import PipeWriter

BASE = 0x4000_0000  # where the library is mapped
SP = 0x7E00_0000
PID = 4242


class _Mapped(ModuleAt):
    def __init__(self, image, cfi) -> None:
        self.lo, self.hi = image.span()
        self.mod = (image, BASE, cfi)

    def module(self, addr: int):
        return self.mod if self.lo <= addr - BASE < self.hi else None


@pytest.mark.parametrize("machine", ["armv7l", "aarch64"])
def test_an_armhf_dwarf_recording_is_unwound_and_named(tmp_path: Path, machine: str) -> None:
    """Every frame the walk finds in the stripped library is its function's name, from a
    recording of an arm machine, and of an arm64 one running the 32-bit process."""
    lib = arm_programs.build(tmp_path, "clang", "thumb-O2", False)
    app = tmp_path / "app"
    app.mkdir()
    stripped = app / "libp.so"
    subprocess.run(["llvm-objcopy", "--strip-debug", str(lib), str(stripped)], check=True)
    image = ElfImage.open(str(stripped))
    cfi = cfi_for_image(image)
    calls = [ra for ra in arm_programs.returns(stripped) if cfi.row(ra - 1).cfa[2] < 256]
    words, regs = arm_programs.walkable_stack(calls, True, SP, BASE)
    # the frames, as the walk finds them (tests/elf/test_exidx.py holds it to the CFI's)
    packed, _ = dwarf.unwind("arm", 1, packed_regs(regs), (1 << 16) - 1, memoryview(words),
                             _Mapped(image, cfi), History(), 64)
    expected = [image.symbol_at(addr - BASE)[0] for addr in array("Q", packed)]
    assert len(expected) >= 10 and set(expected) <= {"leaf", "vla", "fl", "many", "top"}

    mask = (1 << 16) - 1 if machine == "armv7l" else (1 << 33) - 1
    sample_regs = regs if machine == "armv7l" else [
        *regs, *(0xDEAD0000 + k for k in range(16, 30)), regs[14], regs[13], regs[15]]
    w = PipeWriter(SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_PERIOD, regs_user=mask)
    w.comm(PID, PID, b"armprog", 1)
    with stripped.open("rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_LOAD":
                start = seg["p_vaddr"] & ~0xFFF
                w.mmap2(PID, BASE + start, seg["p_vaddr"] + seg["p_memsz"] - start,
                        seg["p_offset"] & ~0xFFF, b"/usr/lib/arm-linux-gnueabihf/libp.so", 2,
                        prot=5 if seg["p_flags"] & 1 else 3)
    for t in range(3, 8):
        w.sample(PID, PID, t, regs[15], regs=tuple(sample_regs), abi=1, stack=words)
    data = tmp_path / "armhf.data"
    data.write_bytes(w.data())

    res = run_parser(["--input", str(data), "--arch", machine, "--app", str(app)])
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    samples = decode(res.stdout)[0]
    assert len(samples) == 5
    for s in samples:
        assert [f.sym for f in s.frames] == expected
        assert {f.dso for f in s.frames} == {"libp.so"}
