"""Kernel code named by PERF_RECORD_KSYMBOL (BPF programs, trampolines), on a synthesized
stream whose records follow the kernel's struct layouts, checked against perf's decoding of
the same stream; and the other records perf writes that carry nothing for the profile."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from perfparser_py.perfdata.records import time_conv_struct
from tests.corpus.expect import decode, run_parser
from tests.synth import CONTEXT_USER, PipeWriter

PROG = 0xFFFFFFFFC0001000
ALPHA, BETA = b"bpf_prog_0123456789abcdef_alpha", b"bpf_prog_fedcba9876543210_beta"
TRAMPOLINE = b"bpf_trampoline_6442"


def _other_records(w: PipeWriter) -> None:
    """One of each record perf writes that we read past: bodies as in perf's event.h and the
    kernel's perf_event.h."""
    w.record(69, struct.pack("<Q4Q", 1, 1, 0, 0, 100), sample_id=False)  # ID_INDEX
    w.record(73, struct.pack("<QQ16s", 1, 100, b"prog"), sample_id=False)  # THREAD_MAP
    w.record(74, struct.pack("<HHHH", 0, 2, 0, 1), sample_id=False)  # CPU_MAP: cpus 0, 1
    conv = time_conv_struct(False).build(dict(  # with perf >= 5.10's extension
        time_shift=10, time_mult=500, time_zero=0, extension=dict(
            time_cycles=0, time_mask=2**64 - 1, cap_user_time_zero=1, cap_user_time_short=0)))
    w.record(79, conv, sample_id=False)  # TIME_CONV
    w.record(82, b"", sample_id=False)  # FINISHED_INIT
    w.record(75, struct.pack("<QQQ", 1, 1, 0), sample_id=False)  # STAT_CONFIG: aggr mode 0
    w.record(76, struct.pack("<QIIQQQ", 1, 0, 0, 42, 1000, 1000), sample_id=False)  # STAT
    w.record(77, struct.pack("<QQ", 0, 15), sample_id=False)  # STAT_ROUND
    # BPF_EVENT: PROG_LOAD of program id 7, its tag
    w.record(18, struct.pack("<HHI8s", 1, 0, 7, bytes.fromhex("0123456789abcdef")), time=11)
    # TEXT_POKE: 5 bytes at a kernel address replaced by 5 others
    w.record(20, struct.pack("<QHH10s2x", 0xFFFFFFFF81000100, 5, 5, bytes(range(10))), time=12)
    w.record(19, struct.pack("<Q", 1) + b"/\0\0\0\0\0\0\0", time=13)  # CGROUP
    w.record(16, struct.pack("<IIQ", 100, 100, 0), pid=100, tid=100, time=14)  # NAMESPACES


def _stream() -> bytes:
    w = PipeWriter()
    w.comm(100, 100, b"prog", 1)
    _other_records(w)
    w.ksymbol(PROG, 0x100, ALPHA, 10)
    w.sample(100, 100, 5, PROG + 0x10, kernel=True)  # before the program was loaded
    w.sample(100, 100, 20, PROG + 0x10, kernel=True)
    w.ksymbol(PROG, 0x100, ALPHA, 30, unregister=True)
    w.sample(100, 100, 35, PROG + 0x10, kernel=True)  # after it was unloaded
    w.ksymbol(PROG, 0x80, BETA, 40)  # another program at the same address
    w.ksymbol(PROG + 0x80, 0x40, TRAMPOLINE, 41, ksym_type=2)  # OOL
    w.sample(100, 100, 50, PROG + 0x10, kernel=True)
    w.sample(100, 100, 51, PROG + 0x90, kernel=True)
    return w.data()


EXPECTED = {5: None, 20: ALPHA, 35: None, 50: BETA, 51: TRAMPOLINE}


def _ours(tmp_path: Path) -> tuple[dict[int, tuple], bytes]:
    data = tmp_path / "bpf.data"
    data.write_bytes(_stream())
    # kallsyms names the area with a module's last function, as a running kernel may
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("ffffffff81000000 T _text\nffffffffc0000000 t mod_fn\t[mod]\n")
    res = run_parser(["--input", str(data), "--kallsyms", str(kallsyms)])
    assert res.returncode == 0, res.stderr
    return {s.time: tuple((f.sym, f.dso, f.kernel) for f in s.frames)
            for s in decode(res.stdout)[0]}, res.stderr


def test_bpf_programs_are_named_by_their_ksymbol_records(tmp_path: Path) -> None:
    frames, stderr = _ours(tmp_path)
    assert stderr == b""  # none of the other records costs a line
    for time, name in EXPECTED.items():
        if name is None:
            assert frames[time] == (("mod_fn", "[mod]", True),)
        else:  # perf's dso is named after the symbol too
            assert frames[time] == ((name.decode(), name.decode(), True),)


@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (CI has it)")
def test_perf_decodes_the_stream_alike(tmp_path: Path) -> None:
    data = tmp_path / "perf.data"
    data.write_bytes(_stream())
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "time,ip,sym", "--ns"],
                         capture_output=True, text=True, check=True).stdout
    named = {}
    lines = out.splitlines()
    for head, frame in zip(lines, lines[1:], strict=False):
        if head.rstrip().endswith(":") and frame.startswith("\t"):  # not the STAT table
            sym = frame.split()[1]
            named[int(head.strip().rstrip(":").split(".")[1])] = (
                None if sym == "[unknown]" else sym.encode())
    assert named == EXPECTED
    assert "42" in out  # the STAT record was read as one


def test_a_user_return_address_in_the_kernel_half_is_no_kernel_code(tmp_path: Path) -> None:
    """A user stack walked through a garbage frame pointer may yield any return address, one
    in the kernel half too. It is in the chain's user context, so perf looks it up in the
    thread's maps ("[unknown]") and never in the kernel's: so must we, though the same address
    is a BPF program's in the kernel context."""
    w = PipeWriter()
    w.comm(100, 100, b"prog", 1)
    w.ksymbol(PROG, 0x100, ALPHA, 10)
    w.sample(100, 100, 20, PROG + 0x10, [PROG + 0x10, CONTEXT_USER, 0x401000, PROG + 0x20],
             kernel=True)
    data = tmp_path / "garbage.data"
    data.write_bytes(w.data())
    res = run_parser(["--input", str(data), "--kallsyms", "/dev/null"])
    assert res.returncode == 0, res.stderr
    [sample] = decode(res.stdout)[0]
    assert [(f.sym, f.kernel) for f in sample.frames] == [
        (ALPHA.decode(), True), (None, False), (None, False)]
    if shutil.which("perf"):
        out = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso"],
                             capture_output=True, text=True, check=True).stdout
        assert [line.split()[1:] for line in out.splitlines() if line.strip()] == [
            [ALPHA.decode(), f"({ALPHA.decode()})"], ["[unknown]", "([unknown])"],
            ["[unknown]", "([unknown])"]]
