"""Build small pipe-mode perf.data streams in code, for tests of exact record sequences.

Layout facts from the perf.data format: a 16-byte pipe header, then records
{type u32, misc u16, size u16, body}; attrs arrive as HEADER_ATTR records. Every record
carries a sample_id trailer {pid, tid, time} (sample_id_all set; the fields sample_type has
of TID and TIME).
"""

from __future__ import annotations

import struct

from perfparser_py.perfdata.abi import (
    CONTEXT_KERNEL,
    CONTEXT_USER,
    FLAG_SAMPLE_ID_ALL,
    FLAG_USE_CLOCKID,
    RECORD_CALLCHAIN_DEFERRED,
    RECORD_COMM,
    RECORD_EXIT,
    RECORD_FINISHED_ROUND,
    RECORD_FORK,
    RECORD_HEADER_ATTR,
    RECORD_KSYMBOL,
    RECORD_MISC_COMM_EXEC,
    RECORD_MISC_KERNEL,
    RECORD_MISC_MMAP_BUILD_ID,
    RECORD_MISC_USER,
    RECORD_MMAP2,
    RECORD_SAMPLE,
    SAMPLE_CALLCHAIN,
    SAMPLE_IP,
    SAMPLE_PERIOD,
    SAMPLE_REGS_USER,
    SAMPLE_STACK_USER,
    SAMPLE_TID,
    SAMPLE_TIME,
)
from perfparser_py.perfdata.declare import attr_struct
from perfparser_py.perfdata.records import (
    body_struct,
    mmap2_struct,
    sample_id_struct,
    sample_struct,
)


def body(rtype: int, **fields) -> bytes:
    """A record body (little-endian) built by the declaration the parser reads it with."""
    return body_struct(rtype, False).build(fields)


