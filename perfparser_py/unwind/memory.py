"""A sample's memory as the DWARF walk reads it (SEMANTICS §11.3): its user stack copy, the
files of the modules its address space maps, and the words earlier samples of the process
had on their stacks (the history)."""

from __future__ import annotations

import sys

from . import prefetch
from .history import History
from .process import ModuleAt, Steps

# 8-byte words read as native ones (Memory.words) are little-endian ones here
_LITTLE_HOST = sys.byteorder == "little"
# Bytes at the start of a stack copy a walk's first frames read, loaded ahead (prefetch.py);
# more measured no faster
_PREFETCH_BYTES = 1024


class Memory:
    """Reads the words of one walk, reused walk after walk (`begin`): the stack copy
    (`raw`, from address `lo`, `avail` bytes of it readable: its bytes in `stack`, or, for
    8-byte words on a little-endian host (`wide`), its whole words in `words`), the modules
    (`module_at`), the history, how many frames the walk has so far (`nframes`, kept by the
    walk), the frame index of the first word taken from the history (`guessed`, -1 for
    none) and the process's `steps`, whose span without modules (`nlo`, `nhi`) outlives the
    walk. Addresses and words are of `word` bytes, `mask` the highest address."""

    __slots__ = ("word", "wide", "mask", "raw", "stack", "words", "lo", "avail", "module_at",
                 "history", "steps", "kernel", "klo", "khi", "nframes", "guessed", "value")

    def __init__(self, word: int) -> None:
        self.word = word
        self.wide = word == 8 and _LITTLE_HOST
        self.mask = (1 << (8 * word)) - 1
        self.module_at = self.history = self.steps = None
        self.raw = self.stack = b""
        self.words = memoryview(b"").cast("Q")
        self.lo = self.avail = self.klo = self.khi = self.value = self.nframes = 0
        self.kernel = False
        self.guessed = -1

    def begin(self, stack: memoryview, has_sp: bool, sp: int, module_at: ModuleAt,
              history: History, steps: Steps, kernel_range: tuple[int, int]) -> None:
        """A new walk's memory: stack copy `stack` read at the sample's stack pointer `sp`
        (if it `has_sp`), the address space's `module_at`, `history` and `steps`, and
        `kernel_range` (start, end) the kernel's addresses, which hold no user words (end 0:
        none)."""
        self.raw = stack
        prefetch.lines(stack, _PREFETCH_BYTES)
        n = len(stack)
        # one typed view a walk: each costs a buffer acquisition
        if self.wide:
            whole = memoryview(stack)
            if n % 8:
                whole = whole[:n - n % 8]
            self.words = whole.cast("Q")
        else:
            self.stack = stack
        if has_sp:
            lo = sp
            # words past the address space's end are unreadable: mask - lo + 1 bytes are left
            room = self.mask - lo
            self.lo = lo
            self.avail = n if n == 0 or n - 1 <= room else room + 1
        else:
            self.lo, self.avail = 1, 0
        self.module_at, self.history, self.steps = module_at, history, steps
        klo, khi = kernel_range
        self.kernel = klo < khi
        if self.kernel:
            self.klo, self.khi = klo, khi - 1  # khi inclusive: the range may end at 2**64
        self.guessed = -1
        self.nframes = 0

    def _load(self, pos: int) -> int:
        """The little-endian word at byte `pos` of the stack copy."""
        if self.wide:
            if pos % 8 == 0 and pos // 8 < len(self.words):
                return self.words[pos // 8]  # one load: CFA and SP are 8-byte aligned
            return int.from_bytes(self.raw[pos:pos + 8], "little")
        v = 0
        for k in range(self.word):
            b = self.stack[pos + k]  # not a local copy: see unwind.dwarf's _block_step
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
        if not self.steps.nlo <= addr <= self.steps.nhi:
            mod = self.module_at.module(addr)
            if mod is not None:
                data = mod[0].read(addr - mod[1], self.word)
                if data is None or len(data) != self.word:
                    return False
                self.value = int.from_bytes(data, "little")
                return True
            self._no_module_around(addr)
        if self.history.find(addr):
            if self.guessed < 0:
                self.guessed = self.nframes
            self.value = self.history.found
            return True
        return False

    def _no_module_around(self, addr: int) -> None:
        """Remember, with the process's steps, where around `addr` module_at answers None as
        it did for `addr`, if it can say: the stack words a walk reads outside its copy lie in
        one such span, the rest of the [stack] mapping, and the next walks' in the same."""
        span = self.module_at.no_image_span(addr)
        if span is not None:
            # inclusive: a span may end at 2**64
            self.steps.nlo, self.steps.nhi = span[0], span[1] - 1

    def read_word(self, addr: int) -> int | None:
        """The word at `addr` as the dict path reads it (`_read`), None where it cannot be
        read."""
        if addr < 0 or addr > self.mask - self.word + 1:
            return None
        return self.value if self._read(addr) else None
