"""Address -> location id: symbols, DWARF lines and inline chains, kallsyms, perf maps.

The shape of what is emitted for one frame follows PROTOCOL.md §6 and SEMANTICS §10: a leaf
location for the address whose parent chain ends in a function location carrying the
SymbolDefinition. Results are cached so the cost grows with unique addresses: per mapped
file and file-relative address across all processes, per process for unmapped addresses.
"""

from __future__ import annotations

from array import array

from .diagnostics import is_position_name
from .elf.dwarf import DwarfInfo
from .elf.finder import normalize_path
from .elf.image import ElfImage
from .emit import Emitter
from .session import KERNEL_PID, Mapping, Process, SymbolMapping
from .unwind.framepointer import callchain_frames

# Frames the stack memos of all processes hold together (callchain(), unwound()), an entry
# counting one more: a real program's distinct stacks grow with its samples (a 100k-sample
# perf record -a: 55 k stacks of 331 k frames, ~27 MB), so beyond this every memo starts
# afresh (DESIGN decision 3: memory grows with unique addresses, not samples). At ~80 bytes
# a frame this holds ~10 MB. A Rust program's 100k-sample -g recording has 95 k: half this
# bound made it start afresh twice, 3-13 % more time (its addresses are resolved again).
MEMO_FRAMES = 1 << 17
# Unmapped addresses a process's slot checks new mappings against (ProcessSymbols), beyond
# which any change empties it
MAX_UNMAPPED = 256


class ProcessSymbols:
    """The symbolizer's slot in a session.Process (Process.symbols): its perf map and its
    memos, valid while no address they looked up maps anew. Each address answers by the
    mapping over it, so they hold across a mapping placed where none of the addresses they
    looked up outside every mapping lies (Process.fresh); any other change empties them, in
    place (the memo budget, Symbolizer._memo_room, holds these dicts)."""

    __slots__ = ("cache", "chains", "epoch", "fresh_seen", "generation", "joined",
                 "kernel_epoch", "mapped_generation", "perf_map", "unmapped", "unwound")

    def __init__(self, proc: Process) -> None:
        self.generation = proc.generation
        self.mapped_generation = proc.mapped_generation
        self.fresh_seen = len(proc.fresh)
        self.epoch = 0  # moved on when the memos are emptied
        # ip -> location id (Symbolizer.frame)
        self.cache: dict[int, int] = {}
        # the ips of `cache` outside every mapping of the space, up to MAX_UNMAPPED + 1 (the
        # memo budget empties `cache`, not this list, so its misses come back)
        self.unmapped: list[int] = []
        # (callchain, ip, ip is user, branch stack) -> location ids (Symbolizer.callchain);
        # their kernel frames hold for one epoch of the kernel's slot
        self.chains: dict[tuple, list[int]] = {}
        self.kernel_epoch = 0
        # unwound addresses (packed) -> location ids (Symbolizer.unwound)
        self.unwound: dict[bytes, list[int]] = {}
        # (id of a chains list, id of an unwound list) -> (both, their concatenation): a DWARF
        # sample's frames, one list per distinct pair (Symbolizer.unwound)
        self.joined: dict[tuple[int, int], tuple[list[int], list[int], list[int]]] = {}
        self.perf_map = None  # PerfMap, or False without one: opened by Symbolizer.prepare

    def still_valid(self, proc: Process) -> bool:
        """Whether the changes of proc's space since this slot looked only mapped ranges
        where none of its unmapped addresses lies."""
        if self.mapped_generation != proc.mapped_generation or len(self.unmapped) > MAX_UNMAPPED:
            return False
        unmapped = self.unmapped
        for start, end in proc.fresh[self.fresh_seen:]:
            for ip in unmapped:
                if start <= ip < end:
                    return False
        return True


