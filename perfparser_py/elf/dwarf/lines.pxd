# C types of lines.py when compiled (setup.py); the .py stays the source of truth. The line
# program is read through a typed memoryview with C positions and opcodes; addresses, lines,
# files and columns stay Python ints (hostile tables hold numbers beyond 64 bits) until they
# are packed into the table's arrays.

cimport cython

from perfparser_py.elf.leb128 cimport sleb, uint_at, uleb, uleb_end


@cython.locals(data="const unsigned char[:]", rows=list, seq=Py_ssize_t, little=bint,
               addr_step=list, line_step=list, simple=bint, op=int, v=int, w=int, sub=int)
cpdef list _run(object dw, object cu, object sec, Py_ssize_t pos, Py_ssize_t end, int version,
                object min_inst, object max_ops, int line_range, int opcode_base,
                object line_base, bytes std_lengths)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, a="unsigned long long[:]", flat="int[:]",
               row=tuple)
cpdef tuple _pack_rows(list rows)


@cython.locals(data="const unsigned char[:]", little=bint, off4=bint, nfmt=int, fmts=list,
               out=list)
cpdef tuple _header_entries(object dw, object cu, object sec, Py_ssize_t pos)
