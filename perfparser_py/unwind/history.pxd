# C types of history.py when compiled (setup.py); the .py stays the source of truth.
# Exception values as unwind/dwarf.pxd says.

cimport cython

cdef unsigned long long _MULT, _MASK64


cdef class History:
    cdef public int bits
    cdef public Py_ssize_t count
    cdef unsigned long long[::1] keys  # arrays and a bytearray: contiguous
    cdef unsigned long long[::1] values
    cdef unsigned char[::1] used
    cdef public unsigned long long found

    cdef _alloc(self, int bits)
    # slots are unsigned: their indexes need no wrap-around test, only the bounds check
    @cython.locals(i=size_t, last=size_t)
    cdef size_t _slot(self, unsigned long long addr) except? <size_t>-1
    @cython.locals(i=size_t)
    cpdef put(self, unsigned long long addr, unsigned long long value)
    @cython.locals(j=Py_ssize_t, keys="unsigned long long[::1]", values="unsigned long long[::1]",
                   used="unsigned char[::1]")
    cdef _grow(self)
    @cython.locals(i=size_t)
    cpdef bint find(self, unsigned long long addr) except -1
