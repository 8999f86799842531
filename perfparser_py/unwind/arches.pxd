# C types of arches.py when compiled (setup.py); the .py stays the source of truth.

from perfparser_py.unwind.memory cimport Memory


cdef class Arch:
    cdef public object t, zero, slots
    cdef public int word, ip, sp
    cdef public bint thumb, cfa_above_sp

    cpdef object fallback(self, Memory mem, dict regs)


cdef class X86_64(Arch):
    cpdef object fallback(self, Memory mem, dict regs)


cdef class AArch64(Arch):
    cpdef object fallback(self, Memory mem, dict regs)
