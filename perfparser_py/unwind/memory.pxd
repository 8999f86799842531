# C types of memory.py when compiled (setup.py); the .py stays the source of truth. Addresses
# and words are unsigned 64-bit C integers; exception values as unwind/dwarf.pxd says.

cimport cython

cimport perfparser_py.unwind.prefetch as prefetch
from perfparser_py.unwind.history cimport History
from perfparser_py.unwind.process cimport ModuleAt, Steps


cdef Py_ssize_t _PREFETCH_BYTES


cdef class Memory:
    cdef int word
    cdef bint wide
    cdef object raw
    cdef unsigned long long mask
    cdef unsigned long long lo, avail, klo, khi, value
    cdef bint kernel
    cdef Py_ssize_t guessed, nframes
    cdef ModuleAt module_at
    cdef Steps steps
    cdef const unsigned char[::1] stack  # the sample's bytes: contiguous
    cdef const unsigned long long[::1] words
    cdef History history

    @cython.locals(n=Py_ssize_t, lo="unsigned long long", room="unsigned long long")
    cdef begin(self, object stack, bint has_sp, unsigned long long sp, ModuleAt module_at,
               History history, Steps steps, object kernel_range)
    # an unsigned position: its index needs no wrap-around test, only the bounds check
    @cython.locals(v="unsigned long long", b="unsigned long long", k=size_t)
    cdef unsigned long long _load(self, size_t pos) except? 0xFFFFFFFFFFFFFFFF
    @cython.locals(v="unsigned long long", lo="unsigned long long", mod=tuple)
    cdef bint _read(self, unsigned long long addr) except -1
    cdef _no_module_around(self, unsigned long long addr)
    cpdef object read_word(self, object addr)
