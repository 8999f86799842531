"""A BPF program run while `perf record -a` records, named as perf names it.

The workload loads an eBPF socket filter with a bounded loop (bpf(2) through ctypes, so no
BPF toolchain is needed), attaches it to a UDP socket on loopback and sends packets to it:
the kernel runs the JIT-compiled program for each one. Its samples lie in no mapping; only
the PERF_RECORD_KSYMBOL that perf records for the program names them
(`bpf_prog_<tag>_<name>`). Needs root, as `perf record -a` does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from tests.corpus.expect import decode, run_parser
from tests.e2e.test_fresh_recordings import _perf_script, _same

SOCKET_FILTER = r"""
import ctypes, os, socket, struct, sys, time

def insn(code, dst=0, src=0, off=0, imm=0):
    return struct.pack("<BBhi", code, dst | (src << 4), off, imm)

# r0 = 0; r2 = 0; do { r2 += 1; r0 += r2; } while (r2 < 20000); r0 = -1 (keep the packet)
prog = b"".join([insn(0xb7, 0, imm=0), insn(0xb7, 2, imm=0), insn(0x07, 2, imm=1),
                 insn(0x0f, 0, 2), insn(0xa5, 2, off=-3, imm=20000), insn(0xb7, 0, imm=-1),
                 insn(0x95)])
insns = ctypes.create_string_buffer(prog)
license = ctypes.create_string_buffer(b"GPL")
attr = bytearray(128)  # union bpf_attr, the BPF_PROG_LOAD part
struct.pack_into("<IIQQ", attr, 0, 1, len(prog) // 8, ctypes.addressof(insns),
                 ctypes.addressof(license))  # BPF_PROG_TYPE_SOCKET_FILTER
attr[48:48 + 7] = b"pp_spin"  # prog_name
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(321, 5, (ctypes.c_char * 128).from_buffer(attr), 128)  # bpf(BPF_PROG_LOAD)
if fd < 0:
    sys.exit(f"bpf(BPF_PROG_LOAD): {os.strerror(ctypes.get_errno())}")
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("127.0.0.1", 0))
rx.setsockopt(socket.SOL_SOCKET, 50, fd)  # SO_ATTACH_BPF
rx.setblocking(False)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + 1.5
while time.time() < end:
    tx.sendto(b"x" * 32, rx.getsockname())
    try:
        while True:
            rx.recv(64)
    except BlockingIOError:
        pass
"""


def test_bpf_program_samples_are_named_from_ksymbol(tmp_path: Path) -> None:
    script = tmp_path / "socket_filter.py"
    script.write_text(SOCKET_FILTER)
    data = tmp_path / "bpf.data"
    subprocess.run(["perf", "record", "-q", "-a", "-g", "-F", "999", "-o", str(data), "--",
                    sys.executable, str(script)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    res = run_parser(["--input", str(data)], timeout=300)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert b"unhandled" not in res.stderr
    ours = {(s.tid, s.time): [f.sym for f in s.frames] for s in decode(res.stdout)[0]}
    perf = _perf_script(data)
    in_bpf = {k: v for k, v in perf.items() if v and v[0] and v[0].endswith("_pp_spin")}
    assert len(in_bpf) > 50, "the socket filter hardly ran"
    assert all(v[0].startswith("bpf_prog_") for v in in_bpf.values())
    wrong = [(k, ours.get(k), v) for k, v in in_bpf.items() if not _same(ours.get(k, []), v, {})]
    assert len(wrong) <= len(in_bpf) // 100, wrong[:3]
