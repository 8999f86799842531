"""DWARF (CFI) stack unwinding of one sample's user stack copy (SEMANTICS §11.3).

`unwind()` walks the frames of a sample from its user registers and stack copy, using the CFI
of the modules the caller's address space maps, with elfutils' semantics: lookup addresses are
pc for the first frame and for signal-frame activations, pc - 1 for callers; stack words
outside the copy may come from module files or, as "guessed" data, from words remembered from
earlier samples of the same process. It never raises and always terminates.

Hot path (profiled on `--call-graph dwarf` recordings: ~10 steps per sample): the common CFI
row - a register-based CFA and saved-at-offset words that all lie inside the stack copy - is
evaluated inline in `_walk`, updating the register dict in place; everything else (CFA
expressions, other rule kinds, reads outside the copy, the frame-pointer fallback) goes
through `_Memory`, built only when a sample needs it.

Most samples of a process unwind, past their first frame, through the same frames as an
earlier sample did: same pc and stack pointer, same return addresses and frame registers in
the same stack slots. The rest of such a walk is replayed rather than re-walked: `_record`
keeps, per (pc, sp) after the first step, what the rest of a fast-path-only walk depended on
and produced; `_replay` checks those inputs against the new sample (one unpack of the words
involved) and, if they match, appends the frames and writes the words to `history` exactly as
the walk would have. Both write whole word sets to `history` lazily (History.pending): only
the slow path reads it back. Anything the check cannot vouch for is walked step by step.

Most samples also repeat an earlier sample's pc and stack pointer (a hot loop called from the
same place): when a fast first step led into a replayed suffix, `_compose` remembers the
pair as the whole walk of that (pc, sp), and `_replay_whole` replays it after checking the
sample registers and first-step words it depends on, without making the register dict.
"""

from __future__ import annotations

# Compiled with the C types of dwarf.pxd (setup.py): its cpdef functions use list
# comprehensions where a generator expression would do, as Cython compiles no closures there.

import struct
from collections.abc import Callable
from itertools import pairwise
from operator import itemgetter

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
# Stack words of the replayable walk suffixes remembered per process (see _record): bounds
# their memory to some MB.
_MAX_SUFFIX_WORDS = 1 << 18
# Recording a suffix costs about two walks, a replay saves most of one: a process records
# beyond its first _RECORDS_FREE suffixes only while it replays _RECORDS_PER_REPLAY times as
# many, so stacks that never repeat stay about as fast as without replays.
_RECORDS_FREE = 16
_RECORDS_PER_REPLAY = 4

ModuleAt = Callable[[int], "tuple[object, int, object] | None"]


def unwind(arch: str, abi: int, regs: tuple[int, ...], regs_mask: int, stack: memoryview,
           module_at: ModuleAt, history: History, max_frames: int,
           kernel_range: tuple[int, int] = (0, 0),
           steps: dict | None = None) -> tuple[list[int], int]:
    """Returns (lookup addresses leaf first, first_guessed_index); see the module docstring.

    `regs` holds the sample's user registers packed in the order of the set bits of
    `regs_mask`; `module_at(addr)` -> (image, bias, cfi) | None for a runtime address
    (runtime = vaddr + bias); `history` maps stack addresses to words seen in earlier samples
    and is updated (History.write) with every word read from this stack copy. `steps` is the
    unwinder's per-process cache across calls (lookup address -> compiled CFI step, and the
    replayable walk suffixes under the key None); the caller must clear it whenever
    `module_at` would answer differently (a mapping change).
    """
    try:
        history.bound()
        a = _ARCHS.get((arch, abi))
        if a is None:
            a = _arch(arch, abi)
            if a is None:
                return [], 0
        return _walk(a, regs, regs_mask, stack, module_at, history, max_frames, kernel_range,
                     {} if steps is None else steps)
    except Exception:  # noqa: BLE001 - hostile input must never escape as a traceback
        return [], 0


