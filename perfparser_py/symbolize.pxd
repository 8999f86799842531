# C types of symbolize.py when compiled (setup.py); the .py stays the source of truth. The
# per-frame path (frame, its memos and their budget) is C calls on C fields; a process stays a
# Python object, its address space's lookup a C call (session.pxd).

cimport cython

from perfparser_py.emit cimport Emitter
from perfparser_py.session cimport AddressSpace, Mapping
from perfparser_py.unwind.framepointer cimport callchain_frames

cdef class ProcessSymbols:
    cdef public dict cache, chains, unwound, joined
    cdef public list unmapped
    cdef public object epoch, fresh_seen, generation, kernel_epoch, mapped_generation, perf_map

    cpdef bint still_valid(self, object proc)


@cython.locals(state=ProcessSymbols)
cpdef ProcessSymbols process_symbols(object proc)


cdef class Symbolizer:
    cdef public Emitter emit
    cdef dict _shared, _dwarf, _module_strings, _unmapped_parents, _memos
    cdef object _kernel_symbol, _perf_map_path
    cdef Py_ssize_t _memo_frames
    cdef public list memo_dependents

    @cython.locals(state=ProcessSymbols)
    cpdef object frame(self, object proc, object ip, object is_kernel)
    @cython.locals(cache=dict, space=AddressSpace, mapping=Mapping, ids=dict)
    cdef object _frame(self, ProcessSymbols state, object proc, object ip, object is_kernel)
    @cython.locals(state=ProcessSymbols, kstate=ProcessSymbols, chains=dict, ids=list)
    cpdef list callchain(self, object proc, object kernel, object callchain, object ip,
                         object ip_is_user, object branch_stack)
    @cython.locals(state=ProcessSymbols, memo=dict, ids=list, joined=dict, entry=tuple)
    cpdef list unwound(self, object proc, list recorded, bytes packed)
    cdef _memo_room(self, dict memo, Py_ssize_t frames)
    cdef object _resolve(self, object proc, object m, object ip, object is_kernel)
    cdef object _unmapped(self, object proc, object ip, object is_kernel)
