"""DWARF (CFI) stack unwinding of one sample's user stack copy (SEMANTICS §11.3): the walk.

`unwind()` walks the frames of a sample from its user registers and stack copy, using the CFI
of the modules the caller's address space maps, with elfutils' semantics: lookup addresses,
packed as array "Q" bytes (what the symbolizer keys its memo with and a split run sends), are
pc for the first frame and for signal-frame activations, pc - 1 for callers; stack words
outside the copy may come from module files or, as "guessed" data, from words remembered from
earlier samples of the same process (unwind.memory). It never raises and always terminates.

The walk runs in C when compiled (dwarf.pxd): the registers are C arrays (`_Walker`), and a
CFI row is compiled once into a `Step` (unwind.rules). The common row - a register-based CFA
and every register saved at an offset from it - is evaluated there, whether its words lie in
the stack copy (one block of words, `_block_step`) or outside it (`_offsets_step`, reading
modules and the history). Every other rule kind (CFA expressions, value, register and
expression rules, evaluated by unwind.expression) goes through the dict path (`_dict_step`),
as does a frame without CFI (the architecture's `fallback`, unwind.arches): it works on a
{register: value} dict made from the arrays and back.
"""

from __future__ import annotations

from array import array

from ..elf.cfi import EXPR, OFFSET, REGISTER, SAME, UNDEF, VAL_EXPR, VAL_OFFSET
from .arches import Arch, arch_for
from .expression import evaluate
from .history import History
from .memory import Memory
from .process import ModuleAt, Steps
from .rules import NREG, Step, step_at

# Whether this module runs compiled (_register), as elf/dwarf/lines.py tells: an extension
# module's file suffix (Cython's cython.compiled needs Cython installed, and imports typing)
_COMPILED = (__file__ or "").endswith((".so", ".pyd"))

# Frame cap when max_frames is -1: a sanity bound, far beyond any real stack.
_HARD_MAX_FRAMES = 100_000
# Bound of the walker cache: its keys come from the input.
_MAX_WALKERS = 64
# Loop-guard keys (pc, CFA) a walk keeps in C arrays; a deeper walk keeps the rest in a set.
_SEEN_C = 64
# Frames the output array holds at first; a deeper walk doubles it.
_OUT_C = 128
# The virtual address sizes Linux gives an aarch64 process (VA_BITS, set when the kernel is
# built and boots), widest first: a signed return address has its code above that size.
_VA_MASKS = tuple([(1 << bits) - 1 for bits in (52, 48, 47, 42, 39, 36)])


def unwind(arch: str, abi: int, regs: bytes, regs_mask: int, stack: memoryview,
           module_at: ModuleAt, history: History, max_frames: int,
           kernel_range: tuple[int, int] = (0, 0),
           steps: Steps | None = None) -> tuple[bytes, int]:
    """Returns (lookup addresses leaf first, packed as array "Q" bytes, first_guessed_index);
    see the module docstring.

    `regs` holds the sample's user registers as SampleEvent.regs does (packed u64s, in the
    order of the set bits of `regs_mask`); `module_at.module(addr)` -> (image, bias, cfi) |
    None for a runtime address (runtime = vaddr + bias); `history` maps stack addresses to
    words seen in earlier samples and gets every word read from this stack copy. `steps` is
    the unwinder's per-process cache across calls (lookup address -> compiled CFI step); the
    caller must clear it whenever `module_at` would answer differently (a mapping change).
    """
    try:
        walker = _WALKERS.get((arch, abi))
        if walker is None:
            walker = _walker(arch, abi)
            if walker is None:
                return b"", 0
        return walker.walk(regs, regs_mask, stack, module_at, history, max_frames,
                           kernel_range, Steps() if steps is None else steps)
    except Exception:  # noqa: BLE001 - hostile input must never escape as a traceback
        return b"", 0


_WALKERS: dict[tuple[str, int], _Walker] = {}


def _in_code(module_at: ModuleAt, addr: int) -> bool:
    """Whether runtime address `addr` lies in the executable code of a module."""
    mod = module_at.module(addr)
    return mod is not None and mod[0].in_code(addr - mod[1])


def _walker(arch: str, abi: int) -> _Walker | None:
    a = arch_for(arch, abi)
    if a is None:
        return None
    if len(_WALKERS) >= _MAX_WALKERS:
        _WALKERS.clear()
    walker = _WALKERS[arch, abi] = _Walker(a)
    return walker


def _register(at: bytes, i: int) -> int:
    """Register i of a sample's packed registers (SampleEvent.regs: u64s, little-endian).
    Compiled, `at` points to their bytes (the walk's indices are below their count), read
    without an object made; interpreted, one int.from_bytes (a byte loop there made a walk a
    fifth slower)."""
    if not _COMPILED:
        return int.from_bytes(at[8 * i:8 * i + 8], "little")
    v = 0
    for k in range(8):
        b = at[8 * i + k]  # compiled: a 64-bit C integer before it is shifted
        v |= b << (8 * k)
    return v


_MISS = object()  # Steps.get's answer for an address not compiled yet (None is a step)