class PipeWriter:
    def __init__(self, sample_type: int = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN
                 | SAMPLE_PERIOD,
                 clockid: int | None = None, regs_user: int = 0) -> None:
        """clockid: recorded with `perf record -k CLOCKID` (a VER3 attr with use_clockid).
        regs_user: `--call-graph dwarf`'s user registers (sample_regs_user; the samples then
        carry them and a stack copy: a VER3 attr)."""
        if regs_user:
            sample_type |= SAMPLE_REGS_USER | SAMPLE_STACK_USER
        self.sample_type = sample_type
        self.nregs = bin(regs_user).count("1")
        self.out = bytearray(b"PERFILE2" + struct.pack("<Q", 16))
        # VER0 perf_event_attr: software cpu-clock, sampling period 1000
        flags = FLAG_SAMPLE_ID_ALL | (FLAG_USE_CLOCKID if clockid is not None else 0)
        attr = attr_struct(False).build(dict(
            type=1, size=64 if clockid is None and not regs_user else 96, config=0,
            sample_period=1000, sample_type=sample_type, read_format=0, flags=flags,
            wakeup_events=0, bp_type=0, config1=0, clockid=clockid or 0,
            sample_regs_user=regs_user, sample_stack_user=8192 if regs_user else 0))
        self._record(RECORD_HEADER_ATTR, 0, attr + struct.pack("<Q", 1))

    def _record(self, rtype: int, misc: int, body: bytes) -> None:
        self.out += struct.pack("<IHH", rtype, misc, 8 + len(body)) + body

    def _trailer(self, pid: int, tid: int, time: int) -> bytes:
        """The sample_id trailer: the TID and TIME fields that sample_type selects."""
        return sample_id_struct(self.sample_type, False).build(dict(
            pid=pid & 0xFFFFFFFF, tid=tid & 0xFFFFFFFF, time=time))

    def comm(self, pid: int, tid: int, name: bytes, time: int, exec_: bool = False) -> None:
        self.record(RECORD_COMM, body(RECORD_COMM, pid=pid, tid=tid, comm=name), pid, tid, time,
                    RECORD_MISC_COMM_EXEC if exec_ else 0)

    def fork(self, pid: int, ppid: int, time: int, tid: int | None = None) -> None:
        tid = pid if tid is None else tid
        task = body(RECORD_FORK, pid=pid, ppid=ppid, tid=tid, ptid=ppid, time=time)
        self.record(RECORD_FORK, task, pid, tid, time)

    def exit(self, pid: int, time: int, tid: int | None = None) -> None:
        tid = pid if tid is None else tid
        self.record(RECORD_EXIT, body(RECORD_EXIT, pid=pid, ppid=pid, tid=tid, ptid=pid, time=time),
                    pid, tid, time)

    def mmap2(self, pid: int, addr: int, length: int, pgoff: int, path: bytes, time: int,
              prot: int = 5, build_id: bytes | None = None) -> None:
        """MMAP2; with `build_id`, in place of the device and inode fields as perf record
        --buildid-mmap writes it (PERF_RECORD_MISC_MMAP_BUILD_ID)."""
        fields = dict(pid=pid, tid=pid, addr=addr, len=length, pgoff=pgoff, prot=prot,
                      flags=2, filename=path)  # flags: MAP_PRIVATE
        misc = RECORD_MISC_USER
        if build_id is None:
            fields.update(maj=0, min=0, ino=0, ino_generation=0)
        else:
            fields.update(build_id_size=len(build_id), build_id=build_id.ljust(20, b"\0"))
            misc |= RECORD_MISC_MMAP_BUILD_ID
        self.record(RECORD_MMAP2, mmap2_struct(False, build_id is not None).build(fields), pid, pid,
                    time, misc)

    def record(self, rtype: int, body: bytes, pid: int = -1, tid: int = -1, time: int = 0,
               misc: int = 0, sample_id: bool = True) -> None:
        """Any record: `body` as the kernel lays it out, then (sample_id) the trailer."""
        self._record(rtype, misc, body + (self._trailer(pid, tid, time) if sample_id else b""))

    def ksymbol(self, addr: int, length: int, name: bytes, time: int, ksym_type: int = 1,
                unregister: bool = False) -> None:
        """PERF_RECORD_KSYMBOL (17): {addr u64, len u32, ksym_type u16, flags u16, name}."""
        self.record(RECORD_KSYMBOL, body(RECORD_KSYMBOL, addr=addr, len=length,
                                         ksym_type=ksym_type, flags=int(unregister), name=name),
                    time=time, misc=RECORD_MISC_KERNEL)

    def sample(self, pid: int, tid: int, time: int, ip: int, callchain: list[int] | None = None,
               period: int = 1000, kernel: bool = False, chain: list[int] | None = None,
               regs: tuple[int, ...] = (), abi: int = 2, stack: bytes = b"") -> None:
        """callchain: the frames after the context marker; chain: the whole chain as given.
        regs, abi, stack: the user registers (regs_user's) and the stack copy."""
        if chain is None:
            context = CONTEXT_KERNEL if kernel else CONTEXT_USER
            chain = [context, *(callchain if callchain is not None else [ip])]
        user = self.sample_type & SAMPLE_REGS_USER
        data = sample_struct(self.sample_type, 0, self.nregs, False, False).build(dict(
            ip=ip, pid=pid, tid=tid, time=time, period=period,
            callchain=chain if self.sample_type & SAMPLE_CALLCHAIN else None,
            regs_user=dict(abi=abi, regs=list(regs)) if user else None,
            stack_user=dict(size=len(stack), data=stack, dyn_size=len(stack)) if user else None))
        self._record(RECORD_SAMPLE, RECORD_MISC_KERNEL if kernel else RECORD_MISC_USER, data)

    def callchain_deferred(self, pid: int, tid: int, time: int, cookie: int,
                           ips: list[int]) -> None:
        """PERF_RECORD_CALLCHAIN_DEFERRED (22): {cookie u64, nr u64, ips[nr]}."""
        self.record(RECORD_CALLCHAIN_DEFERRED,
                    body(RECORD_CALLCHAIN_DEFERRED, cookie=cookie, nr=len(ips), ips=ips), pid, tid,
                    time, RECORD_MISC_USER)

    def finished_round(self) -> None:
        self._record(RECORD_FINISHED_ROUND, 0, b"")

    def data(self) -> bytes:
        return bytes(self.out)