def process_symbols(proc: Process) -> ProcessSymbols:
    """proc's symbolizer slot, made on first use and emptied when its space changed where
    it had looked."""
    state = proc.symbols
    if state is None:
        state = proc.symbols = ProcessSymbols(proc)
    elif state.generation != proc.generation:
        if not state.still_valid(proc):
            state.mapped_generation = proc.mapped_generation
            state.epoch += 1
            state.cache.clear()
            state.unmapped.clear()
            state.chains.clear()
            state.unwound.clear()
            state.joined.clear()
        state.generation = proc.generation
        state.fresh_seen = len(proc.fresh)
    return state


class Symbolizer:
    def __init__(self, emitter: Emitter, kernel_symbols, perf_map_path: str | None) -> None:
        self.emit = emitter
        # (path, local path, base_vaddr) -> {ip - base: location id} (session.Mapping): the
        # local path tells apart the files processes with views of their own map at one path.
        # A module's dict is also its mappings' `symbols`: a 4-tuple key an address cost a
        # 100k-sample g++ recording 4 MB of its 52 k addresses, and a tuple a lookup.
        self._shared: dict[tuple[bytes, str | None, int | None], dict[int, int]] = {}
        self._kernel_symbol = kernel_symbols.lookup  # a kernel.symbols.KernelSymbols's
        self._perf_map_path = perf_map_path
        self._dwarf: dict[ElfImage, object] = {}  # image -> DwarfInfo | None
        # (recorded path, local path) -> string ids of (binary, path, actual path)
        self._module_strings: dict[tuple[bytes, str | None], tuple[int, int, int]] = {}
        # pid -> location id of the symbolized function location shared by the process's
        # addresses outside every mapping (without a perf map)
        self._unmapped_parents: dict[int, int] = {}
        self._memo_frames = 0  # held by the stack memos in _memos (MEMO_FRAMES)
        self._memos: dict[int, dict] = {}  # id -> memo dict with entries (kept: ids unique)
        # dicts of what was made from memo entries (Sink's numbered chains): cleared with them
        self.memo_dependents: list[dict] = []

    # -- entry point ---------------------------------------------------------------------
    def frame(self, proc: Process, ip: int, is_kernel: bool) -> int:
        # per process first: one dict lookup, where the shared key takes a mapping lookup
        # and a tuple (DWARF stacks rarely repeat whole, their addresses do)
        state = proc.symbols
        if state is None or state.generation != proc.generation:
            state = process_symbols(proc)
        return self._frame(state, proc, ip, is_kernel)

    def _frame(self, state: ProcessSymbols, proc: Process, ip: int, is_kernel: bool) -> int:
        """frame() with proc's slot as process_symbols() gave it for this sample: the stack
        memos' misses pass it once for all their frames (a C call when compiled)."""
        cache = state.cache
        lid = cache.get(ip)
        if lid is not None:
            return lid
        space = proc.space  # typed when compiled: a C lookup (session.pxd)
        mapping = space.find(ip)
        if mapping is None:
            unmapped = state.unmapped
            if len(unmapped) <= MAX_UNMAPPED:  # one more makes any change empty the slot
                unmapped.append(ip)
            if proc.before_exec is not None:
                mapping = proc.before_exec.find(ip)
        if mapping is not None:
            ids = mapping.symbols
            if ids is None:
                ids = mapping.symbols = self._shared.setdefault(
                    (mapping.path, mapping.local, mapping.base_vaddr), {})
            offset = ip - mapping.base
            lid = ids.get(offset)
            if lid is None:
                lid = ids[offset] = self._resolve(proc, mapping, ip, is_kernel)
        else:
            lid = self._unmapped(proc, ip, is_kernel)
        self._memo_room(cache, 0)
        cache[ip] = lid
        return lid

    def callchain(self, proc: Process, kernel: Process, callchain, ip: int, ip_is_user: bool,
                  branch_stack) -> list[int]:
        """Location ids of a sample's recorded call chain (see callchain_frames), memoized per
        process: repeated stacks cost one dict lookup. A hit emits nothing new, exactly as
        resolving again would not, because every frame was resolved on the first miss."""
        state = process_symbols(proc)
        chains = state.chains
        kstate = process_symbols(kernel)
        epoch = kstate.epoch
        if state.kernel_epoch != epoch:
            chains.clear()
            state.joined.clear()  # what it made of the chains
            state.kernel_epoch = epoch
        key = (callchain, ip, ip_is_user, branch_stack)
        ids = chains.get(key)
        if ids is None:
            ids = [self._frame(kstate, kernel, addr, k) if k else self._frame(state, proc, addr, k)
                   for addr, k in callchain_frames(callchain, ip, ip_is_user, branch_stack)]
            self._memo_room(chains, len(callchain) + len(ids))
            chains[key] = ids
        return ids

    def unwound(self, proc: Process, recorded: list[int], packed: bytes) -> list[int]:
        """Location ids of a DWARF sample's frames: its `recorded` ones (a callchain() list, or
        empty), then those of its unwound user addresses, `packed` as unwind.dwarf gives them
        (array "Q" bytes; the memo's key as they are: 8 bytes an address where a tuple of ints
        holds 40). Memoized per process like callchain(): one list per distinct stack, which
        the writer packs once (StreamWriter.sample_one)."""
        state = process_symbols(proc)
        memo = state.unwound
        ids = memo.get(packed)
        if ids is None:
            ids = [self._frame(state, proc, addr, False) for addr in array("Q", packed)]
            self._memo_room(memo, 2 * len(ids))
            memo[packed] = ids
        if not recorded:
            return ids
        joined = state.joined
        key = (id(recorded), id(ids))
        entry = joined.get(key)
        if entry is None or entry[0] is not recorded or entry[1] is not ids:
            entry = (recorded, ids, recorded + ids)
            self._memo_room(joined, len(entry[2]) + 1)
            joined[key] = entry
        return entry[2]

    def _memo_room(self, memo: dict, frames: int) -> None:
        """Make room for an entry of `memo` (a process's chains or unwound) holding `frames`
        frames in its key and ids: past MEMO_FRAMES, every memo and its dependents are
        emptied (in place: the frames they gave stay valid). A memo joins the budget's list
        with its first entry since it was made or emptied by the budget."""
        self._memo_frames += frames + 1
        if self._memo_frames > MEMO_FRAMES:
            for d in (*self._memos.values(), *self.memo_dependents):
                d.clear()
            self._memos.clear()
            self._memo_frames = frames + 1
        if not memo:
            self._memos[id(memo)] = memo

    # -- one address (SEMANTICS §10.2 - §10.9) -------------------------------------------
    def _resolve(self, proc: Process, m: Mapping, ip: int, is_kernel: bool) -> int:
        key = (m.path, m.local)
        ids = self._module_strings.get(key)
        if ids is None:
            emit = self.emit
            binary = emit.string(m.binary)
            path = emit.string(m.path)
            actual = emit.string(normalize_path(m.local)) if m.local else -1
            ids = self._module_strings[key] = (binary, path, actual)
        image = m.image
        if image is not None:
            return self._in_image(image, m, ip, proc.pid, is_kernel, *ids)
        return self._without_image(proc, m, ip, is_kernel, *ids)

    def _unmapped(self, proc: Process, ip: int, is_kernel: bool) -> int:
        pid = proc.pid
        if pid != KERNEL_PID and not proc.symbols.perf_map:
            # Hot on frame-pointer files whose chains hold many such addresses: they all
            # share one (unnamed) function location per process, defined on the first one.
            parent = self._unmapped_parents.get(pid)
            if parent is None:
                parent = self._unmapped_parents[pid] = self._function_without_image(
                    proc, None, ip, is_kernel, -1, -1, -1)
        else:
            parent = self._function_without_image(proc, None, ip, is_kernel, -1, -1, -1)
        return self.emit.location(ip, 0, -1, pid, 0, 0, parent, -1)

    def _without_image(self, proc: Process, m: Mapping, ip: int, is_kernel: bool,
                       binary: int, path: int, actual: int) -> int:
        if type(m) is SymbolMapping:
            return self._named_code(proc, m, ip, is_kernel, binary, path, actual)
        parent = self._function_without_image(proc, m, ip, is_kernel, binary, path, actual)
        return self.emit.location(ip, 0, -1, proc.pid, 0, 0, parent, path)

    def _named_code(self, proc: Process, m: SymbolMapping, ip: int, is_kernel: bool,
                    binary: int, path: int, actual: int) -> int:
        """A frame in code that a KSYMBOL record or a jitdump names, with its source line.
        The mapping's ident is the locations' scope: another function JIT-compiled later at
        the same address must not get this one's locations."""
        emit = self.emit
        scope = -1 if m.base_vaddr is None else m.base_vaddr
        parent = emit.location(m.base, 0, -1, proc.pid, 0, 0, -1, path, scope)
        if not emit.has_symbol(parent):
            emit.symbol(parent, emit.string(m.name), binary, path, is_kernel, 0, 0, actual, False)
        at = m.line_at(ip)
        file, line = (emit.string(at[0]), at[1]) if at else (-1, 0)
        return emit.location(ip, 0, file, proc.pid, line, 0, parent, path, scope)

    def _function_without_image(self, proc: Process, m: Mapping | None, ip: int,
                                is_kernel: bool, binary: int, path: int, actual: int) -> int:
        """The symbolized function location of an address without ELF: kallsyms for the
        kernel, the perf-PID.map for user space."""
        emit = self.emit
        pid = proc.pid
        if pid == KERNEL_PID:
            hit = self._kernel_symbol(ip)
        else:
            hit = self._jit_symbol(proc, ip) if proc.symbols.perf_map else None
        if hit is not None:
            start, sym_name, module = hit
            name_bytes = sym_name
            if module:
                binary = emit.string(module)
        else:
            # a kallsyms miss has no start; a user frame without symbols points at its mapping
            start = m.base if m is not None and not is_kernel else 0
            name_bytes = None
        parent = emit.location(start, 0, -1, pid, 0, 0, -1, path)
        if not emit.has_symbol(parent):
            name = emit.string(name_bytes)
            emit.symbol(parent, name, binary, path, is_kernel, 0, 0, actual, False)
        return parent

    def _in_image(self, image: ElfImage, m: Mapping, ip, pid, is_kernel, binary, path, actual):
        emit = self.emit
        bias = m.bias
        x = ip - bias
        sym = image.symbol_at(x)
        placeholder = False
        if sym is None:
            fallback = image.fallback_name(x)
            if fallback is None:
                sym = image.unnamed_function(x)
                placeholder = sym is not None
            if sym is None:
                # no function known: the address is its own function location (PROTOCOL §6.2),
                # its name at most where it is (`<.init+1000>`) or a PLT slot's (`f@plt`)
                lid = emit.location(ip, 0, -1, pid, 0, 0, -1, path)
                if not emit.has_symbol(lid):
                    emit.symbol(lid, emit.string(fallback), binary, path, is_kernel, 0, 0,
                                actual, False, fallback is not None and is_position_name(fallback))
                return lid
        sym_name, start, size = sym
        name = sym_name
        fn_addr = ip - (x - start)
        file = -1
        line = column = 0
        fn_file, fn_line, fn_column, fn_scope = -1, 0, 0, -1
        parent = -1
        dwarf = self._dwarf_for(image)
        if dwarf is not None:
            row = dwarf.line_at(x)
            if row is not None:
                file = emit.string(row[0])
                line, column = row[1], row[2]
            scopes = dwarf.scopes_at(x)
            if scopes is not None:
                sub, inlined = scopes
                inner = inlined[-1] if inlined else sub
                # A function that is not inlined is named by its ELF symbol, demangled, as
                # perf and c++filt show it: DWARF names lack lambda and anonymous scopes,
                # clone suffixes and template return types. Inlined ones have only DWARF.
                if inlined and inner.name:
                    name = inner.name
                fn_addr = bias + (inner.entry_pc or 0)
                fn_file = emit.string(inner.decl_file)
                fn_line, fn_column, fn_scope = inner.decl_line, inner.decl_column, inner.die_offset
                if not inlined:
                    # the location stands for the ELF symbol, not the DIE: a subprogram in
                    # pieces (`f` and `f.cold`) has a symbol, a name and a range per piece.
                    # Negative, so never a DIE offset; the messages keep upstream's values.
                    fn_scope = -2 - start
                parent = emit.existing_location(fn_addr, 0, fn_file, pid, fn_line, fn_column, path,
                                                fn_scope)
                if inlined and (parent == -1 or not emit.has_symbol(parent)):
                    parent = self._inline_chain(
                        sub, inlined, bias, x, pid, sym, binary, path, is_kernel, actual
                    )
        if parent == -1:
            parent = emit.location(fn_addr, 0, fn_file, pid, fn_line, fn_column, -1, path,
                                   fn_scope)
        if not emit.has_symbol(parent):
            emit.symbol(parent, emit.string(name), binary, path, is_kernel, start, size, actual,
                        False, placeholder)
        return emit.location(ip, x, file, pid, line, column, parent, path)

    def _inline_chain(self, sub, inlined, bias, rel, pid, sym, binary, path, is_kernel, actual):
        """Locations and symbols for a subprogram and its inlined scopes (SEMANTICS §10.4)."""
        emit = self.emit
        _, start, size = sym
        entry = bias + (sub.entry_pc or 0)
        loc = emit.location(entry, rel, emit.string(sub.decl_file), pid, sub.decl_line,
                            sub.decl_column, -1, path, sub.die_offset)
        emit.symbol(loc, emit.string(sym[0]), binary, path, is_kernel, start, size, actual,
                    False)
        for scope in inlined:
            entry = bias + (scope.entry_pc or 0)
            site = emit.location(entry, 0, emit.string(scope.call_file), pid, scope.call_line,
                                 scope.call_column, loc, path, scope.die_offset)
            loc = emit.location(entry, rel, emit.string(scope.decl_file), pid, scope.decl_line,
                                scope.decl_column, site, path, scope.die_offset)
            emit.symbol(loc, emit.string(scope.name), binary, path, is_kernel, start, size,
                        actual, True)
        return loc

    def _dwarf_for(self, image: ElfImage):
        try:
            return self._dwarf[image]
        except KeyError:
            info = self._dwarf[image] = DwarfInfo.for_image(image)
            return info

    def incomplete_dwarf(self) -> list[tuple[str, list[bytes], str | None]]:
        """(path, .dwo names, supplementary file name) of the files whose DWARF lacked split
        units or its supplementary file (DwarfInfo.missing_files), for the run's report."""
        out = []
        for image, info in self._dwarf.items():
            if info is not None:
                dwos, supplementary = info.missing_files()
                if dwos or supplementary:
                    out.append((image.path, dwos, supplementary))
        return out

    # -- kernel and JIT ------------------------------------------------------------------
    def prepare(self, proc: Process) -> ProcessSymbols:
        """Before each sample: proc's slot, with the lines appended to the process's
        perf-PID.map picked up."""
        state = process_symbols(proc)
        perf_map = state.perf_map
        if perf_map is None:
            from .jitmap import PerfMap

            path = PerfMap.path_for(proc.pid, self._perf_map_path)
            perf_map = state.perf_map = PerfMap(path) if path else False
        if perf_map:
            perf_map.refresh()
        return state

    def _jit_symbol(self, proc: Process, ip: int):
        hit = proc.symbols.perf_map.lookup(ip)
        if hit is None:
            return None
        return hit[0], hit[1], ""
