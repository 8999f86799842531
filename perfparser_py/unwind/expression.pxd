# C types of expression.py when compiled (setup.py); the .py stays the source of truth. The
# evaluator keeps Python ints: an expression's values have no C bound.

cimport cython

from perfparser_py.unwind.memory cimport Memory


@cython.locals(mask=object)
cpdef object evaluate(Memory mem, object expr, dict regs, object push)