class _Arch:
    """Per-(architecture, ABI) constants of the walk, computed once."""

    __slots__ = ("t", "word", "mask", "fmt", "ip", "sp", "is_x86", "arm", "zero", "slots")

    def __init__(self, t: RegTable) -> None:
        self.t = t
        self.word = t.word
        self.mask = (1 << (8 * t.word)) - 1
        self.fmt = "<Q" if t.word == 8 else "<I"
        self.ip, self.sp = t.ip_dwarf, t.sp_dwarf
        self.is_x86 = t.ip_dwarf in (8, 16) and t.sp_dwarf in (4, 7)
        self.arm = t.name == "arm"
        self.zero = dict.fromkeys(t.zero_dwarf, 0)
        self.slots: dict[tuple[int, int], tuple] = {}

    def slots_for(self, regs_mask: int, nregs: int) -> tuple[tuple, Callable, int, int, dict]:
        """(DWARF registers, a function giving their values from the packed sample registers,
        index of the stack pointer or -1, index of the instruction pointer or -1, and DWARF
        register -> index of the sample register the walk starts with as it is: for 64-bit
        words, else empty) for one sample register mask."""
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
            index = tuple(i for _d, i in pairs)
            if self.word == 8 and len(index) > 1:
                # perf's registers are u64: masking them to 64 bits would change nothing
                pick = itemgetter(*index)
            else:
                def pick(sample_regs: tuple[int, ...], index=index, mask=self.mask) -> list[int]:
                    return [sample_regs[i] & mask for i in index]
            unchanged = {} if self.word != 8 else {d: i for d, i in pairs if d not in self.zero}
            found = (tuple(d for d, _i in pairs), pick, perf.get(t.sp_perf, -1),
                     perf.get(t.ip_perf, -1), unchanged)
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


def _lookup(module_at: ModuleAt, adj: int, word: int) -> tuple | None:
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


def _compile(row, word: int) -> tuple:
    """A CFI row as the tuple `_walk` evaluates:
    (cfa register or -1 for an expression, offset or expression, signal,
     block offset, block span, unpack, saved registers, word offsets, return address index,
     end, rules, return address register).

    rules are (register, kind, argument) in row order. The block fields are set (else None)
    for a register CFA whose rules all save words at distinct, non-overlapping offsets, the
    return address among them: one unpack_from of the span starting at CFA + block offset
    reads the saved registers in order of their word offsets from the block's start. end says
    the row marks the outermost frame (return address undefined, no rule before it reads
    memory) once the CFA is computable."""
    rule = row.cfa
    cfa_reg, cfa_arg = (rule[1], rule[2]) if rule[0] == CFA_REG else (-1, rule[1])
    rules = tuple([(reg, kind, arg) for reg, (kind, arg) in row.regs.items()])
    ra = row.ra
    first = span = unpack = saved = offsets = ra_i = None
    saves = sorted([(arg, reg) for reg, kind, arg in rules if kind == OFFSET])
    if (cfa_reg >= 0 and saves and len(saves) == len(rules) and ra in row.regs
            and all([b[0] - a[0] >= word for a, b in pairwise(saves)])
            and saves[-1][0] - saves[0][0] < 1 << 16):
        first = saves[0][0]
        letter = "Q" if word == 8 else "I"
        fmt = "<"
        pos = first
        for off, _reg in saves:
            fmt += f"{off - pos}x{letter}"  # skip to the word at `off`, read it
            pos = off + word
        span = pos - first
        unpack = _unpacker(fmt)
        saved = tuple([reg for _off, reg in saves])
        offsets = tuple([off - first for off, _reg in saves])
        ra_i = saved.index(ra)
    end = False
    if cfa_reg >= 0:
        for reg, kind, _arg in rules:
            if kind == UNDEF and reg == ra:
                end = True
                break
            if kind in (OFFSET, EXPR, VAL_EXPR):
                break
    return (cfa_reg, cfa_arg, row.signal, first, span, unpack, saved, offsets, ra_i, end,
            rules, ra)


