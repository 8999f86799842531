"""A CFI row compiled into the `Step` the DWARF walk evaluates (SEMANTICS §11.3).

`step_at()` finds the row covering a lookup address in the CFI of the module there and
compiles it once per row (`compile_step`): the common row - a register-based CFA and every
register saved at an offset from it - gets the C form the walk evaluates in C arrays
(unwind.dwarf's `_block_step`, `_offsets_step`); every row keeps its rules for the dict path
(`_dict_step`). `cfi_for_image()` indexes a module's CFI with what its machine's register
table says of the PLT code no CFI covers, and 32-bit Arm's exception-handling index.
"""

from __future__ import annotations

from ..elf.cfi import CFA_REG, EXPR, OFFSET, REGISTER, SIGNED, UNDEF, VAL_EXPR, Cfi, shared
from ..elf.constants import EM_ARM
from ..elf.exidx import ArmExidx
from .registers import table_for_machine

# DWARF registers the walk holds in C arrays: every architecture's sample registers and
# aarch64's zero ones are below it. A rule for a higher one takes the dict path. At most 256:
# a Step holds each of its registers in a byte.
NREG = 128
# Offsets a Step holds as C integers; a larger one (hostile CFI) takes the dict path, whose
# Python ints have no bound.
_MAX_OFFSET = 1 << 62


def cfi_for_image(image) -> Cfi | None:
    """`image`'s unwind tables (elf.cfi.Cfi): with rows for its PLT code that no CFI covers
    in the terms of its machine's register table, and 32-bit Arm's index (elf.exidx)."""
    t = table_for_machine(image.e_machine, image.is_64)
    plt_regs = () if t is None else (t.sp_dwarf, t.ra_dwarf)
    exidx = ArmExidx.for_image(image) if image.e_machine == EM_ARM else None
    return Cfi.for_image(image, plt_regs, exidx)


def step_at(module_at, adj: int, word: int) -> Step | None:
    """The compiled CFI step for lookup address `adj`, None where no CFI covers it;
    `module_at` as unwind.dwarf.unwind()'s."""
    mod = module_at.module(adj)
    if mod is None or mod[2] is None:
        return None
    row = mod[2].row(adj - mod[1])
    if row is None:
        return None
    compiled = row.compiled
    if compiled is None or compiled[0] != word:
        compiled = row.compiled = (word, compile_step(row, word))
    return compiled[1]


class Step:
    """A CFI row as the walk evaluates it (`compile_step`).

    For the dict path: `cfa_reg` (-1 for a CFA expression) and `cfa_arg` (its offset or
    expression), `rules` as (register, kind, argument) in row order, `ra` the return address
    register. For the C path: `c_reg`/`c_off`, the CFA register and offset, when both fit
    (`c_reg` -1 otherwise); `block` when every rule saves a register below NREG at its own
    offset from the CFA, at least a word apart and within 64 KiB, the return address among
    them: then `saved` holds the registers by ascending offset, a byte each (`nsaved` of them,
    the return address at `ra_i`), `rels` their offsets from the lowest one, `first`, two
    bytes each, little-endian, and `span` the bytes from the lowest one to the end of the
    highest. `end`: the row marks the outermost frame (return address undefined, no rule
    before it reads memory) once the CFA is computable.
    `ra_in_register`: the return address comes from a register (DW_CFA_register), not from
    the stack: the one x86 frame whose CFA may equal its SP, as no call pushed a return
    address below it (glibc's vfork pops it into %rdi around the syscall). `ra_signed`: the
    return address carries a pointer authentication code (AArch64's RA_SIGN_STATE, which is
    no register rule)."""

    __slots__ = ("cfa_reg", "cfa_arg", "rules", "ra", "signal", "end", "ra_in_register",
                 "ra_signed", "block", "c_reg", "c_off", "nsaved", "ra_i", "first", "span",
                 "saved", "rels")


def compile_step(row, word: int) -> Step:
    """The Step of CFI row `row` (elf.cfi.Row) for stack words of `word` bytes."""
    st = Step()
    rule = row.cfa
    st.cfa_reg, st.cfa_arg = (rule[1], rule[2]) if rule[0] == CFA_REG else (-1, rule[1])
    st.ra = ra = row.ra
    st.signal = bool(row.signal)
    fits = 0 <= st.cfa_reg < NREG and -_MAX_OFFSET < st.cfa_arg < _MAX_OFFSET
    st.c_reg = st.cfa_reg if fits else -1
    st.c_off = st.cfa_arg if fits else 0
    # one pass over the rules, in row order: every row asked for is compiled (cc1plus: 6 k)
    rules = []
    saves = []  # (offset, register) of the offset rules the C path can hold
    st.end = reads = st.ra_signed = False
    for reg, (kind, arg) in row.regs.items():
        if kind == SIGNED:
            st.ra_signed = True
            continue
        rules.append(shared((reg, kind, arg)))
        if kind == OFFSET and 0 <= reg < NREG and -_MAX_OFFSET < arg < _MAX_OFFSET:
            saves.append((arg, reg))
        elif kind == UNDEF and reg == ra and not reads:
            st.end = st.cfa_reg >= 0
        reads = reads or kind == OFFSET or kind == EXPR or kind == VAL_EXPR
    st.rules = tuple(rules)
    ra_rule = row.regs.get(ra)
    st.ra_in_register = ra_rule is not None and ra_rule[0] == REGISTER
    block = fits and 0 < len(saves) == len(rules) and ra_rule is not None
    if block:
        saves.sort()
        for i in range(1, len(saves)):
            if saves[i][0] - saves[i - 1][0] < word:
                block = False
                break
        block = block and saves[-1][0] - saves[0][0] < 1 << 16  # span: a C integer
    st.block = block
    if block:
        # bytes, shared: a program has up to ~10^5 rows (a typed memoryview costs ~0.4 KB),
        # and the compiled walk reads a byte of one as a C integer, where a tuple's item is an
        # int object elsewhere in memory, a cache miss a frame
        first = saves[0][0]
        st.saved = shared(bytes([reg for _arg, reg in saves]))  # each below NREG
        st.rels = shared(b"".join([(arg - first).to_bytes(2, "little") for arg, _reg in saves]))
        st.nsaved = len(saves)
        st.ra_i = st.saved.index(ra)
        st.first = first
        st.span = saves[-1][0] + word - first
    else:
        st.saved = st.rels = b""
        st.nsaved = st.ra_i = st.first = st.span = 0
    return st
