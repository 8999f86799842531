"""Build of perfparser-py: compiles the hot modules with Cython (DESIGN.md decision 11).

The modules stay plain .py files (pure-Python mode: their C types live in .pxd files beside
them), so a machine where the compile fails still gets a working, interpreted install: each
extension that does not build is left out with one warning, and the .py runs instead.
`perfparser --version` says which one runs; PERFPARSER_PY_PURE=1 picks the .py files anyway.
"""

import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

# the per-sample and per-DIE loops of the real-world profile (issue 19)
COMPILED = [
    "perfparser_py/unwind/dwarf.py",
    "perfparser_py/unwind/history.py",
    "perfparser_py/elf/cfi.py",
    "perfparser_py/elf/leb128.py",
    "perfparser_py/elf/dwarf.py",
    "perfparser_py/perfdata/fast.py",
    "perfparser_py/perfdata/reader.py",
    "perfparser_py/session.py",
    "perfparser_py/symbolize.py",
    "perfparser_py/pipeline.py",
    "perfparser_py/ordering.py",
    "perfparser_py/protocol.py",
    "perfparser_py/emit.py",
]

# annotation_typing off: the .py annotations are documentation (`regs: tuple[int, ...]`,
# `data: bytes` given a memoryview), and must not become type checks the interpreted code
# does not make; the C types are declared in the .pxd files only. Bounds checks stay on:
# malformed input must raise IndexError as it does interpreted.
DIRECTIVES = {"language_level": 3, "annotation_typing": False}

_BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)


class OptionalBuildExt(build_ext):
    """build_ext that leaves out an extension it cannot build (no C compiler, no Python
    headers) instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as err:
            self._skipped("all", err)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as err:
            self._skipped(ext.name, err)

    @staticmethod
    def _skipped(name: str, err: Exception) -> None:
        print(f"perfparser-py: not compiling {name} ({err}); it runs interpreted",
              file=sys.stderr)


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:  # a build without its build requirements: interpreted
        print("perfparser-py: Cython is missing; the core runs interpreted", file=sys.stderr)
        return []
    return cythonize(COMPILED, compiler_directives=DIRECTIVES, quiet=True)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
