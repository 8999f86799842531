# C types of rules.py when compiled (setup.py); the .py stays the source of truth.

cimport cython

from perfparser_py.elf.cfi cimport shared
from perfparser_py.unwind.process cimport ModuleAt

# NREG stays a Python int here: unwind.dwarf imports it (into its C int)
cdef object _MAX_OFFSET


cdef class Step:
    cdef public object cfa_reg, cfa_arg, rules, ra
    cdef public bint signal, end, ra_in_register, ra_signed, block
    cdef public int c_reg, nsaved, ra_i
    cdef public long long c_off, first, span
    cdef bytes saved, rels


cpdef object step_at(ModuleAt module_at, object adj, object word)

@cython.locals(st=Step, rules=list, saves=list, reads=bint, block=bint, i=Py_ssize_t)
cpdef Step compile_step(object row, object word)
