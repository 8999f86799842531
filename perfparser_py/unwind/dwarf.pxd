# C types of dwarf.py when compiled (setup.py); the .py stays the source of truth. Addresses,
# register values and masks stay Python ints: a 64-bit word is unsigned, and the walk's sums
# (cfa + offset before the mask, mask + 1) do not fit a C integer. What is typed is the
# objects' kinds (attribute access and dict/list/set calls in C) and the calls within the module.

cimport cython

from perfparser_py.unwind.history cimport History


cdef class _Arch:
    cdef public object t, word, mask, fmt, ip, sp, is_x86, arm
    cdef public dict zero, slots



cdef class _Suffixes(dict):
    cdef public Py_ssize_t records, replays, words
    cdef public _Wholes wholes


cdef class _Wholes(dict):
    cdef public Py_ssize_t records, replays


cdef class _Memory:
    cdef public object t, word, mask, fmt, unpack, stack, lo, hi, module_at, klo, khi, guessed
    cdef public History history
    cdef public list frames

    @cython.locals(mod=tuple)
    cpdef object read(self, object addr)
    @cython.locals(new=dict)
    cpdef object step(self, dict regs, tuple step)
    cpdef object fallback(self, dict regs)
    cpdef object eval(self, object expr, dict regs, object push)


cpdef object _lookup(object module_at, object adj, object word)

cpdef object _unpacker(str fmt)

@cython.locals(rules=tuple, saves=list, pos=object, fmt=str)
cpdef tuple _compile(object row, object word)

@cython.locals(nregs=Py_ssize_t, suffixes=_Suffixes, regs=dict, new=dict, frames=list,
               seen=set, mem=_Memory, trail=list, exact=bint)
cpdef tuple _walk(_Arch a, object sample_regs, object regs_mask, object stack, object module_at,
                  History history, object max_frames, object kernel_range, dict steps)

@cython.locals(suffixes=_Suffixes, written=set, inputs=list, words=dict, needed=set,
               control=set, addrs=list)
cpdef _record(tuple split, list trail, list frames, set seen, bint zero_end, object stack,
              object lo, _Arch a)

cpdef _compose(_Wholes wholes, tuple key, tuple first, object frame, tuple suffix,
               object sample_regs, dict unchanged, object stack, object lo, _Arch a)

cpdef list _replay_whole(tuple whole, object sample_regs, object stack, object lo, object hi,
                         History history, object limit)

cpdef bint _replay(tuple suffix, object seen, object stack, object lo, object hi,
                   History history, list frames, object limit)
