"""Build of perfparser-py: compiles the hot modules with Cython (DESIGN.md decision 11).

The modules (pyproject.toml's [tool.perfparser-py] compiled) stay plain .py files in Cython's
pure-Python mode, their C types in .pxd files beside them, so a machine where a module does
not compile still gets a working install: that module is left out with one warning and its
.py runs instead. `perfparser --version` says which core runs; PERFPARSER_PY_PURE=1 picks the
.py files anyway, and given to the build it compiles nothing: a pure py3-none-any wheel.
"""

import glob
import os
import sys
import tomllib

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

# annotation_typing off: the .py annotations are documentation (`regs: tuple[int, ...]`,
# `data: bytes` given a memoryview), and must not become type checks the interpreted code
# does not make; the C types are declared in the .pxd files only. Bounds checks stay on:
# malformed input must raise IndexError as it does interpreted.
DIRECTIVES = {"language_level": 3, "annotation_typing": False}

_BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)


def _skipped(name: str, err: object, stem: str | None = None) -> None:
    print(f"perfparser-py: not compiling {name} ({err}); it runs interpreted", file=sys.stderr)
    if stem is not None:
        # an extension built in place earlier would shadow the .py with old code
        for old in glob.glob(f"{stem}.*.so"):
            os.remove(old)


class OptionalBuildExt(build_ext):
    """build_ext that leaves out an extension it cannot build (no C compiler, no Python
    headers) instead of failing the install."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # many modules, some large: use the cores a build has
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as err:
            _skipped("the core", err)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as err:
            _skipped(ext.name, err, ext.name.replace(".", "/") if self.inplace else None)


def _extensions() -> list:
    if os.environ.get("PERFPARSER_PY_PURE") == "1":  # the pure wheel, for any machine
        return []
    with open("pyproject.toml", "rb") as f:
        modules = tomllib.load(f)["tool"]["perfparser-py"]["compiled"]
    try:
        from Cython.Build import cythonize
        from Cython.Compiler.Errors import CompileError as CythonError
    except ImportError as err:  # a build without its build requirements
        _skipped("the core", err)
        return []
    found = []
    for module in modules:  # one at a time: a module Cython rejects stays interpreted alone
        try:
            found += cythonize([module], compiler_directives=DIRECTIVES, quiet=True)
        except CythonError as err:
            _skipped(module, err, module.removesuffix(".py"))
    return found


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
