# C types of lines.py when compiled (setup.py); the .py stays the source of truth. The line
# program is read through a typed memoryview with C positions and opcodes. _decode_rows keeps
# addresses, lines, files and columns in C numbers too, and leaves to _run (Python ints:
# hostile tables hold numbers beyond 64 bits) what they cannot hold.

cimport cython

from perfparser_py.elf.leb128 cimport sleb, sleb_value, uint_at, uleb, uleb_end, uleb_value

cdef unsigned long long _U64
cdef long long _I32, _LINE_STEP, _SATURATED
cdef Py_ssize_t _FULL, _FIRST_ROWS


@cython.locals(data="const unsigned char[:]", rows=list, seq=Py_ssize_t, little=bint,
               addr_step="const long long[:]", line_step="const long long[:]", simple=bint,
               op=int, v=int, w=int, sub=int)
cpdef list _run(object dw, object cu, object sec, Py_ssize_t pos, Py_ssize_t end, int version,
                object min_inst, object max_ops, int line_range, int opcode_base,
                object line_base, bytes std_lengths)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, a="unsigned long long[:]", flat="int[:]",
               row=tuple)
cpdef tuple _pack_rows(list rows)


@cython.locals(data="const unsigned char[:]", little=bint, off4=bint, nfmt=int, fmts=list,
               out=list)
cpdef tuple _header_entries(object dw, object cu, object sec, Py_ssize_t pos)


@cython.locals(room=Py_ssize_t, n=Py_ssize_t, state=list)
cpdef object _packed_rows(object sec, bint little, Py_ssize_t pos, Py_ssize_t end, int version,
                          object min_inst, object max_ops, int line_range, int opcode_base,
                          object line_base, bytes std_lengths)

@cython.locals(data="const unsigned char[:]", a="unsigned long long[:]", f="int[:]",
               room=Py_ssize_t, pos=Py_ssize_t, n=Py_ssize_t, start=Py_ssize_t, k=Py_ssize_t,
               j=Py_ssize_t, addr="unsigned long long", step="unsigned long long",
               operation="unsigned long long", const_step="unsigned long long",
               file="long long", line="long long", column="long long", length="long long",
               addr_step="const long long[:]", line_step="const long long[:]", row=bint,
               op=int, v=int, sub=int, delta="long long")
cpdef Py_ssize_t _decode_rows(object sec, bint little, Py_ssize_t end, int version,
                              unsigned long long min_inst, int line_range, int opcode_base,
                              object line_base, bytes std_lengths, object addrs, object flat,
                              list state) except -2

@cython.locals(a="unsigned long long[:]", f="int[:]", i=Py_ssize_t, j=Py_ssize_t,
               o=Py_ssize_t, last=Py_ssize_t, hi=Py_ssize_t, lo=Py_ssize_t, k=Py_ssize_t,
               ordered=bint,
               starts=list, runs=list, members=list)
cpdef tuple _sort_rows(object addrs, object flat, Py_ssize_t n)

@cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, runs=Py_ssize_t, k=Py_ssize_t, end=Py_ssize_t)
cpdef void _merge_runs(object addrs, object flat, object bounds) except *

@cython.locals(a="unsigned long long[:]", f="int[:]", da="unsigned long long[:]", df="int[:]",
               i=Py_ssize_t, j=Py_ssize_t, o=Py_ssize_t, k=Py_ssize_t)
cpdef void _merge(object src_a, object src_f, object dst_a, object dst_f, Py_ssize_t lo,
                  Py_ssize_t mid, Py_ssize_t hi) except *

cdef bint _before(unsigned long long addr_j, int file_j, unsigned long long addr_i,
                  int file_i)
