# C types of session.py when compiled (setup.py); the .py stays the source of truth. A mapping's
# fields and an address space's lists are C fields, and the per-frame lookups (find, span_at)
# C calls where the space's type is known (unwind.process.ModuleLookup).

cimport cython


cdef class Mapping:
    cdef public object base, base_vaddr, bias, end, image, local, path, pgoff, start
    cdef public dict symbols


cdef class SymbolMapping(Mapping):
    cdef public object lines, name


cdef class AddressSpace:
    cdef readonly list _maps, _starts

    @cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t, starts=list)
    cdef Py_ssize_t _index(self, object addr)
    @cython.locals(i=Py_ssize_t, m=Mapping)
    cpdef Mapping find(self, object addr)
    @cython.locals(i=Py_ssize_t, maps=list, m=Mapping)
    cpdef tuple span_at(self, object addr)
