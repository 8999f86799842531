# C types of dwarf.py when compiled (setup.py); the .py stays the source of truth. The walk's
# registers, addresses and stack words are unsigned 64-bit C integers: a word's arithmetic
# wraps as `& mask` does for 64-bit words, and the narrower masks are applied explicitly. The
# dict path (_dict_step) keeps Python ints. A C function returning a bint or an unsigned
# integer names its exception value: without one, Cython calls PyErr_Occurred() after every
# call of it, dozens a frame.

cimport cython

from perfparser_py.unwind.arches cimport Arch
from perfparser_py.unwind.expression cimport evaluate
from perfparser_py.unwind.history cimport History
from perfparser_py.unwind.memory cimport Memory
from perfparser_py.unwind.process cimport ModuleAt, Steps
from perfparser_py.unwind.rules cimport Step, step_at

cdef int NREG, _SEEN_C, _OUT_C
cdef bint _COMPILED


cdef class _Walker(Memory):
    cdef int ip, sp, gen
    cdef Py_ssize_t nseen
    cdef bint thumb, cfa_above_sp
    cdef object zero, extra, more
    cdef Arch a
    cdef unsigned long long[:] regs, tv, seen_pc, seen_cfa
    cdef unsigned char[:] valid, tok, seen_has
    cdef unsigned long long[::1] out
    cdef object out_array

    @cython.locals(nregs=Py_ssize_t, keys=tuple, index=tuple, sp_index=Py_ssize_t,
                   ip_index=Py_ssize_t, mask="unsigned long long", r=int, j=Py_ssize_t, gen=int,
                   limit=Py_ssize_t, ip=int, n=Py_ssize_t,
                   sp_reg=int, exact=bint, pc="unsigned long long", adj="unsigned long long",
                   has_sp=bint, sp="unsigned long long", moved=bint, tried=bint, signal=bint,
                   st=Step, cfa="unsigned long long", has_cfa=bint, guessed=Py_ssize_t,
                   regs="unsigned long long[:]", valid="unsigned char[:]",
                   at="const unsigned char *")
    cpdef tuple walk(self, bytes sample_regs, object regs_mask, object stack, ModuleAt module_at,
                     History history, Py_ssize_t max_frames, object kernel_range, Steps steps)
    cdef bint _has(self, object reg) except -1
    @cython.locals(n=Py_ssize_t)
    cdef _push(self, unsigned long long addr)
    cdef bytes _frames(self)
    @cython.locals(start="unsigned long long", d="unsigned long long", i=int, off="long long",
                   v="unsigned long long", r=int, ra="unsigned long long", history=History)
    cdef bint _block_step(self, Step st, unsigned long long cfa) except -1
    @cython.locals(i=int, r=int, addr="unsigned long long", off="long long",
                   ra="unsigned long long", mask="unsigned long long", lo="unsigned long long")
    cdef bint _offsets_step(self, Step st, unsigned long long cfa) except -1
    @cython.locals(size="unsigned long long", addr="unsigned long long", module_at=ModuleAt)
    cdef unsigned long long _unsigned(self, unsigned long long ra) except? 0xFFFFFFFFFFFFFFFF
    @cython.locals(n=Py_ssize_t, i=Py_ssize_t)
    cdef bint _seen(self, unsigned long long pc, bint has, unsigned long long cfa) except -1
    @cython.locals(r=int)
    cdef _clear(self)
    @cython.locals(r=int)
    cdef dict _as_dict(self)
    @cython.locals(r=object)
    cdef _from_dict(self, dict new)
    @cython.locals(mask=object, lo=object, new=dict)
    cpdef object _dict_step(self, dict regs, Step st)


@cython.locals(v="unsigned long long", b="unsigned long long", k=int)
cdef unsigned long long _register(const unsigned char *at, Py_ssize_t i) noexcept

# the walker typed: its walk is then a C call, not a method looked up and its arguments parsed
@cython.locals(walker=_Walker)
cpdef tuple unwind(object arch, object abi, object regs, object regs_mask, object stack,
                   ModuleAt module_at, History history, Py_ssize_t max_frames,
                   object kernel_range=*, Steps steps=*)
