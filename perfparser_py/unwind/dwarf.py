"""DWARF (CFI) stack unwinding of one sample's user stack copy (SEMANTICS §11.3).

`unwind()` walks the frames of a sample from its user registers and stack copy, using the CFI
of the modules the caller's address space maps, with elfutils' semantics: lookup addresses are
pc for the first frame and for signal-frame activations, pc - 1 for callers; stack words
outside the copy may come from module files or, as "guessed" data, from words remembered from
earlier samples of the same process. It never raises and always terminates.

The walk runs in C when compiled (dwarf.pxd): the registers are C arrays (`_Walker`), and a
CFI row is compiled once into a `Step`. The common row - a register-based CFA and every
register saved at an offset from it - is evaluated there, whether its words lie in the stack
copy (one block of words, `_block_step`) or outside it (`_offsets_step`, reading modules and
the history). Every other rule kind (CFA expressions, value, register and expression rules,
a row without CFI: the frame-pointer fallback) goes through the dict path (`_dict_step`,
`_fallback`), which works on a {register: value} dict made from the arrays and back.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable
from itertools import pairwise

from ..elf.cfi import (
    CFA_REG,
    EXPR,
    OFFSET,
    REGISTER,
    SAME,
    UNDEF,
    VAL_EXPR,
    VAL_OFFSET,
)
from ..elf.leb128 import sleb as _sleb
from ..elf.leb128 import uleb as _uleb
from .history import History
from .registers import RegTable, table_for

# Frame cap when max_frames is -1: a sanity bound, far beyond any real stack.
_HARD_MAX_FRAMES = 100_000
_MAX_EXPR_STEPS = 1000
# Bounds of the per-architecture caches: their keys come from the input.
_MAX_ARCHS = 64
_MAX_SLOTS = 1024
# DWARF registers the walk holds in C arrays: every architecture's sample registers and
# aarch64's zero ones are below it. A rule for a higher one takes the dict path.
NREG = 128
# Offsets a Step holds as C integers; a larger one (hostile CFI) takes the dict path, whose
# Python ints have no bound.
_MAX_OFFSET = 1 << 62
# Loop-guard keys (pc, CFA) a walk keeps in C arrays; a deeper walk keeps the rest in a set.
_SEEN_C = 64

ModuleAt = Callable[[int], "tuple[object, int, object] | None"]


def unwind(arch: str, abi: int, regs: tuple[int, ...], regs_mask: int, stack: memoryview,
           module_at: ModuleAt, history: History, max_frames: int,
           kernel_range: tuple[int, int] = (0, 0),
           steps: dict | None = None) -> tuple[list[int], int]:
    """Returns (lookup addresses leaf first, first_guessed_index); see the module docstring.

    `regs` holds the sample's user registers packed in the order of the set bits of
    `regs_mask`; `module_at(addr)` -> (image, bias, cfi) | None for a runtime address
    (runtime = vaddr + bias); `history` maps stack addresses to words seen in earlier samples
    and gets every word read from this stack copy. `steps` is the unwinder's per-process
    cache across calls (lookup address -> compiled CFI step); the caller must clear it
    whenever `module_at` would answer differently (a mapping change).
    """
    try:
        a = _ARCHS.get((arch, abi))
        if a is None:
            a = _arch(arch, abi)
            if a is None:
                return [], 0
        return a.walker.walk(regs, regs_mask, stack, module_at, history, max_frames,
                             kernel_range, {} if steps is None else steps)
    except Exception:  # noqa: BLE001 - hostile input must never escape as a traceback
        return [], 0


class _Arch:
    """Per-(architecture, ABI) constants of the walk, computed once, and its walker."""

    __slots__ = ("t", "word", "mask", "ip", "sp", "is_x86", "arm", "zero", "slots", "walker")

    def __init__(self, t: RegTable) -> None:
        self.t = t
        self.word = t.word
        self.mask = (1 << (8 * t.word)) - 1
        self.ip, self.sp = t.ip_dwarf, t.sp_dwarf
        self.is_x86 = t.ip_dwarf in (8, 16) and t.sp_dwarf in (4, 7)
        self.arm = t.name == "arm"
        self.zero = t.zero_dwarf
        self.slots: dict[tuple[int, int], tuple] = {}
        self.walker = _Walker(self)

    def slots_for(self, regs_mask: int, nregs: int) -> tuple[tuple, tuple, int, int]:
        """(DWARF registers, the index of each one's value in the packed sample registers,
        index of the stack pointer or -1, index of the instruction pointer or -1) for one
        sample register mask."""
        key = (regs_mask, nregs)
        found = self.slots.get(key)
        if found is None:
            t = self.t
            perf: dict[int, int] = {}
            i = bit = 0
            m = regs_mask
            while m and i < nregs:
                if m & 1:
                    perf[bit] = i
                    i += 1
                m >>= 1
                bit += 1
            pairs = [(d, perf[p]) for d, p in enumerate(t.dwarf_from_perf) if p in perf]
            found = (tuple([d for d, _i in pairs]), tuple([i for _d, i in pairs]),
                     perf.get(t.sp_perf, -1), perf.get(t.ip_perf, -1))
            if len(self.slots) >= _MAX_SLOTS:
                self.slots.clear()
            self.slots[key] = found
        return found


_ARCHS: dict[tuple[str, int], _Arch] = {}


def _arch(arch: str, abi: int) -> _Arch | None:
    table = table_for(arch, abi)
    if table is None:
        return None
    if len(_ARCHS) >= _MAX_ARCHS:
        _ARCHS.clear()
    a = _ARCHS[arch, abi] = _Arch(table)
    return a


def _lookup(module_at: ModuleAt, adj: int, word: int) -> Step | None:
    """The compiled CFI step for lookup address `adj`, None where no CFI covers it."""
    mod = module_at(adj)
    if mod is None or mod[2] is None:
        return None
    row = mod[2].row(adj - mod[1])
    if row is None:
        return None
    compiled = row.compiled
    if compiled is None or compiled[0] != word:
        compiled = row.compiled = (word, _compile(row, word))
    return compiled[1]


class Step:
    """A CFI row as the walk evaluates it (`_compile`).

    For the dict path: `cfa_reg` (-1 for a CFA expression) and `cfa_arg` (its offset or
    expression), `rules` as (register, kind, argument) in row order, `ra` the return address
    register. For the C path: `c_reg`/`c_off`, the CFA register and offset, when both fit
    (`c_reg` -1 otherwise); `block` when every rule saves a register below NREG at its own
    offset from the CFA, at least a word apart and within 64 KiB, the return address among
    them: then `saved` and `args` hold the registers and offsets by ascending offset
    (`nsaved` of them, the return address at `ra_i`), and `first`/`span` the bytes from the
    lowest one to the end of the highest. `end`: the row marks the outermost frame (return
    address undefined, no rule before it reads memory) once the CFA is computable.
    `ra_in_register`: the return address comes from a register (DW_CFA_register), not from
    the stack: the one x86 frame whose CFA may equal its SP, as no call pushed a return
    address below it (glibc's vfork pops it into %rdi around the syscall)."""

    __slots__ = ("cfa_reg", "cfa_arg", "rules", "ra", "signal", "end", "ra_in_register",
                 "block", "c_reg", "c_off", "nsaved", "ra_i", "first", "span", "saved", "args")


def _compile(row, word: int) -> Step:
    st = Step()
    rule = row.cfa
    st.cfa_reg, st.cfa_arg = (rule[1], rule[2]) if rule[0] == CFA_REG else (-1, rule[1])
    st.rules = rules = tuple([(reg, kind, arg) for reg, (kind, arg) in row.regs.items()])
    st.ra = ra = row.ra
    st.signal = bool(row.signal)
    fits = 0 <= st.cfa_reg < NREG and -_MAX_OFFSET < st.cfa_arg < _MAX_OFFSET
    st.c_reg = st.cfa_reg if fits else -1
    st.c_off = st.cfa_arg if fits else 0
    saves = sorted([(arg, reg) for reg, kind, arg in rules if kind == OFFSET])
    st.block = bool(fits and saves and len(saves) == len(rules) and ra in row.regs
                    and all([b[0] - a[0] >= word for a, b in pairwise(saves)])
                    and saves[-1][0] - saves[0][0] < 1 << 16  # span: a C integer
                    and all([0 <= reg < NREG and -_MAX_OFFSET < arg < _MAX_OFFSET
                             for arg, reg in saves]))
    if st.block:
        # tuples: a program has up to ~10^5 rows, and a typed memoryview costs ~0.4 KB each
        st.saved = tuple([reg for _arg, reg in saves])
        st.args = tuple([arg for arg, _reg in saves])
        st.nsaved = len(saves)
        st.ra_i = st.saved.index(ra)
        st.first = saves[0][0]
        st.span = saves[-1][0] + word - saves[0][0]
    else:
        st.saved = st.args = ()
        st.nsaved = st.ra_i = st.first = st.span = 0
    st.end = False
    if st.cfa_reg >= 0:
        for reg, kind, _arg in rules:
            if kind == UNDEF and reg == ra:
                st.end = True
                break
            if kind in (OFFSET, EXPR, VAL_EXPR):
                break
    st.ra_in_register = any([reg == ra and kind == REGISTER for reg, kind, _arg in rules])
    return st


_MISS = object()


class _Walker:
    """One walk's state, reused walk after walk of one architecture (the walk is never
    re-entered): the registers (`regs`, `valid`: C arrays of the DWARF registers below NREG;
    `extra`: a dict of higher ones the dict path made, else None), the sample's stack copy
    (`stack`, from address `lo`, `avail` bytes of it readable), the frames so far, the frame
    index of the first word taken from the history (`guessed`, -1 for none) and the
    loop-guard keys."""

    __slots__ = ("word", "mask", "ip", "sp", "arm", "is_x86", "zero", "a",
                 "regs", "valid", "extra", "tv", "tok", "stack", "lo", "avail",
                 "module_at", "history", "kernel", "klo", "khi", "nlo", "nhi", "frames", "guessed",
                 "value",
                 "nseen", "seen_pc", "seen_cfa", "seen_has", "more")

    def __init__(self, a: _Arch) -> None:
        self.a = a
        self.word, self.mask, self.ip, self.sp = a.word, a.mask, a.ip, a.sp
        self.arm, self.is_x86, self.zero = a.arm, a.is_x86, a.zero
        self.regs = array("Q", bytes(8 * NREG))
        self.valid = bytearray(NREG)
        self.tv = array("Q", bytes(8 * NREG))  # an _offsets_step's values before they count
        self.tok = bytearray(NREG)
        self.seen_pc = array("Q", bytes(8 * _SEEN_C))
        self.seen_cfa = array("Q", bytes(8 * _SEEN_C))
        self.seen_has = bytearray(_SEEN_C)
        self.extra = self.more = self.module_at = self.history = self.frames = None
        self.stack = b""
        self.lo = self.avail = self.klo = self.khi = self.value = self.nseen = self.nhi = 0
        self.nlo = 1
        self.kernel = False
        self.guessed = -1

    def walk(self, sample_regs: tuple[int, ...], regs_mask: int, stack: memoryview,
             module_at: ModuleAt, history: History, max_frames: int,
             kernel_range: tuple[int, int], steps: dict[int, Step | None]
             ) -> tuple[list[int], int]:
        a = self.a
        nregs = len(sample_regs)
        found = a.slots.get((regs_mask, nregs))
        keys, index, sp_index, ip_index = (found if found is not None
                                           else a.slots_for(regs_mask, nregs))
        mask = self.mask
        regs, valid = self.regs, self.valid
        self._clear()
        for j in range(len(keys)):
            r = keys[j]
            v = sample_regs[index[j]]
            regs[r] = v & mask
            valid[r] = 1
        for r in self.zero:
            regs[r] = 0
            valid[r] = 1
        self.stack = stack
        n = len(stack)
        if sp_index >= 0:
            lo = sample_regs[sp_index] & mask
            # words past the address space's end are unreadable: mask - lo + 1 bytes are left
            room = mask - lo
            self.lo = lo
            self.avail = n if n == 0 or n - 1 <= room else room + 1
        else:
            self.lo, self.avail = 1, 0
        self.module_at, self.history = module_at, history
        klo, khi = kernel_range
        self.kernel = klo < khi
        if self.kernel:
            self.klo, self.khi = klo, khi - 1  # khi inclusive: the range may end at 2**64
        self.guessed = -1
        self.nlo, self.nhi = 1, 0  # no span known without modules yet (_no_module_around)
        self.nseen = 0
        self.more = None
        limit = max_frames if max_frames >= 0 else _HARD_MAX_FRAMES
        frames: list[int] = []
        self.frames = frames
        ip, sp_reg = self.ip, self.sp
        exact = True  # pc is an activation address: the first frame's, or a signal frame's caller's
        while True:
            if not valid[ip]:
                break
            pc = regs[ip]
            if pc == 0 or len(frames) > limit:
                # a walk that ends here marks nothing guessed (SEMANTICS §11.3: upstream's
                # firstGuessed = frame count): remembered words that lead to the end are trusted
                return frames, len(frames)
            adj = pc if exact else pc - 1
            step = steps.get(adj, _MISS)
            if step is _MISS:
                step = steps[adj] = _lookup(module_at, adj, self.word)
            has_sp = valid[sp_reg]
            sp = regs[sp_reg]
            moved = tried = signal = False
            if step is None:
                if self.guessed >= 0 and module_at(adj) is None:
                    # a return address taken from another sample's words that lies in no
                    # module ([heap], [stack], nothing) is junk, not a caller: stop before it
                    break
                frames.append(adj)
            else:
                st: Step = step
                signal = st.signal
                frames.append(pc if signal else adj)
                if st.block and valid[st.c_reg]:
                    cfa = (regs[st.c_reg] + st.c_off) & mask
                    moved = self._block_step(st, cfa) or self._offsets_step(st, cfa)
                    tried = True
                elif st.end and self._has(st.cfa_reg):
                    break
                if not tried:
                    new = self._dict_step(self._as_dict(), st)
                    if new is _END:
                        break
                    if new is not None:
                        self._from_dict(new)
                        moved = True
            if not moved:
                new = self._fallback(self._as_dict())
                if new is None:
                    break
                self._from_dict(new)
                signal = False
            has_cfa = valid[sp_reg]
            cfa = regs[sp_reg] if has_cfa else 0
            if self._seen(pc, has_cfa, cfa):
                break
            if (self.is_x86 and not signal and has_sp and has_cfa and cfa <= sp
                    and not (cfa == sp and step is not None and st.ra_in_register)):
                break
            exact = signal
        guessed = self.guessed
        return frames, len(frames) if guessed < 0 else min(guessed, len(frames))

    def _has(self, reg: int) -> bool:
        """Whether register `reg` has a value."""
        if 0 <= reg < NREG:
            return self.valid[reg] != 0
        return reg >= 0 and self.extra is not None and reg in self.extra

    def _block_step(self, st: Step, cfa: int) -> bool:
        """The caller's registers from a `block` step whose words all lie in the stack copy;
        False (nothing changed) when they do not."""
        start = cfa + st.first
        if (start < cfa) if st.first >= 0 else (start > cfa):
            return False  # wrapped around the address space: C arithmetic, out of the copy
        if start < self.lo:
            return False
        d = start - self.lo
        if d > self.avail or self.avail - d < st.span:
            return False
        regs, valid, history = self.regs, self.valid, self.history
        regs[self.sp] = cfa
        valid[self.sp] = 1
        first = st.first
        for i in range(st.nsaved):
            off = st.args[i] - first
            v = self._load(d + off)
            history.put(start + off, v)
            r = st.saved[i]
            regs[r] = v
            valid[r] = 1
        ra = regs[st.saved[st.ra_i]]
        regs[self.ip] = ra & ~1 if self.arm else ra  # the Thumb bit is not part of the address
        valid[self.ip] = 1
        return True

    def _offsets_step(self, st: Step, cfa: int) -> bool:
        """The caller's registers from a `block` step, word by word in SEMANTICS §11.3's read
        order; False (nothing changed) when the return address cannot be read."""
        regs, valid, tv, tok = self.regs, self.valid, self.tv, self.tok
        mask, lo = self.mask, self.lo
        for i in range(st.nsaved):
            r = st.saved[i]
            addr = (cfa + st.args[i]) & mask
            if addr < lo and i != st.ra_i:
                # below the sample's SP: a slot the leaf's epilogue has popped the register
                # from already (compilers emit no DW_CFA_restore after a pop), so the
                # register holds the caller's value; the slot, outside the stack copy, would
                # only be a word remembered from another sample
                tok[i] = valid[r]
                tv[i] = regs[r]
            else:
                tok[i] = self._read(addr)
                tv[i] = self.value
        if not tok[st.ra_i]:
            return False
        regs[self.sp] = cfa
        valid[self.sp] = 1
        for i in range(st.nsaved):
            r = st.saved[i]
            regs[r] = tv[i]
            valid[r] = tok[i]
        ra = tv[st.ra_i]
        regs[self.ip] = ra & ~1 if self.arm else ra
        valid[self.ip] = 1
        return True

    def _seen(self, pc: int, has: bool, cfa: int) -> bool:
        """Whether the walk was at (pc, CFA) before (a loop); remembers it if not."""
        n = self.nseen
        seen_pc, seen_cfa, seen_has = self.seen_pc, self.seen_cfa, self.seen_has
        for i in range(n):
            if seen_pc[i] == pc and seen_has[i] == has and (not has or seen_cfa[i] == cfa):
                return True
        if n < _SEEN_C:
            seen_pc[n] = pc
            seen_cfa[n] = cfa
            seen_has[n] = has
            self.nseen = n + 1
            return False
        key = (pc, cfa if has else -1)
        if self.more is None:
            self.more = {key}
        elif key in self.more:
            return True
        else:
            self.more.add(key)
        return False

    def _load(self, pos: int) -> int:
        """The little-endian word at byte `pos` of the stack copy."""
        stack = self.stack
        v = 0
        for k in range(self.word):
            b = stack[pos + k]
            v |= b << (8 * k)
        return v

    def _read(self, addr: int) -> bool:
        """Whether the word at `addr` (within the address space) can be read, in SEMANTICS
        §11.3's order; if so it is in `value`."""
        if addr > self.mask - self.word + 1:
            return False
        lo = self.lo
        if addr >= lo and self.avail >= self.word and addr - lo <= self.avail - self.word:
            v = self._load(addr - lo)
            self.history.put(addr, v)
            self.value = v
            return True
        if self.kernel and self.klo <= addr <= self.khi:
            return False
        if not self.nlo <= addr <= self.nhi:
            mod = self.module_at(addr)
            if mod is not None:
                data = mod[0].read(addr - mod[1], self.word)
                if data is None or len(data) != self.word:
                    return False
                self.value = int.from_bytes(data, "little")
                return True
            self._no_module_around(addr)
        if self.history.find(addr):
            if self.guessed < 0:
                self.guessed = len(self.frames)
            self.value = self.history.found
            return True
        return False

    def _no_module_around(self, addr: int) -> None:
        """Remember where, around `addr`, module_at answers None as it did for `addr`, if it
        can say (pipeline.ModuleLookup.no_image_span): the stack words a walk reads outside
        its copy lie in one such span, the rest of the [stack] mapping."""
        spans = getattr(self.module_at, "no_image_span", None)
        if spans is not None:
            span = spans(addr)
            if span is not None:
                self.nlo, self.nhi = span[0], span[1] - 1  # inclusive: a span may end at 2**64

    def read_word(self, addr: int) -> int | None:
        """The dict path's read of one word (`_read`), None where it cannot be read."""
        if addr < 0 or addr > self.mask - self.word + 1:
            return None
        return self.value if self._read(addr) else None

    def _as_dict(self) -> dict[int, int]:
        regs, valid = self.regs, self.valid
        d = {r: regs[r] for r in range(NREG) if valid[r]}
        if self.extra is not None:
            d.update(self.extra)
        return d

    def _clear(self) -> None:
        """No register has a value."""
        for r in range(NREG):
            self.valid[r] = 0
        self.extra = None

    def _from_dict(self, new: dict[int, int]) -> None:
        regs, valid = self.regs, self.valid
        self._clear()
        for r, v in new.items():
            if 0 <= r < NREG:
                regs[r] = v
                valid[r] = 1
            elif self.extra is None:
                self.extra = {r: v}
            else:
                self.extra[r] = v

    def _dict_step(self, regs: dict[int, int], st: Step):
        """Caller registers from a compiled CFI step, rule by rule; None if the rules cannot be
        evaluated, _END if the return address is undefined (outermost frame)."""
        mask = self.mask
        ra_reg = st.ra
        if st.cfa_reg >= 0:
            base = regs.get(st.cfa_reg)
            if base is None:
                return None
            cfa = (base + st.cfa_arg) & mask
        else:
            cfa = self._eval(st.cfa_arg, regs, None)
            if cfa is None:
                return None
        new = dict(regs)
        new[self.sp] = cfa
        lo = self.lo
        for reg, kind, arg in st.rules:
            if kind == OFFSET:
                addr = (cfa + arg) & mask
                if addr < lo and reg != ra_reg:
                    v = regs.get(reg)  # popped already: see _offsets_step
                else:
                    v = self.read_word(addr)
            elif kind == VAL_OFFSET:
                v = (cfa + arg) & mask
            elif kind == SAME:
                v = regs.get(reg)
            elif kind == REGISTER:
                v = regs.get(arg)
            elif kind == EXPR:
                addr = self._eval(arg, regs, cfa)
                v = None if addr is None else self.read_word(addr)
            elif kind == VAL_EXPR:
                v = self._eval(arg, regs, cfa)
            elif kind == UNDEF:
                if reg == ra_reg:
                    return _END
                v = None
            else:
                v = None
            if v is None:
                new.pop(reg, None)
            else:
                new[reg] = v
        ra = new.get(ra_reg)
        if ra is None:
            return None
        if self.arm:
            ra &= ~1  # Thumb bit is not part of the address
        new[self.ip] = ra
        return new

    def _fallback(self, regs: dict[int, int]):
        """Frame-pointer step where no CFI covers pc (elfutils' x86_64/aarch64 backends)."""
        t = self.a.t
        if t.name == "x86_64":
            fp = regs.get(6)
            if not fp:
                return None
            sp = regs.get(7) or 0
            ret = self.read_word(fp + 8)
            if ret is None:
                return None
            prev = self.read_word(fp)
            new_sp = fp + 16
            if new_sp <= sp:
                return None
            return {6: prev or 0, 7: new_sp, 16: ret}
        if t.name == "aarch64":
            lr = regs.get(30)
            fp = regs.get(29) or 0
            sp = regs.get(31) or 0
            new_lr = self.read_word(fp + 8) or 0
            new_fp = self.read_word(fp) or 0
            new_sp = fp + 16
            if not lr or (fp != 0 and new_sp <= sp):
                return None
            return {29: new_fp, 30: new_lr, 31: new_sp, 32: lr}
        return None

    def _eval(self, expr: bytes, regs: dict[int, int], push: int | None) -> int | None:
        """Evaluate a DWARF expression as CFI uses it; None if it cannot be evaluated."""
        mask = self.mask
        stack: list[int] = [] if push is None else [push]
        pos = 0
        n = len(expr)
        steps = 0
        try:
            while pos < n:
                steps += 1
                if steps > _MAX_EXPR_STEPS:
                    return None
                op = expr[pos]
                pos += 1
                if 0x30 <= op <= 0x4F:  # lit0..lit31
                    stack.append(op - 0x30)
                elif 0x70 <= op <= 0x8F:  # breg0..breg31
                    off, pos = _sleb(expr, pos)
                    base = regs.get(op - 0x70)
                    if base is None:
                        return None
                    stack.append((base + off) & mask)
                elif 0x50 <= op <= 0x6F:  # reg0..reg31 (value of the register)
                    v = regs.get(op - 0x50)
                    if v is None:
                        return None
                    stack.append(v)
                elif op == 0x92:  # bregx
                    reg, pos = _uleb(expr, pos)
                    off, pos = _sleb(expr, pos)
                    base = regs.get(reg)
                    if base is None:
                        return None
                    stack.append((base + off) & mask)
                elif op == 0x90:  # regx
                    reg, pos = _uleb(expr, pos)
                    v = regs.get(reg)
                    if v is None:
                        return None
                    stack.append(v)
                elif op in _CONST:
                    fmt, size = _CONST[op]
                    stack.append(struct.unpack_from(fmt, expr, pos)[0] & mask)
                    pos += size
                elif op == 0x10:  # constu
                    v, pos = _uleb(expr, pos)
                    stack.append(v & mask)
                elif op == 0x11:  # consts
                    v, pos = _sleb(expr, pos)
                    stack.append(v & mask)
                elif op == 0x03:  # addr
                    stack.append(struct.unpack_from("<Q" if self.word == 8 else "<I", expr, pos)[0])
                    pos += self.word
                elif op == 0x06:  # deref
                    v = self.read_word(stack.pop())
                    if v is None:
                        return None
                    stack.append(v)
                elif op == 0x94:  # deref_size
                    size = expr[pos]
                    pos += 1
                    v = self.read_word(stack.pop())
                    if v is None:
                        return None
                    stack.append(v & ((1 << (8 * size)) - 1) if size < self.word else v)
                elif op == 0x12:  # dup
                    stack.append(stack[-1])
                elif op == 0x13:  # drop
                    stack.pop()
                elif op == 0x14:  # over
                    stack.append(stack[-2])
                elif op == 0x15:  # pick
                    stack.append(stack[-1 - expr[pos]])
                    pos += 1
                elif op == 0x16:  # swap
                    stack[-1], stack[-2] = stack[-2], stack[-1]
                elif op == 0x17:  # rot
                    stack[-1], stack[-2], stack[-3] = stack[-2], stack[-3], stack[-1]
                elif op == 0x23:  # plus_uconst
                    v, pos = _uleb(expr, pos)
                    stack.append((stack.pop() + v) & mask)
                elif op in _BINARY:
                    b = stack.pop()
                    a = stack.pop()
                    r = _binary(op, a, b, mask)
                    if r is None:
                        return None
                    stack.append(r & mask)
                elif op == 0x19:  # abs
                    v = _signed(stack.pop(), mask)
                    stack.append(abs(v) & mask)
                elif op == 0x1F:  # neg
                    stack.append(-stack.pop() & mask)
                elif op == 0x20:  # not
                    stack.append(~stack.pop() & mask)
                elif op == 0x2F:  # skip
                    pos += 2 + struct.unpack_from("<h", expr, pos)[0]
                elif op == 0x28:  # bra
                    delta = struct.unpack_from("<h", expr, pos)[0]
                    pos += 2
                    if stack.pop() != 0:
                        pos += delta
                elif op == 0x96:  # nop
                    pass
                elif op == 0x9F:  # stack_value
                    break
                else:
                    return None
                if pos < 0:
                    return None
            return stack[-1] if stack else None
        except (IndexError, struct.error):
            return None


_END: dict[int, int] = {}

_CONST = {0x08: ("<B", 1), 0x09: ("<b", 1), 0x0A: ("<H", 2), 0x0B: ("<h", 2),
          0x0C: ("<I", 4), 0x0D: ("<i", 4), 0x0E: ("<Q", 8), 0x0F: ("<q", 8)}
_BINARY = frozenset((0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
                     0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E))


def _signed(v: int, mask: int) -> int:
    top = (mask + 1) >> 1
    return v - (mask + 1) if v & top else v


def _binary(op: int, a: int, b: int, mask: int) -> int | None:
    if op == 0x1A:
        return a & b
    if op == 0x1B:  # div (signed)
        sa, sb = _signed(a, mask), _signed(b, mask)
        if sb == 0:
            return None
        q = abs(sa) // abs(sb)
        return q if (sa < 0) == (sb < 0) else -q
    if op == 0x1C:
        return a - b
    if op == 0x1D:
        return None if b == 0 else a % b
    if op == 0x1E:
        return a * b
    if op == 0x21:
        return a | b
    if op == 0x22:
        return a + b
    if op == 0x24:
        return a << b if b < 64 else 0
    if op == 0x25:
        return a >> b
    if op == 0x26:
        return _signed(a, mask) >> min(b, 64)
    if op == 0x27:
        return a ^ b
    sa, sb = _signed(a, mask), _signed(b, mask)
    if op == 0x29:
        return int(sa == sb)
    if op == 0x2A:
        return int(sa >= sb)
    if op == 0x2B:
        return int(sa > sb)
    if op == 0x2C:
        return int(sa <= sb)
    if op == 0x2D:
        return int(sa < sb)
    return int(sa != sb)

