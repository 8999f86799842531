# C types of process.py when compiled (setup.py); the .py stays the source of truth. The walk
# calls a module lookup (ModuleAt.module) as a C method; a Python subclass (a test's) overrides it.

cimport cython

from perfparser_py.session cimport AddressSpace, Mapping
from perfparser_py.unwind.history cimport History


cdef class Steps:
    cdef History where
    cdef list found
    cdef public unsigned long long nlo, nhi

    cpdef add(self, unsigned long long addr, object step)
    cpdef object get(self, unsigned long long addr, object default=*)
    cpdef clear(self)


cdef class ModuleAt:
    cpdef object module(self, object addr)
    cpdef object no_image_span(self, object addr)


cdef class ModuleLookup(ModuleAt):
    cdef public AddressSpace space
    cdef public dict cfis
    cdef public object cfi_for

    @cython.locals(m=Mapping)
    cpdef object module(self, object addr)
    @cython.locals(m=Mapping)
    cpdef object no_image_span(self, object addr)
