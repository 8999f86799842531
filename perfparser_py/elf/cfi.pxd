# C types of cfi.py when compiled (setup.py); the .py stays the source of truth. Addresses
# stay Python ints (64-bit unsigned, and sums before the mask), but for .eh_frame_hdr's table
# (_HdrTable: its sums wrap in C as `& mask` does); positions in a section and opcodes are C
# integers.

cimport cython

# C calls, not Python ones: the CFA programs read a LEB128 number in most operations
from perfparser_py.elf.leb128 cimport sleb, uint_at, uleb


cdef class Row:
    cdef public object cfa, regs, ra, signal, lo, hi, compiled


cdef class _Cie:
    cdef public object code_align, data_align, ra, fde_enc, signal, aug_z, init, addr_size
    cdef public object seg_size, initial


cdef class _Frames:
    cdef public object vaddr, data, is_eh, addr_size, mask, starts
    cdef const unsigned char[:] buf
    cdef public bint little, aarch64
    cdef public dict cies, fdes, rows
    cdef public list ends, offsets

    cpdef object _uint(self, object pos, int size)
    cpdef tuple read_enc(self, object pos, object enc)
    cpdef tuple _header(self, object off)
    cpdef _Cie cie(self, object off)
    cpdef tuple fde(self, object off)


cdef class _HdrTable:
    cdef const unsigned char[:] data
    cdef unsigned long long base, mask, sign
    cdef Py_ssize_t entry, pos, count
    cdef int width
    cdef bint little

    @cython.locals(v="unsigned long long")
    cdef unsigned long long _field(self, Py_ssize_t at)
    @cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t, pos=Py_ssize_t,
                   size=Py_ssize_t, at="unsigned long long")
    cpdef object find(self, object pc)


cdef class Cfi:
    cdef public _Frames _eh, _debug
    cdef public _HdrTable _hdr
    cdef public tuple _plts, _plt_regs
    cdef public object _exidx

    cpdef object row(self, object vaddr)
    cpdef object function_at(self, object vaddr)
    cpdef object _fde_offset(self, int which, _Frames frames, object pc)
    @cython.locals(c=_Cie, known=tuple, i=Py_ssize_t, stack=list)
    cpdef object _lookup(self, int which, _Frames frames, object pc)


@cython.locals(op=int, hi2=int, d="const unsigned char[:]", little=bint, kind=int, b=int)
cpdef tuple _run(_Frames frames, _Cie c, Py_ssize_t pos, Py_ssize_t end, object loc, tuple cfa,
                 dict regs, dict initial, object pc, list stack, Py_ssize_t advances)

cdef dict _SHARED
cdef Py_ssize_t _MAX_SHARED

cpdef object shared(object rule)

cpdef _restore(dict regs, dict initial, object reg)