def _ra_in_register(step: tuple | None) -> bool:
    """The step takes the return address from a register (DW_CFA_register), not from the
    stack: the one x86 frame whose CFA may equal its SP, as no call pushed a return address
    below it (glibc's vfork pops it into %rdi around the syscall)."""
    return step is not None and any([reg == step[11] and kind == REGISTER
                                     for reg, kind, _arg in step[10]])


def _unpacker(fmt: str) -> Callable:
    """unpack_from of struct.Struct(fmt), made once per format: the rows of a program save
    registers in few layouts, and making a Struct costs more than compiling the rest of a row."""
    unpack = _UNPACKERS.get(fmt)
    if unpack is None:
        if len(_UNPACKERS) >= _MAX_UNPACKERS:
            _UNPACKERS.clear()
        unpack = _UNPACKERS[fmt] = struct.Struct(fmt).unpack_from
    return unpack


_UNPACKERS: dict[str, Callable] = {}
_MAX_UNPACKERS = 4096  # formats come from the input: bounds their memory

_MISS = object()


def _walk(a: _Arch, sample_regs: tuple[int, ...], regs_mask: int, stack: memoryview,
          module_at: ModuleAt, history: History, max_frames: int,
          kernel_range: tuple[int, int], steps: dict[int, tuple | None]) -> tuple[list[int], int]:
    nregs = len(sample_regs)
    found = a.slots.get((regs_mask, nregs))
    keys, pick, sp_index, ip_index, unchanged = (found if found is not None
                                                  else a.slots_for(regs_mask, nregs))
    mask = a.mask
    limit = max_frames if max_frames >= 0 else _HARD_MAX_FRAMES
    suffixes = steps.get(None)
    if suffixes is None:
        suffixes = steps[None] = _Suffixes()
    whole_key = None  # set when the whole walk may be replayed or remembered (_compose)
    if sp_index >= 0:
        lo = sample_regs[sp_index] & mask
        # words past the address space's end are unreadable: _Memory.read() refuses them too
        hi = min(lo + len(stack), mask + 1)
        if unchanged and ip_index >= 0:
            whole_key = (sample_regs[ip_index], lo, regs_mask, nregs)
            whole = suffixes.wholes.get(whole_key)
            if whole is not None:
                got = _replay_whole(whole, sample_regs, stack, lo, hi, history, limit)
                if got is not None:
                    suffixes.wholes.replays += 1
                    return got, len(got)
    else:
        lo, hi = 1, 0
    # strict=False: pick gives one value per key, and checking costs ~0.2 us a sample
    regs = dict(zip(keys, pick(sample_regs), strict=False))
    if a.zero:
        regs.update(a.zero)
    ip, sp_reg, is_x86, arm = a.ip, a.sp, a.is_x86, a.arm
    frames: list[int] = []
    append = frames.append
    get = regs.get
    steps_get = steps.get
    seen: set[tuple[int, int]] = set()
    mem = None
    exact = True  # pc is an activation address: the first frame's, or a signal frame's caller's
    trail: list | None = []  # (step, block address) of the fast steps since the split
    # after the first step: (suffixes, (pc, sp, exact, arch) = key of the replayable rest of
    # the walk, the registers then, the first step's loop-guard key); False: not recording
    split = None
    while True:
        pc = get(ip)
        if pc is None:
            break
        if pc == 0 or len(frames) > limit:
            # a walk that ends here marks nothing guessed (SEMANTICS §11.3: upstream's
            # firstGuessed = frame count): remembered words that lead to the end are trusted
            if pc == 0 and trail and split is not None:
                _record(split, trail, frames, seen, True, stack, lo, a)
            return frames, len(frames)
        adj = pc if exact else pc - 1
        step = steps_get(adj, _MISS)
        if step is _MISS:
            step = steps[adj] = _lookup(module_at, adj, a.word)
        sp = get(sp_reg)
        new = None
        if step is None:
            if mem is not None and mem.guessed is not None and module_at(adj) is None:
                # a return address taken from another sample's words that lies in no
                # module ([heap], [stack], nothing) is junk, not a caller: stop before it
                break
            append(adj)
            signal = False
        else:
            (cfa_reg, cfa_arg, signal, first, span, unpack, saved, offsets, ra_i, end,
             _rules, _ra) = step
            append(pc if signal else adj)
            base = get(cfa_reg)
            if base is not None and first is not None:
                cfa = (base + cfa_arg) & mask
                first += cfa
                if lo <= first and first + span <= hi:
                    # every rule reads a word inside the stack copy: cannot fail, so the
                    # registers are updated in place instead of copied
                    values = unpack(stack, first - lo)
                    regs[sp_reg] = cfa
                    regs.update(zip(saved, values, strict=True))
                    history.write(first, offsets, values)  # a C call when compiled
                    ra = values[ra_i]
                    regs[ip] = ra & ~1 if arm else ra
                    new = regs
                    if trail is not None:
                        trail.append((step, first))
            elif end and base is not None:
                if trail and split is not None:
                    trail.append((step, None))
                    _record(split, trail, frames, seen, False, stack, lo, a)
                break
        if new is None:
            trail = None  # the slow path's outcome is not replayable
            if mem is None:
                mem = _Memory(a, stack, lo, hi, module_at, history, kernel_range, frames)
            if step is not None:
                new = mem.step(regs, step)
                if new is _END:
                    break
            if new is None:
                new = mem.fallback(regs)
                if new is None:
                    break
                signal = False
        cfa = new.get(sp_reg)
        if cfa is None:
            cfa = -1
        key = (pc, cfa)
        if key in seen:
            break
        if (is_x86 and not signal and sp is not None and 0 <= cfa <= sp
                and not (cfa == sp and _ra_in_register(step))):
            if trail and split is not None:
                _record(split, trail, frames, seen, False, stack, lo, a)
            break
        seen.add(key)
        if new is not regs:
            regs = new
            get = regs.get
        exact = signal
        if split is None:
            # after the first step: replay the rest of the walk if an earlier sample walked
            # it from the same state (pc, sp) through the same stack words, else record it
            memo_key = (get(ip), get(sp_reg), exact, a)
            suffix = suffixes.get(memo_key)
            if (suffix is not None and tuple(map(get, suffix[0])) == suffix[1]
                    and _replay(suffix, seen, stack, lo, hi, history, frames, limit)):
                suffixes.replays += 1
                if whole_key is not None and trail:
                    _compose(suffixes.wholes, whole_key, trail[0], frames[0], suffix,
                             sample_regs, unchanged, stack, lo, a)
                if suffix[-1]:
                    return frames, len(frames)
                break
            if suffixes.records > _RECORDS_FREE + suffixes.replays // _RECORDS_PER_REPLAY:
                split = False  # recording has not been paying off in this process
                trail = None
            else:
                split = (suffixes, memo_key, dict(regs), key)
                trail = []
    guessed = None if mem is None else mem.guessed
    return frames, len(frames) if guessed is None else min(guessed, len(frames))


