"""Build small pipe-mode perf.data streams in code, for tests of exact record sequences.

Layout facts from the perf.data format: a 16-byte pipe header, then records
{type u32, misc u16, size u16, body}; attrs arrive as HEADER_ATTR records. Every record
carries a sample_id trailer {pid, tid, time} (sample_id_all set; the fields sample_type has
of TID and TIME).
"""

from __future__ import annotations

import struct

IP, TID, TIME, CALLCHAIN, PERIOD = 1 << 0, 1 << 1, 1 << 2, 1 << 5, 1 << 8
SAMPLE_ID_ALL = 1 << 18
USE_CLOCKID = 1 << 25
FREQ = 1 << 10
CONTEXT_USER = 2**64 - 512
CONTEXT_KERNEL = 2**64 - 128

REC_MMAP, REC_COMM, REC_EXIT, REC_FORK, REC_SAMPLE, REC_MMAP2 = 1, 3, 4, 7, 9, 10
REC_FINISHED_ROUND, REC_HEADER_ATTR = 68, 64


def _pad(data: bytes) -> bytes:
    data += b"\0"
    return data + b"\0" * (-len(data) % 8)


class PipeWriter:
    def __init__(self, sample_type: int = IP | TID | TIME | CALLCHAIN | PERIOD,
                 clockid: int | None = None) -> None:
        """clockid: recorded with `perf record -k CLOCKID` (a VER3 attr with use_clockid)."""
        self.sample_type = sample_type
        self.out = bytearray(b"PERFILE2" + struct.pack("<Q", 16))
        # VER0 perf_event_attr: software cpu-clock, sampling period 1000
        flags = SAMPLE_ID_ALL | (USE_CLOCKID if clockid is not None else 0)
        size = 64 if clockid is None else 96
        attr = struct.pack("<IIQQQQQIIQ", 1, size, 0, 1000, sample_type, 0, flags, 0, 0, 0)
        if clockid is not None:  # config2, branch_sample_type, regs/stack_user, clockid
            attr += struct.pack("<QQQIi", 0, 0, 0, 0, clockid)
        self._record(REC_HEADER_ATTR, 0, attr + struct.pack("<Q", 1))

    def _record(self, rtype: int, misc: int, body: bytes) -> None:
        self.out += struct.pack("<IHH", rtype, misc, 8 + len(body)) + body

    def _trailer(self, pid: int, tid: int, time: int) -> bytes:
        """The sample_id trailer: the TID and TIME fields that sample_type selects."""
        out = b""
        if self.sample_type & TID:
            out += struct.pack("<II", pid & 0xFFFFFFFF, tid & 0xFFFFFFFF)
        if self.sample_type & TIME:
            out += struct.pack("<Q", time)
        return out

    def comm(self, pid: int, tid: int, name: bytes, time: int, exec_: bool = False) -> None:
        body = struct.pack("<ii", pid, tid) + _pad(name) + self._trailer(pid, tid, time)
        self._record(REC_COMM, 0x2000 if exec_ else 0, body)

    def fork(self, pid: int, ppid: int, time: int, tid: int | None = None) -> None:
        tid = pid if tid is None else tid
        body = struct.pack("<iiiiQ", pid, ppid, tid, ppid, time) + self._trailer(pid, tid, time)
        self._record(REC_FORK, 0, body)

    def exit(self, pid: int, time: int) -> None:
        body = struct.pack("<iiiiQ", pid, pid, pid, pid, time) + self._trailer(pid, pid, time)
        self._record(REC_EXIT, 0, body)

    def mmap2(self, pid: int, addr: int, length: int, pgoff: int, path: bytes, time: int,
              prot: int = 5, build_id: bytes | None = None) -> None:
        """MMAP2; with `build_id`, in place of the device and inode fields as perf record
        --buildid-mmap writes it (PERF_RECORD_MISC_MMAP_BUILD_ID)."""
        if build_id is None:
            ids, misc = struct.pack("<IIQQ", 0, 0, 0, 0), 0x2  # misc: user
        else:
            ids, misc = struct.pack("<BxH20s", len(build_id), 0, build_id), 0x2 | 1 << 14
        body = (
            struct.pack("<iiQQQ", pid, pid, addr, length, pgoff) + ids
            + struct.pack("<II", prot, 2)
            + _pad(path)
            + self._trailer(pid, pid, time)
        )
        self._record(REC_MMAP2, misc, body)

    def record(self, rtype: int, body: bytes, pid: int = -1, tid: int = -1, time: int = 0,
               misc: int = 0, sample_id: bool = True) -> None:
        """Any record: `body` as the kernel lays it out, then (sample_id) the trailer."""
        self._record(rtype, misc, body + (self._trailer(pid, tid, time) if sample_id else b""))

    def ksymbol(self, addr: int, length: int, name: bytes, time: int, ksym_type: int = 1,
                unregister: bool = False) -> None:
        """PERF_RECORD_KSYMBOL (17): {addr u64, len u32, ksym_type u16, flags u16, name}."""
        body = struct.pack("<QIHH", addr, length, ksym_type, int(unregister)) + _pad(name)
        self.record(17, body, time=time, misc=1)  # misc: kernel

    def sample(self, pid: int, tid: int, time: int, ip: int, callchain: list[int] | None = None,
               period: int = 1000, kernel: bool = False) -> None:
        body = b""
        if self.sample_type & IP:
            body += struct.pack("<Q", ip)
        if self.sample_type & TID:
            body += struct.pack("<II", pid, tid)
        if self.sample_type & TIME:
            body += struct.pack("<Q", time)
        if self.sample_type & PERIOD:
            body += struct.pack("<Q", period)
        if self.sample_type & CALLCHAIN:
            context = CONTEXT_KERNEL if kernel else CONTEXT_USER
            chain = [context, *(callchain if callchain is not None else [ip])]
            body += struct.pack(f"<Q{len(chain)}Q", len(chain), *chain)
        self._record(REC_SAMPLE, 0x1 if kernel else 0x2, body)

    def finished_round(self) -> None:
        self._record(REC_FINISHED_ROUND, 0, b"")

    def data(self) -> bytes:
        return bytes(self.out)
