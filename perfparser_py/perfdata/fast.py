"""Hand-written struct decoders for the hot records (SAMPLE, MMAP, MMAP2, COMM, FORK, EXIT).

Their struct formats and offsets come from layout.py's tables (made once per byte order here,
once per attr in attr.SamplePlan, whose `parts` are the sample's variable-size parts that
`part` reads). Fused and Stacked, the fast paths of frame-pointer and DWARF recordings, are
written for their layouts by hand; tests/perfdata/test_layout.py checks them against the
tables. Each must give exactly what the construct declarations in records.py give (tested
on every corpus file). They work on a memoryview and never copy raw or user-stack
bytes. Malformed input raises struct.error / ValueError; the reader turns that into
PerfDataError.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from types import SimpleNamespace

from . import events as ev
from . import layout as lay
from .abi import (
    PROT_EXEC,
    PROT_READ,
    RECORD_MISC_MMAP_BUILD_ID,
    RECORD_MISC_MMAP_DATA,
    RECORD_MISC_SWITCH_OUT,
    SAMPLE_BRANCH_STACK,
    SAMPLE_CALLCHAIN,
    SAMPLE_RAW,
    SAMPLE_READ,
    SAMPLE_REGS_USER,
    SAMPLE_STACK_USER,
    TYPE_TRACEPOINT,
)
from .attr import PerfEventAttr

_new = tuple.__new__
_SampleEvent = ev.SampleEvent
_ZERO = (0,)  # appended so that index -1 (field absent) reads 0
_NO_TRAILER = (0, 0, 0, 0)
_NOT_FUSED = SAMPLE_READ | SAMPLE_RAW | SAMPLE_BRANCH_STACK | SAMPLE_REGS_USER | SAMPLE_STACK_USER
_STACKED = SAMPLE_REGS_USER | SAMPLE_STACK_USER  # fused() makes a SampleEvent decoder
_NOT_STACKED = SAMPLE_READ | SAMPLE_RAW | SAMPLE_BRANCH_STACK


# the event fields of the variable-size parts, what they are when a part is absent
_NO_PARTS = ((), (), None, (), None, 0, b"", None)
assert ev.SampleEvent._fields[10:18] == ("read_values", "callchain", "raw", "branch_stack",
                                         "hw_idx", "regs_abi", "regs", "stack")


# each turns a part's values (head, items: None if there are none, tail; layout.PartPlan's
# head_at, item_at, words) into its event fields in the list of _NO_PARTS
def _read(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
          words: int) -> None:
    """(value, id) of each counter: the head's if one (no items), each item's if a group."""
    at, flat, step = (head_at, head, len(head)) if items is None else (item_at, items, words)
    v, i = at["value"], at.get("id", -1)
    if i < 0:
        out[0] = tuple((value, 0) for value in flat[v::step])
    else:
        out[0] = tuple(zip(flat[v::step], flat[i::step], strict=True))


def _callchain(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
               words: int) -> None:
    out[1] = items


def _raw(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
         words: int) -> None:
    out[2] = items


def _branch_stack(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
                  words: int) -> None:
    out[3] = tuple(zip(*(items[j::words] for j in range(words)), strict=True))
    i = head_at.get("hw_idx", -1)
    out[4] = head[i] if i >= 0 else None


def _regs_user(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
               words: int) -> None:
    out[5] = head[head_at["abi"]]
    out[6] = ev.packed_regs(items) if items is not None else b""  # none when abi is 0


def _stack_user(head: tuple, items, tail: tuple, out: list, head_at: dict, item_at: dict,
                words: int) -> None:
    size = head[head_at["size"]]
    if size:  # then dyn_size (the part's tail) is there
        out[7] = items[:min(tail[0], size)]


# by the name of its Part in layout.SAMPLE_VARIABLE
_EVENT_OF = {"read": _read, "callchain": _callchain, "raw": _raw,
             "branch_stack": _branch_stack, "regs_user": _regs_user, "stack_user": _stack_user}


# (pid, tid, time, cpu, ip, id, period, callchain, misc, size) of a SAMPLE whose attr has no
# READ/RAW/BRANCH_STACK/REGS_USER/STACK_USER: all a frame-pointer sample needs, without
# building the 23-field SampleEvent; values equal that event's fields. A plain tuple, the
# only event that is one (its kind in dispatch.ROUTES): compiled code indexes and unpacks an
# exact tuple in place where a subclass's went through the generic protocol, and none is
# copied into a subclass (a serial run of a 100k-sample Rust -g recording: 461 -> 418 ms).
FusedSample = tuple

# Trailer = (struct.Struct, indices of pid, tid, time, cpu) of the global attr, or None.
Trailer = tuple[struct.Struct, tuple[int, int, int, int]] | None


def trailer_for(attr: PerfEventAttr | None) -> Trailer:
    if attr is None or not attr.sample_id_all:
        return None
    return attr.plan.trailer, attr.plan.trailer_index


def make_decoders(big_endian: bool) -> SimpleNamespace:
    """The hot-record decoders for one byte order."""
    e = ">" if big_endian else "<"

    def head(rows) -> tuple[Callable, int]:
        """unpack_from of a layout's fixed-size head, and its size."""
        st = struct.Struct(e + lay.struct_format(rows))
        return st.unpack_from, st.size

    u64 = struct.Struct(e + "Q").unpack_from
    u32 = struct.Struct(e + "I").unpack_from
    # Fused and Stacked read 8-byte words as the host's: pid is their low half in a
    # little-endian file
    words_native = not big_endian and sys.byteorder == "little"
    mmap_head, mmap_name = head(lay.MMAP)  # the name follows the head
    mmap2_head, mmap2_name = head(lay.MMAP2)
    build_id_at = lay.offsets(lay.MMAP2_BUILD_ID)
    bid_size, bid_at = build_id_at["build_id_size"], build_id_at["build_id"]
    bid_max = build_id_at["prot"] - bid_at
    comm_head, comm_name = head(lay.COMM)
    task, task_size = head(lay.TASK)
    next_prev, next_prev_size = head(lay.SWITCH_CPU_WIDE)
    lost_head, lost_size = head(lay.LOST)

    def trailer_values(buf, end: int, trailer: Trailer) -> tuple[int, int, int, int]:
        if trailer is None:
            return _NO_TRAILER
        st, (ip, it, itime, icpu) = trailer
        v = st.unpack_from(buf, end - st.size) + _ZERO
        return v[ip], v[it], v[itime], v[icpu]

    def trailer_size(trailer: Trailer) -> int:
        return 0 if trailer is None else trailer[0].size

    def cstr(buf, start: int, stop: int) -> bytes:
        if stop < start:
            raise ValueError("record too short for its sample_id trailer")
        raw = bytes(buf[start:stop])
        nul = raw.find(b"\0")
        return raw if nul < 0 else raw[:nul]

    def mmap(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.MmapEvent:
        pid, tid, addr, length, pgoff = mmap_head(buf, pos)
        spid, stid, time, cpu = trailer_values(buf, end, trailer)
        filename = cstr(buf, pos + mmap_name, end - trailer_size(trailer))
        prot = PROT_READ if misc & RECORD_MISC_MMAP_DATA else PROT_EXEC
        return ev.MmapEvent(pid, tid, addr, length, pgoff, filename, prot, 0, 0, 0, 0, None,
                            time, cpu, spid, stid, size, misc)

    def mmap2(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.MmapEvent:
        pid, tid, addr, length, pgoff, maj, mino, ino, _gen, prot, flags = mmap2_head(buf, pos)
        build_id = None
        if misc & RECORD_MISC_MMAP_BUILD_ID:
            at = pos + bid_at
            build_id = bytes(buf[at:at + min(buf[pos + bid_size], bid_max)])
            maj = mino = ino = 0
        spid, stid, time, cpu = trailer_values(buf, end, trailer)
        filename = cstr(buf, pos + mmap2_name, end - trailer_size(trailer))
        return ev.MmapEvent(pid, tid, addr, length, pgoff, filename, prot, flags, maj, mino, ino,
                            build_id, time, cpu, spid, stid, size, misc)

    def comm(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.CommEvent:
        pid, tid = comm_head(buf, pos)
        _spid, _stid, time, cpu = trailer_values(buf, end, trailer)
        return ev.CommEvent(pid, tid, cstr(buf, pos + comm_name, end - trailer_size(trailer)),
                            time, cpu, size, misc)

    def fork(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.ForkEvent:
        if end - trailer_size(trailer) < pos + task_size:
            raise ValueError("FORK record too short")
        _spid, _stid, time, cpu = trailer_values(buf, end, trailer)
        return ev.ForkEvent(*task(buf, pos), time, cpu, size, misc)

    def exit_(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.ExitEvent:
        if end - trailer_size(trailer) < pos + task_size:
            raise ValueError("EXIT record too short")
        _spid, _stid, time, cpu = trailer_values(buf, end, trailer)
        return ev.ExitEvent(*task(buf, pos), time, cpu, size, misc)

    # SWITCH, SWITCH_CPU_WIDE and LOST: small records that come by the million (off-CPU
    # recordings), decoded here rather than by construct (~10 us each)
    def body_end(pos: int, end: int, trailer: Trailer, need: int, what: str) -> None:
        if end - trailer_size(trailer) < pos + need:
            raise ValueError(f"{what} record too short")

    def switch(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer,
               cpu_wide: bool) -> ev.SwitchEvent:
        body_end(pos, end, trailer, next_prev_size if cpu_wide else 0, "SWITCH")
        spid, stid, time, cpu = trailer_values(buf, end, trailer)
        npid, ntid = next_prev(buf, pos) if cpu_wide else (-1, -1)
        return ev.SwitchEvent(bool(misc & RECORD_MISC_SWITCH_OUT), npid, ntid, spid, stid, time,
                              cpu, cpu_wide, size)

    def lost(buf, pos: int, end: int, misc: int, size: int, trailer: Trailer) -> ev.LostEvent:
        body_end(pos, end, trailer, lost_size, "LOST")
        spid, stid, time, cpu = trailer_values(buf, end, trailer)
        return ev.LostEvent(*lost_head(buf, pos), spid, stid, time, cpu, size)

    arrays: dict[int, Callable] = {}  # n -> unpack_from of n words

    def new_array(n: int) -> Callable:
        """The unpack_from of n words, remembered (arrays.get is the hot path's lookup)."""
        if len(arrays) >= 1024:  # n comes from the input: stay bounded
            arrays.clear()
        unpack = arrays[n] = struct.Struct(f"{e}{n}Q").unpack_from
        return unpack

    def u64s(buf, pos: int, end: int, n: int) -> tuple[int, ...]:
        if n < 0 or pos + 8 * n > end:
            raise ValueError("array runs past the end of the record")
        return (arrays.get(n) or new_array(n))(buf, pos)

    def part(p: tuple, buf, pos: int, end: int, out: list) -> int:
        """Read one variable-size part at pos into its event fields in out; the position after
        it. p: the fields of its layout.PartPlan (layout.py's table for this attr) as a plain
        tuple, which the compiled code unpacks without iterating it."""
        name, unpack, size, count, given, words, when, after, after_size, after_when, head_at, \
            item_at = p
        values = unpack(buf, pos)  # the head
        pos += size
        items = None
        if words >= 0 and (when < 0 or values[when]):
            n = given if count < 0 else values[count]
            if words:
                items = u64s(buf, pos, end, n * words)
                pos += 8 * n * words
            else:
                if pos + n > end:
                    raise ValueError(f"sample's {name} runs past the end of the record")
                items = buf[pos:pos + n]
                pos += n
        tail = ()
        if after_size and (after_when < 0 or values[after_when]):
            if pos + after_size > end:
                raise ValueError(f"sample's {name} runs past the end of the record")
            tail = after(buf, pos)
            pos += after_size
        _EVENT_OF[name](values, items, tail, out, head_at, item_at, words)
        return pos

    def sample(buf, pos: int, end: int, misc: int, size: int,
               attr: PerfEventAttr) -> ev.SampleEvent:
        plan = attr.plan
        prefix = plan.prefix
        v = prefix.unpack_from(buf, pos) + _ZERO
        i_id, i_ip, i_pid, i_tid, i_time, i_addr, i_sid, i_cpu, i_period = plan.prefix_index
        pos += prefix.size
        out = list(_NO_PARTS)
        for p in plan.parts:
            pos = part(p, buf, pos, end, out)
        weight = data_src = transaction = 0
        tail = plan.tail
        if tail.size:
            weight, data_src, transaction = plan.tail_pick(tail.unpack_from(buf, pos) + _ZERO)
            pos += tail.size
        if pos > end:
            raise ValueError("sample fields run past the end of the record")
        # tuple.__new__ directly: the NamedTuple's generated __new__ is one more Python call
        return _new(_SampleEvent, (attr, v[i_pid], v[i_tid], v[i_time], v[i_cpu], v[i_ip],
                                   v[i_addr], v[i_id], v[i_sid], v[i_period], *out,
                                   weight, data_src, transaction, size, misc))

    def fused(attr: PerfEventAttr) -> Callable | None:
        """fused(buf, pos, end, misc, size) -> FusedSample for SAMPLEs of attr; or, for
        attrs of DWARF recordings, a SampleEvent decoder made for their layout (Stacked);
        None if attr has fields that need the full decoder, or the file is not in the
        host's byte order. Same checks and errors as sample()."""
        st = attr.sample_type
        if attr.type == TYPE_TRACEPOINT:
            return None
        if not words_native:
            return None
        if st & _NOT_FUSED:
            if st & _STACKED == _STACKED and not st & _NOT_STACKED:
                return Stacked(attr, arrays, new_array, sample).decode
            return None
        return Fused(attr, arrays, new_array, sample).decode

    def peek_u64(buf, pos: int) -> int:
        return u64(buf, pos)[0]

    return SimpleNamespace(sample=sample, mmap=mmap, mmap2=mmap2, comm=comm, fork=fork,
                           exit=exit_, switch=switch, lost=lost, fused=fused, peek_u64=peek_u64,
                           u32=u32)


class _Words:
    """What Fused and Stacked share: a SAMPLE of an attr whose every field is a whole 8-byte
    word or half of one (pid and tid, cpu and res), in a file of the host's byte order, read
    through one view of its buffer as words (made once a buffer) at word indices worked out
    once per attr: no unpack and no tuple but the ones the event holds. A record that is not
    word-aligned or fails a bounds check goes to the general decoder, sample(), which gives
    or raises what the tables say. Compiled with the C types of fast.pxd: indices are C
    integers and the words 64-bit C ones."""

    def __init__(self, attr: PerfEventAttr, arrays: dict, new_array: Callable,
                 sample: Callable) -> None:
        st = attr.sample_type
        self.attr = attr
        at = lay.offsets(lay.present(lay.SAMPLE_PREFIX, st))
        # word index in the record's body of each prefix field, -1 when absent
        (self.w_id, self.w_ip, self.w_pid, self.w_time, self.w_addr, self.w_sid, self.w_cpu,
         self.w_period) = (at.get(name, -8) >> 3 for name in (
             "id" if "id" in at else "identifier", "ip", "pid", "time", "addr", "stream_id",
             "cpu", "period"))
        self.head = attr.plan.prefix.size >> 3
        self.tail = attr.plan.tail.size >> 3
        self.chained = bool(st & SAMPLE_CALLCHAIN)
        self.arrays = arrays
        self.new_array = new_array
        self.sample = sample
        self.buf = None  # the buffer `words` views
        self.words = memoryview(b"").cast("Q")

    def _words_of(self, buf, pos: int, end: int) -> bool:
        """Whether the record [pos, end) of `buf` is whole words, `words` then viewing `buf`
        from its start (the records' offsets are into it; a new view for a new buffer)."""
        if buf is not self.buf:
            whole = memoryview(buf)
            self.words = whole[:len(whole) & ~7].cast("Q")
            self.buf = buf
        return not (pos & 7 or end & 7)

    def _at(self, base: int, index: int) -> int:
        """The word at `index` from word `base`, 0 for a field absent (index -1)."""
        return self.words[base + index] if index >= 0 else 0

    def _halves(self, p: int) -> tuple[int, int, int]:
        """(pid, tid, cpu) of the record whose body starts at word `p`."""
        pid = tid = cpu = 0
        if self.w_pid >= 0:
            w = self.words[p + self.w_pid]
            pid, tid = w & 0xFFFFFFFF, w >> 32
        if self.w_cpu >= 0:
            cpu = self.words[p + self.w_cpu] & 0xFFFFFFFF
        return pid, tid, cpu


class Fused(_Words):
    """make_decoders' fused(): a SAMPLE of an attr without the fields of _NOT_FUSED as a
    FusedSample, its call chain read by one unpack of the attr's decoders (`arrays`)."""

    def decode(self, buf, pos: int, end: int, misc: int, size: int) -> FusedSample:
        if not self._words_of(buf, pos, end):
            return self._general(buf, pos, end, misc, size)
        words = self.words
        p = pos >> 3
        last = end >> 3
        q = p + self.head
        callchain = ()
        if self.chained:
            if q >= last:
                return self._general(buf, pos, end, misc, size)
            nr = words[q]
            q += 1
            if nr > last - q:
                return self._general(buf, pos, end, misc, size)
            callchain = (self.arrays.get(nr) or self.new_array(nr))(buf, q << 3)
            q += nr
        if q + self.tail > last:
            return self._general(buf, pos, end, misc, size)
        pid, tid, cpu = self._halves(p)
        return (pid, tid, self._at(p, self.w_time), cpu, self._at(p, self.w_ip),
                self._at(p, self.w_id), self._at(p, self.w_period), callchain, misc, size)

    def _general(self, buf, pos: int, end: int, misc: int, size: int) -> FusedSample:
        e = self.sample(buf, pos, end, misc, size, self.attr)
        return (e.pid, e.tid, e.time, e.cpu, e.ip, e.id, e.period, e.callchain, misc, size)


class Stacked(_Words):
    """make_decoders' sample() for an attr with user registers and stack and no read values,
    raw data or branch stack (`perf record --call-graph dwarf`)."""

    def __init__(self, attr: PerfEventAttr, arrays: dict, new_array: Callable,
                 sample: Callable) -> None:
        super().__init__(attr, arrays, new_array, sample)
        st = attr.sample_type
        self.nregs = attr.plan.nregs_user
        tail_at = lay.offsets(lay.present(lay.SAMPLE_TAIL, st))
        self.t_weight, self.t_data_src, self.t_transaction = (
            tail_at.get(name, -8) >> 3 for name in ("weight", "data_src", "transaction"))

    def decode(self, buf, pos: int, end: int, misc: int, size: int) -> ev.SampleEvent:
        if not self._words_of(buf, pos, end):
            return self.sample(buf, pos, end, misc, size, self.attr)
        words = self.words
        p = pos >> 3
        last = end >> 3
        q = p + self.head
        if q >= last:  # the prefix, then at least the abi word
            return self.sample(buf, pos, end, misc, size, self.attr)
        callchain = ()
        regs = b""
        stack = None
        if self.chained:
            nr = words[q]
            q += 1
            if nr > last - q - 1:  # the chain, then the abi word
                return self.sample(buf, pos, end, misc, size, self.attr)
            callchain = (self.arrays.get(nr) or self.new_array(nr))(buf, q << 3)
            q += nr
        abi = words[q]
        q += 1
        if abi:
            if self.nregs >= last - q:  # the registers, then the stack's size
                return self.sample(buf, pos, end, misc, size, self.attr)
            regs = bytes(buf[q << 3:(q + self.nregs) << 3])  # little-endian: words_native
            q += self.nregs
        elif q >= last:
            return self.sample(buf, pos, end, misc, size, self.attr)
        n = words[q]
        q += 1
        if n:
            # the stack, then dyn_size; sizes that are not whole words leave it to sample()
            if n & 7 or n >> 3 >= last - q:
                return self.sample(buf, pos, end, misc, size, self.attr)
            dyn = words[q + (n >> 3)]
            stack = buf[q << 3:(q << 3) + min(dyn, n)]
            q += (n >> 3) + 1
        if q + self.tail > last:
            return self.sample(buf, pos, end, misc, size, self.attr)
        pid, tid, cpu = self._halves(p)
        return _new(_SampleEvent, (
            self.attr, pid, tid, self._at(p, self.w_time), cpu, self._at(p, self.w_ip),
            self._at(p, self.w_addr), self._at(p, self.w_id), self._at(p, self.w_sid),
            self._at(p, self.w_period), (), callchain, None, (), None, abi, regs, stack,
            self._at(q, self.t_weight), self._at(q, self.t_data_src),
            self._at(q, self.t_transaction), size, misc))