class _Suffixes(dict):
    """(pc, sp, exact, arch) after a walk's first step -> its replayable rest (`_record`);
    and the whole walks made of a first step and one of them."""

    __slots__ = ("records", "replays", "words", "wholes")

    def __init__(self) -> None:
        super().__init__()
        self.records = 0  # walks _record was asked to remember
        self.replays = 0  # walks finished by _replay
        self.words = 0  # stack words the suffixes read, for _MAX_SUFFIX_WORDS
        self.wholes = _Wholes()


class _Wholes(dict):
    """(pc, sp, register mask, register count) of a sample -> its whole walk (`_compose`)."""

    __slots__ = ("records", "replays")

    def __init__(self) -> None:
        super().__init__()
        self.records = 0  # walks _compose was asked to remember
        self.replays = 0  # walks done by _replay_whole


def _record(split: tuple, trail: list, frames: list[int], seen: set,
            zero_end: bool, stack: memoryview, lo: int, a: _Arch) -> None:
    """Store the walk since the split (all fast steps, `trail`) under `split` for `_replay`:
    the registers it reads before writing them and their values at the split, the span and
    addresses of the stack words it read (one Struct reads them all), which of those decide
    its course (return addresses, saved stack pointers, registers later steps compute a CFA
    from: 'control' words), its loop-guard keys and frames, and whether it ended at pc 0."""
    suffixes, memo_key, at_split, key0 = split
    suffixes.records += 1
    word, ip, sp_reg = a.word, a.ip, a.sp
    written = {ip, sp_reg}  # both are part of `split`
    inputs: list[int] = []
    words: dict[int, int] = {}
    for step, first in trail:
        if step[0] not in written:
            inputs.append(step[0])
        if first is not None:
            values = step[5](stack, first - lo)
            words.update(zip([first + off for off in step[7]], values, strict=True))
            written.update(step[6])
    if not words:
        return
    needed = {sp_reg}
    control: set[int] = set()
    for step, first in reversed(trail):
        if first is not None:
            for i, (reg, off) in enumerate(zip(step[6], step[7], strict=True)):
                if i == step[8] or reg in needed:
                    control.add(first + off)
        needed.add(step[0])
    addrs = sorted(words)
    if any([y - x < word for x, y in pairwise(addrs)]):
        return  # overlapping words: no single Struct reads them
    letter = "Q" if word == 8 else "I"
    fmt = "<"
    pos = addrs[0]
    for addr in addrs:
        fmt += f"{addr - pos}x{letter}"
        pos = addr + word
    ctl = _picker([i for i, addr in enumerate(addrs) if addr in control])
    values = tuple([words[addr] for addr in addrs])
    suffixes.words += len(addrs)
    if suffixes.words > _MAX_SUFFIX_WORDS:
        suffixes.clear()
        suffixes.wholes.clear()  # they hold suffixes: this bounds what they keep alive too
        suffixes.words = len(addrs)
    suffixes[memo_key] = (tuple(inputs), tuple([at_split.get(r) for r in inputs]), addrs[0], pos,
                    _unpacker(fmt), tuple(addrs), ctl, ctl(values),
                    frozenset(seen - {key0}), tuple(frames[1:]), zero_end)


