"""The DWARF unwinder's per-process state (session.Process.unwind): the process's stack words
seen in earlier samples, its module lookup and its compiled CFI steps.

Compiled (DESIGN decision 11): the walk calls ModuleLookup.module, a C call, for every frame and
for stack words outside the sample's copy.
"""

from __future__ import annotations

from .history import History


class ModuleAt:
    """What a DWARF walk asks of an address space (ModuleLookup is the one a run uses): a
    class, not a typing.Protocol, so that importing the unwinder does not import typing."""

    __slots__ = ()

    def module(self, addr: int) -> tuple[object, int, object] | None:
        """(image, bias, CFI) of the module mapped at `addr`, None where none is."""
        raise NotImplementedError

    def no_image_span(self, addr: int) -> tuple[int, int] | None:
        """[start, end) around `addr` where every address answers None; None if that is
        not known (the walk then asks about each stack word it reads outside its copy)."""
        return None


class ModuleLookup(ModuleAt):
    """The DWARF unwinder's view of one process's address space (unwind.dwarf's module_at):
    runtime address -> (image, bias, CFI) | None (`module`), and where that answer is None
    around an address, so that a walk reading many stack words outside its copy asks once."""

    __slots__ = ("space", "cfis", "cfi_for")

    def __init__(self, space, cfis: dict[int, object], cfi_for) -> None:
        self.space = space
        self.cfis = cfis  # id(image) -> its Cfi | None, shared by the processes
        self.cfi_for = cfi_for

    def module(self, addr: int):
        m = self.space.find(addr)
        if m is None or m.image is None:
            return None
        key = id(m.image)
        cfi = self.cfis.get(key, False)
        if cfi is False:
            cfi = self.cfis[key] = self.cfi_for(m.image)
        return m.image, m.bias, cfi

    def no_image_span(self, addr: int) -> tuple[int, int] | None:
        """[start, end) around `addr` where every address answers None, else None."""
        start, end, m = self.space.span_at(addr)
        return None if m is not None and m.image is not None else (start, end)


class Steps:
    """Lookup address -> compiled CFI step (None where no CFI row covers it) for the walks of
    one process. The walk asks for one every frame, so the addresses go into a History's
    open-addressing table (64-bit keys and values, in C when compiled: no int object made and
    no dict probed a frame), whose values are the steps' places in `found`.

    Also the span where no module is that a walk found last (`nlo` to `nhi` inclusive;
    empty, 1 to 0, until one has; unwind.memory keeps it): the stack words walks read
    outside their copies lie there. Both hold what module lookups answered, valid while they
    answer the same."""

    __slots__ = ("where", "found", "nlo", "nhi")

    def __init__(self) -> None:
        self.clear()

    def add(self, addr: int, step: object) -> None:
        """Remember `step` as the one at `addr` (not remembered yet)."""
        self.where.put(addr, len(self.found))
        self.found.append(step)

    def get(self, addr: int, default: object = None) -> object:
        """The step remembered at `addr`, else `default`."""
        return self.found[self.where.found] if self.where.find(addr) else default

    def clear(self) -> None:
        self.where = History()
        self.found: list = []
        self.nlo, self.nhi = 1, 0

    def __len__(self) -> int:
        return len(self.found)


class ProcessUnwind:
    """One process's unwinding state. The history lives as long as the process; the steps
    (lookup address -> compiled CFI step) hold what module lookups answered, so they are
    valid for one image generation of its space (session.Process)."""

    __slots__ = ("generation", "history", "module_at", "steps")

    def __init__(self, module_at: ModuleLookup, generation: int) -> None:
        self.module_at = module_at
        self.history = History()
        self.steps = Steps()
        self.generation = generation

    def exited(self) -> None:
        """The process exited (session.Session keeps it for the samples of its exit path): its
        steps go, a cache those few samples rebuild (the 64 exited processes of a g++ build
        kept ~10 MB of them); its history, which they read, stays."""
        self.steps.clear()


def process_unwind(proc, cfis: dict[int, object], cfi_for) -> ProcessUnwind:
    """proc's unwinding state, made on first use (one module lookup per process: made per
    sample, it was ~1 % of a DWARF run) and its steps emptied when an image mapping changed."""
    state = proc.unwind
    if state is None:
        state = proc.unwind = ProcessUnwind(ModuleLookup(proc.space, cfis, cfi_for),
                                            proc.image_generation)
    elif state.generation != proc.image_generation:
        state.steps.clear()
        state.generation = proc.image_generation
    return state
