# C types of emit.py when compiled (setup.py); the .py stays the source of truth. The
# symbolizer (symbolize.pxd) calls an Emitter's methods as C functions, as they call their
# StreamWriter's (writer.pxd).

from perfparser_py.protocol.writer cimport StreamWriter


cdef class Emitter:
    cdef public StreamWriter writer
    cdef dict _strings, _locations
    cdef bytearray _state
    cdef public dict unnamed

    cpdef object string(self, object value)
    cpdef object location(self, object address, object rel_addr, object file, object pid,
                          object line, object column, object parent, object module=*,
                          object scope=*)
    cpdef object existing_location(self, object address, object rel_addr, object file,
                                   object pid, object line, object column, object module=*,
                                   object scope=*)
    cpdef bint has_symbol(self, object location_id)
    cpdef symbol(self, object location_id, object name, object binary, object path,
                 object is_kernel, object rel_addr, object size, object actual_path,
                 object is_inline, bint placeholder=*)