# Composing costs about as much as a whole-walk replay saves (and much less than recording a
# suffix): a process composes beyond its first _COMPOSES_FREE while it replays as many.
_COMPOSES_FREE = 1024
_MAX_WHOLES = 1 << 14  # whole walks remembered per process (~0.5 KB each, suffixes shared)
_NOTHING_SEEN: frozenset = frozenset()


def _compose(wholes: _Wholes, key: tuple, first: tuple, frame: int, suffix: tuple,
             sample_regs: tuple[int, ...], unchanged: dict, stack: memoryview, lo: int,
             a: _Arch) -> None:
    """Remember under `key` the whole walk of a sample whose first step was fast (`first`:
    its trail entry, giving `frame`) and whose rest replayed `suffix`, for `_replay_whole`:
    the sample registers the two read (without making the register dict), the first step's
    block and its control words - the return address, and what the suffix's key and inputs
    took from it (stack pointer, saved registers) - and the suffix."""
    if wholes.records > _COMPOSES_FREE + wholes.replays:
        return  # composing has not been paying off in this process
    wholes.records += 1
    step, block = first
    cfa_reg, span, unpack, saved, ra_i = step[0], step[4], step[5], step[6], step[8]
    ip, sp_reg = a.ip, a.sp
    s_inputs = suffix[0]
    written = {ip, sp_reg, *saved}
    inputs = [] if cfa_reg in (ip, sp_reg) else [cfa_reg]
    inputs += [r for r in s_inputs if r not in written and r not in inputs]
    if any([r not in unchanged for r in inputs]):
        return  # an input the walk does not take from the sample as it is
    needed = {sp_reg, *s_inputs}
    ctl = _picker([i for i, reg in enumerate(saved) if i == ra_i or reg in needed])
    get_inputs = _picker([unchanged[r] for r in inputs])
    if len(wholes) >= _MAX_WHOLES:
        wholes.clear()
    wholes[key] = (get_inputs, get_inputs(sample_regs), block, block + span, unpack, step[7],
                   ctl, ctl(unpack(stack, block - lo)), frame, suffix)


