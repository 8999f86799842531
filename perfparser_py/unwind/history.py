"""Stack words remembered from a process's earlier samples (SEMANTICS §11.3)."""

from __future__ import annotations

from array import array

# Golden-ratio multiplier of the address hash (Fibonacci hashing: the high bits of the
# product spread stack addresses, which differ in their low bits, over the table).
_MULT = 0x9E3779B97F4A7C15
_MASK64 = 0xFFFFFFFFFFFFFFFF  # a no-op in C (history.pxd: both are C constants)
_FIRST_BITS = 10


class History:
    """Stack address -> the word an earlier sample of the process had there.

    DWARF unwinding (unwind.memory) writes every stack word it reads from a sample here, ~50
    per sample, and reads one back for a word outside its stack copy (real programs' stacks
    are deeper than the copy: most of their frames read here). So both are O(1) and in C when
    compiled (history.pxd): an open-addressing table of 64-bit keys and values, linear
    probing, grown to keep it at most half full. It holds one entry per address ever written,
    as the dict it replaces did, in 17 bytes an entry instead of ~100.
    """

    def __init__(self) -> None:
        self._alloc(_FIRST_BITS)

    def _alloc(self, bits: int) -> None:
        self.bits = bits
        self.count = 0
        size = 1 << bits
        self.keys = array("Q", bytes(8 * size))
        self.values = array("Q", bytes(8 * size))
        self.used = bytearray(size)

    def _slot(self, addr: int) -> int:
        """The slot holding `addr`, else the free slot where it would go."""
        i = ((addr * _MULT) & _MASK64) >> (64 - self.bits)
        last = (1 << self.bits) - 1
        while self.used[i] and self.keys[i] != addr:
            i = (i + 1) & last
        return i

    def put(self, addr: int, value: int) -> None:
        """Remember `value` as the word at `addr`."""
        i = self._slot(addr)
        if not self.used[i]:
            if 2 * (self.count + 1) > (1 << self.bits):
                self._grow()
                i = self._slot(addr)
            self.used[i] = 1
            self.keys[i] = addr
            self.count += 1
        self.values[i] = value

    def _grow(self) -> None:
        keys, values, used = self.keys, self.values, self.used
        self._alloc(self.bits + 1)
        for j in range(len(used)):
            if used[j]:
                self.put(keys[j], values[j])

    def find(self, addr: int) -> bool:
        """Whether a word is remembered at `addr`; if so it is in `found`."""
        i = self._slot(addr)
        if self.used[i]:
            self.found = self.values[i]
            return True
        return False

    def word(self, addr: int) -> int | None:
        """The word remembered at `addr`, else None."""
        return self.found if self.find(addr) else None

    def __setitem__(self, addr: int, value: int) -> None:
        self.put(addr, value)

    def __getitem__(self, addr: int) -> int:
        if not self.find(addr):
            raise KeyError(addr)
        return self.found

    def __len__(self) -> int:
        return self.count

    def items(self) -> list[tuple[int, int]]:
        """Every (address, word) remembered, in no particular order."""
        return [(self.keys[i], self.values[i]) for i in range(len(self.used)) if self.used[i]]
