"""Symbol demangling (SEMANTICS §12).

C++ (`_Z…`) goes through libstdc++'s `__cxa_demangle` (called with ctypes), so the text is
exactly what upstream prints. Rust legacy (`_ZN…17h<16 hex>E`) and v0 (`_R…`) symbols go
through the rustc-demangle crate (via pyderust) in its alternate form, i.e. without the
`::h…` hash and crate disambiguators — what upstream prints when its rustc-demangle plug-in
is installed. Anything else (including D symbols) is returned unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import pyderust

# A legacy Rust symbol ends with a 17-character `h<16 hex>` path element (optionally followed
# by a `.llvm.…`-style suffix); C++ names never do, so only these go to the Rust demangler.
_RUST_LEGACY = re.compile(r"_ZN.*17h[0-9a-f]{16}E(\..*)?")

_cxx: Callable[[bytes], bytes | None] | None = None


def _load_cxx() -> Callable[[bytes], bytes | None]:
    """__cxa_demangle by its soname: cxxfilt's find_library spawns ldconfig (~20 ms a run)."""
    import ctypes

    try:
        libcxx = ctypes.CDLL("libstdc++.so.6")
    except OSError:
        import ctypes.util

        name = ctypes.util.find_library("stdc++") or ctypes.util.find_library("c++")
        try:
            libcxx = ctypes.CDLL(name)
        except (OSError, TypeError):
            return lambda _mangled: None
    cxa_demangle = libcxx.__cxa_demangle
    cxa_demangle.restype = ctypes.c_void_p
    cxa_demangle.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_int))
    free = ctypes.CDLL(None).free
    free.argtypes = (ctypes.c_void_p,)
    string_at = ctypes.string_at

    def cxx(mangled: bytes) -> bytes | None:
        status = ctypes.c_int()
        out = cxa_demangle(mangled, None, None, ctypes.byref(status))
        if not out:
            return None
        try:
            return string_at(out) if status.value == 0 else None
        finally:
            free(out)

    return cxx


def _cxx_text(mangled: str) -> str | None:
    global _cxx
    if _cxx is None:
        _cxx = _load_cxx()
    try:
        out = _cxx(mangled.encode())
        return None if out is None else out.decode()
    except UnicodeError:  # not UTF-8 (hostile .strtab)
        return None


@lru_cache(maxsize=1 << 16)
def demangle(name: str) -> str:
    """Demangled form of `name`, or `name` unchanged if it is not a known mangling."""
    if len(name) < 3:
        return name
    if name.startswith("_R") or _RUST_LEGACY.fullmatch(name):
        try:
            return pyderust.demangle(name)
        except ValueError:
            pass
    if name.startswith("_Z"):
        out = _cxx_text(name)
        return name if out is None else out
    return name


@lru_cache(maxsize=1 << 12)
def demangle_scope(name: str) -> str:
    """A C++ function's name as c++filt prints it when it encloses a local entity (a lambda,
    a local class): `f<int>(int)` where demangle() gives `int f<int>(int)`. The Itanium
    grammar prints no return type for the function of a local name (`Z <encoding> E`), so
    the name is demangled as that of a local entity `x` inside it."""
    if name.startswith("_Z"):
        out = _cxx_text("_ZZ" + name[2:] + "E1x")
        if out is not None and out.endswith("::x"):
            return out[:-3]
    return demangle(name)


@lru_cache(maxsize=1 << 12)
def demangle_type(name: str) -> str:
    """A mangled type (DW_AT_linkage_name of a type, e.g. `5div_t`) as c++filt prints it."""
    out = _cxx_text(name) if name and not name.startswith("_Z") else None
    return name if out is None else out