def _replay_whole(whole: tuple, sample_regs: tuple[int, ...], stack: memoryview, lo: int,
                  hi: int, history: History, limit: int) -> list[int] | None:
    """The frames of a `_compose`d whole walk if it runs identically here (same input
    registers, the first step's block inside this stack copy with the same control words,
    and the suffix replaying); writes to `history` what the walk would. Else None."""
    (get_inputs, input_values, block, end, unpack, offsets, ctl, ctl_values, frame,
     suffix) = whole
    if not (end <= hi and get_inputs(sample_regs) == input_values):
        return None
    values = unpack(stack, block - lo)
    if ctl(values) != ctl_values:
        return None
    history.write(block, offsets, values)  # as the first step does (a fallback walk redoes it)
    frames = [frame]
    # the suffix's inputs were checked above, as sample registers or control words
    if not _replay(suffix, _NOTHING_SEEN, stack, lo, hi, history, frames, limit):
        return None
    return frames


def _picker(index: list[int]) -> Callable[[tuple], tuple]:
    """A function giving the tuple of the items at `index` of a sequence."""
    if not index:
        return _nothing
    # itemgetter of one index gives the item, not a 1-tuple: ask for it twice
    return itemgetter(*index) if len(index) > 1 else itemgetter(index[0], index[0])


def _nothing(_values: tuple) -> tuple:
    return ()


def _replay(suffix: tuple, seen: set | frozenset, stack: memoryview, lo: int, hi: int,
            history: History, frames: list[int], limit: int) -> bool:
    """Finish the walk with a `_record`ed suffix whose input registers the caller found
    equal, if the rest would run identically here: its words inside this stack copy with
    the same control words, none of its loop-guard keys seen yet and its frames within the
    limit. Writes the words' current values to `history`, as the walk would have."""
    (_inputs, _input_values, rlo, rhi, unpack, addrs, ctl, ctl_values, keys, rframes,
     _zero_end) = suffix
    if not (lo <= rlo and rhi <= hi and len(rframes) <= limit and seen.isdisjoint(keys)):
        return False
    values = unpack(stack, rlo - lo)
    if ctl(values) != ctl_values:
        return False
    history.write(0, addrs, values)
    frames.extend(rframes)
    return True