class _Walker(Memory):
    """One walk's state, reused walk after walk of one architecture (the walk is never
    re-entered): its memory (the base class), the registers (`regs`, `valid`: C arrays of
    the DWARF registers below NREG, a register having a value where `valid` holds `gen`;
    `extra`: a dict of higher ones the dict path made, else None), the loop-guard keys and
    the frames' addresses (`out`, the first `nframes` of its array `out_array`: packed at
    the end without an int object each)."""

    __slots__ = ("a", "ip", "sp", "thumb", "cfa_above_sp", "zero", "regs", "valid", "gen",
                 "extra", "tv", "tok", "nseen", "seen_pc", "seen_cfa", "seen_has", "more", "out",
                 "out_array")

    def __init__(self, a: Arch) -> None:
        Memory.__init__(self, a.word)
        self.a = a
        self.ip, self.sp = a.ip, a.sp
        self.thumb, self.cfa_above_sp, self.zero = a.thumb, a.cfa_above_sp, a.zero
        self.regs = array("Q", bytes(8 * NREG))
        self.valid = bytearray(NREG)
        self.gen = 0  # _clear() starts each walk with a new one
        self.tv = array("Q", bytes(8 * NREG))  # an _offsets_step's values before they count
        self.tok = bytearray(NREG)
        self.seen_pc = array("Q", bytes(8 * _SEEN_C))
        self.seen_cfa = array("Q", bytes(8 * _SEEN_C))
        self.seen_has = bytearray(_SEEN_C)
        self.out_array = array("Q", bytes(8 * _OUT_C))
        self.out = self.out_array
        self.extra = self.more = None
        self.nseen = 0

    def walk(self, sample_regs: bytes, regs_mask: int, stack: memoryview,
             module_at: ModuleAt, history: History, max_frames: int,
             kernel_range: tuple[int, int], steps: Steps
             ) -> tuple[bytes, int]:
        a = self.a
        nregs = len(sample_regs) >> 3
        found = a.slots.get((regs_mask, nregs))
        keys, index, sp_index, ip_index = (found if found is not None
                                           else a.slots_for(regs_mask, nregs))
        mask = self.mask
        regs, valid = self.regs, self.valid
        self._clear()
        gen = self.gen
        at = sample_regs  # compiled: a pointer to its bytes
        for j in range(len(keys)):
            r = keys[j]
            regs[r] = _register(at, index[j]) & mask
            valid[r] = gen
        for r in self.zero:
            regs[r] = 0
            valid[r] = gen
        self.nseen = 0
        self.more = None
        limit = max_frames if max_frames >= 0 else _HARD_MAX_FRAMES
        self.begin(stack, sp_index >= 0, _register(at, sp_index) & mask if sp_index >= 0 else 0,
                   module_at, history, steps, kernel_range)
        ip, sp_reg = self.ip, self.sp
        exact = True  # pc is an activation address: the first frame's, or a signal frame's caller's
        while True:
            if valid[ip] != self.gen:
                break
            pc = regs[ip]
            if pc == 0 or self.nframes > limit:
                # a walk that ends here marks nothing guessed (SEMANTICS §11.3: upstream's
                # firstGuessed = frame count): remembered words that lead to the end are trusted
                return self._frames(), self.nframes
            adj = pc if exact else pc - 1
            step = steps.get(adj, _MISS)
            if step is _MISS:
                step = step_at(module_at, adj, self.word)
                steps.add(adj, step)
            has_sp = valid[sp_reg] == self.gen
            sp = regs[sp_reg]
            moved = tried = signal = False
            if step is None:
                if self.guessed >= 0 and not _in_code(module_at, adj):
                    # a return address taken from another sample's words that lies in no
                    # module's code ([heap], [stack], nothing, a data pointer into a
                    # library's read-only segment) is junk, not a caller: stop before it
                    break
                self._push(adj)
                # code without CFI: the architecture's frame-pointer step (elfutils' order;
                # under CFI %rbp is any callee-saved value, a step into junk)
                new = self.a.fallback(self, self._as_dict())
                if new is None:
                    break
                self._from_dict(new)
            else:
                st: Step = step
                signal = st.signal
                self._push(pc if signal else adj)
                if st.block and valid[st.c_reg] == self.gen:
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
                    break  # a row whose return address cannot be had ends the walk
            has_cfa = valid[sp_reg] == self.gen
            cfa = regs[sp_reg] if has_cfa else 0
            if self._seen(pc, has_cfa, cfa):
                break
            if (self.cfa_above_sp and not signal and has_sp and has_cfa and cfa <= sp
                    and not (cfa == sp and step is not None and st.ra_in_register)):
                break
            exact = signal
        guessed = self.guessed
        n = self.nframes
        return self._frames(), n if guessed < 0 else min(guessed, n)

    def _push(self, addr: int) -> None:
        """Append a frame's lookup address to `out`, doubling it when full."""
        n = self.nframes
        if n == len(self.out):
            self.out_array = self.out_array * 2
            self.out = self.out_array
        self.out[n] = addr
        self.nframes = n + 1

    def _frames(self) -> bytes:
        """The walk's frames, packed."""
        return self.out_array[:self.nframes].tobytes()

    def _has(self, reg: int) -> bool:
        """Whether register `reg` has a value."""
        if 0 <= reg < NREG:
            return self.valid[reg] == self.gen
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
        # the attributes themselves, not locals: a local copy of a typed memoryview costs an
        # atomic acquisition count up and down, more than this frame's other work
        history = self.history
        self.regs[self.sp] = cfa
        self.valid[self.sp] = self.gen
        for i in range(st.nsaved):
            off = st.rels[2 * i] | st.rels[2 * i + 1] << 8
            v = self._load(d + off)
            history.put(start + off, v)
            r = st.saved[i]
            self.regs[r] = v
            self.valid[r] = self.gen
        ra = self.regs[st.saved[st.ra_i]]
        if st.ra_signed:
            ra = self._unsigned(ra)
        # the Thumb bit is not part of the address
        self.regs[self.ip] = ra & ~1 if self.thumb else ra
        self.valid[self.ip] = self.gen
        return True

    def _offsets_step(self, st: Step, cfa: int) -> bool:
        """The caller's registers from a `block` step, word by word in SEMANTICS §11.3's read
        order; False (nothing changed) when the return address cannot be read."""
        mask, lo = self.mask, self.lo
        for i in range(st.nsaved):  # the attributes, not local copies: see _block_step
            r = st.saved[i]
            off = st.first + (st.rels[2 * i] | st.rels[2 * i + 1] << 8)
            addr = (cfa + off) & mask  # C arithmetic when compiled: the sum wraps as masked
            if addr < lo and i != st.ra_i:
                # below the sample's SP: a slot the leaf's epilogue has popped the register
                # from already (compilers emit no DW_CFA_restore after a pop), so the
                # register holds the caller's value; the slot, outside the stack copy, would
                # only be a word remembered from another sample
                self.tok[i] = self.valid[r] == self.gen
                self.tv[i] = self.regs[r]
            else:
                self.tok[i] = self._read(addr)
                self.tv[i] = self.value
        if not self.tok[st.ra_i]:
            return False
        self.regs[self.sp] = cfa
        self.valid[self.sp] = self.gen
        for i in range(st.nsaved):
            r = st.saved[i]
            self.regs[r] = self.tv[i]
            self.valid[r] = self.gen if self.tok[i] else 0
        ra = self.tv[st.ra_i]
        if st.ra_signed:
            ra = self._unsigned(ra)
        self.regs[self.ip] = ra & ~1 if self.thumb else ra
        self.valid[self.ip] = self.gen
        return True

    def _unsigned(self, ra: int) -> int:
        """A signed return address (aarch64 pointer authentication, `-mbranch-protection`)
        without its code, which fills the bits above the process's virtual address size: as
        perf records no mask, the widest size (_VA_MASKS) that leaves an address in a module (a
        wider one leaves code bits, where no module is); `ra` itself when it is in one (a CPU
        without pointer authentication runs the signing instructions as no-ops) or no size
        finds one."""
        module_at = self.module_at
        if module_at.module(ra) is not None:
            return ra
        for size in _VA_MASKS:
            addr = ra & size
            if addr != ra and module_at.module(addr) is not None:
                return addr
        return ra

    def _seen(self, pc: int, has: bool, cfa: int) -> bool:
        """Whether the walk was at (pc, CFA) before (a loop); remembers it if not."""
        n = self.nseen
        for i in range(n):  # the attributes, not local copies: see _block_step
            if (self.seen_pc[i] == pc and self.seen_has[i] == has
                    and (not has or self.seen_cfa[i] == cfa)):
                return True
        if n < _SEEN_C:
            self.seen_pc[n] = pc
            self.seen_cfa[n] = cfa
            self.seen_has[n] = has
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

    def _as_dict(self) -> dict[int, int]:
        regs, valid = self.regs, self.valid
        d = {r: regs[r] for r in range(NREG) if valid[r] == self.gen}
        if self.extra is not None:
            d.update(self.extra)
        return d

    def _clear(self) -> None:
        """No register has a value: a new generation, the array cleared once in 255 (the
        walk clears it every frame of the dict path and every sample)."""
        self.gen += 1
        if self.gen > 255:
            for r in range(NREG):
                self.valid[r] = 0
            self.gen = 1
        self.extra = None

    def _from_dict(self, new: dict[int, int]) -> None:
        regs, valid = self.regs, self.valid
        self._clear()
        for r, v in new.items():
            if 0 <= r < NREG:
                regs[r] = v
                valid[r] = self.gen
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
            cfa = evaluate(self, st.cfa_arg, regs, None)
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
                addr = evaluate(self, arg, regs, cfa)
                v = None if addr is None else self.read_word(addr)
            elif kind == VAL_EXPR:
                v = evaluate(self, arg, regs, cfa)
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
        if st.ra_signed:
            ra = self._unsigned(ra)
        if self.thumb:
            ra &= ~1  # Thumb bit is not part of the address
        new[self.ip] = ra
        return new


_END: dict[int, int] = {}
