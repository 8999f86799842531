"""Stack words remembered from a process's earlier samples (SEMANTICS §11.3)."""

from __future__ import annotations

# Write sets held back per History before they are applied anyway: bounds their memory.
MAX_PENDING = 1024


class History(dict):
    """Stack address -> the word an earlier sample of the process had there.

    DWARF unwinding (unwind.dwarf) writes every stack word it reads from a sample here, ~50
    per sample, but reads them back only when a walk needs a word outside its stack copy,
    which is rare. So its writes of word sets go through `write()` and are held back in
    `pending`, in the order they happened: (base, offsets, values) writes base + offsets[i]
    := values[i], keyed by (base, id(offsets)) - the entry keeps `offsets` alive, so equal
    keys mean equal address sets. A write of an address set that is already pending
    overwrites every word of the earlier write: that one is dropped and the new one goes to
    the end. `settle()` applies them in order, and `word()` settles before it reads, so every
    word is as writing it at once would have given it.
    """

    __slots__ = ("pending",)

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[tuple[int, int], tuple[int, tuple[int, ...], tuple[int, ...]]] = {}

    def write(self, base: int, offsets: tuple[int, ...], values: tuple[int, ...]) -> None:
        """base + offsets[i] := values[i] for every i (offsets ascending), held back."""
        key = (base, id(offsets))
        self.pending.pop(key, None)
        self.pending[key] = (base, offsets, values)

    def word(self, addr: int) -> int | None:
        """The word at `addr`, as settle() and then get() would give it.

        It settles first: scanning the pending sets instead costs O(pending) per read, and
        real programs' stacks are deeper than the sample copy, so most of their frames read
        here (sqlite3: 60 % of the run). Settling applies each write at most once, which is
        never more work than writing eagerly would have been, and the rare-read case that
        made writes lazy keeps its saving.
        """
        if self.pending:
            self.settle()
        return self.get(addr)

    def bound(self) -> None:
        """Settle once more than MAX_PENDING writes wait (the unwinder calls it per walk: one
        length check there instead of one per write)."""
        if len(self.pending) > MAX_PENDING:
            self.settle()

    def settle(self) -> None:
        """Apply the pending writes, oldest first."""
        for base, offsets, values in self.pending.values():
            # an index loop: compiled (history.pxd), C indexing beats building zip pairs
            for i in range(len(offsets)):
                self[base + offsets[i]] = values[i]
        self.pending.clear()