class _Memory:
    """Stack memory of one sample as `_walk`'s slow path reads it, and that path's steps."""

    __slots__ = ("t", "word", "mask", "fmt", "unpack", "stack", "lo", "hi", "module_at",
                 "history", "klo", "khi", "frames", "guessed")

    def __init__(self, a: _Arch, stack: memoryview, lo: int, hi: int, module_at: ModuleAt,
                 history: History, kernel_range: tuple[int, int],
                 frames: list[int]) -> None:
        self.t = a.t
        self.word, self.mask, self.fmt = a.word, a.mask, a.fmt
        self.unpack = struct.Struct(a.fmt).unpack_from
        self.stack, self.lo, self.hi = stack, lo, hi
        self.module_at = module_at
        self.history = history
        self.klo, self.khi = kernel_range
        self.frames = frames
        self.guessed: int | None = None  # frame index of the first word taken from history

    def read(self, addr: int) -> int | None:
        """One stack word, following the read order of SEMANTICS §11.3."""
        word = self.word
        if addr < 0 or addr + word > self.mask + 1:
            return None
        if self.lo <= addr and addr + word <= self.hi:
            v = self.unpack(self.stack, addr - self.lo)[0]
            self.history.write(addr, _ONE_WORD, (v,))
            return v
        if self.klo <= addr < self.khi:
            return None
        mod = self.module_at(addr)
        if mod is not None:
            image, bias = mod[0], mod[1]
            data = image.read(addr - bias, word)
            if data is None or len(data) != word:
                return None
            return struct.unpack(self.fmt, data)[0]
        v = self.history.word(addr)
        if v is not None and self.guessed is None:
            self.guessed = len(self.frames)
        return v

    def step(self, regs: dict[int, int], step: tuple):
        """Caller registers from a compiled CFI step, rule by rule; None if the rules cannot be
        evaluated, _END if the return address is undefined (outermost frame)."""
        mask = self.mask
        cfa_reg, cfa_arg, *_block, rules, ra_reg = step
        if cfa_reg >= 0:
            base = regs.get(cfa_reg)
            if base is None:
                return None
            cfa = (base + cfa_arg) & mask
        else:
            cfa = self.eval(cfa_arg, regs, None)
            if cfa is None:
                return None
        t = self.t
        new = dict(regs)
        new[t.sp_dwarf] = cfa
        lo = self.lo
        for reg, kind, arg in rules:
            if kind == OFFSET:
                addr = (cfa + arg) & mask
                if addr < lo and reg != ra_reg:
                    # below the sample's SP: a slot the leaf's epilogue has popped the
                    # register from already (compilers emit no DW_CFA_restore after a pop),
                    # so the register holds the caller's value; the slot, outside the stack
                    # copy, would only be a word remembered from another sample
                    v = regs.get(reg)
                else:
                    v = self.read(addr)
            elif kind == VAL_OFFSET:
                v = (cfa + arg) & mask
            elif kind == SAME:
                v = regs.get(reg)
            elif kind == REGISTER:
                v = regs.get(arg)
            elif kind == EXPR:
                addr = self.eval(arg, regs, cfa)
                v = None if addr is None else self.read(addr)
            elif kind == VAL_EXPR:
                v = self.eval(arg, regs, cfa)
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
        if t.name == "arm":
            ra &= ~1  # Thumb bit is not part of the address
        new[t.ip_dwarf] = ra
        return new

    def fallback(self, regs: dict[int, int]):
        """Frame-pointer step where no CFI covers pc (elfutils' x86_64/aarch64 backends)."""
        t = self.t
        if t.name == "x86_64":
            fp = regs.get(6)
            if not fp:
                return None
            sp = regs.get(7) or 0
            ret = self.read(fp + 8)
            if ret is None:
                return None
            prev = self.read(fp)
            new_sp = fp + 16
            if new_sp <= sp:
                return None
            return {6: prev or 0, 7: new_sp, 16: ret}
        if t.name == "aarch64":
            lr = regs.get(30)
            fp = regs.get(29) or 0
            sp = regs.get(31) or 0
            new_lr = self.read(fp + 8) or 0
            new_fp = self.read(fp) or 0
            new_sp = fp + 16
            if not lr or (fp != 0 and new_sp <= sp):
                return None
            return {29: new_fp, 30: new_lr, 31: new_sp, 32: lr}
        return None

    def eval(self, expr: bytes, regs: dict[int, int], push: int | None) -> int | None:
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
                    stack.append(struct.unpack_from(self.fmt, expr, pos)[0])
                    pos += self.word
                elif op == 0x06:  # deref
                    v = self.read(stack.pop())
                    if v is None:
                        return None
                    stack.append(v)
                elif op == 0x94:  # deref_size
                    size = expr[pos]
                    pos += 1
                    v = self.read(stack.pop())
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
_ONE_WORD = (0,)  # offsets of a History.write of one word

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

