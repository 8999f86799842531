"""Symbol demangling (SEMANTICS §12).

C++ (`_Z…`) goes through libstdc++'s `__cxa_demangle` (called with ctypes), so the text is
exactly what upstream prints. Where libstdc++ cannot be loaded (a minimal container, a frozen
build on a host without it), through the cpp_demangle library (demangle_fallback, an optional
dependency: `pip install perfparser-py[cxx]`), said once on stderr; without either, C++ names
stay mangled, said once too. Rust legacy (`_ZN…17h<16 hex>E`) and v0 (`_R…`) symbols go
through the rustc-demangle crate (via pyderust, an optional dependency: `pip install
perfparser-py[rust]`) in its alternate form, i.e. without the `::h…` hash and crate
disambiguators — what upstream prints when its rustc-demangle plug-in is installed. Without
pyderust, legacy names go through `__cxa_demangle` with the hash cut off (the same text for
the names that have no special characters) and v0 names stay mangled, said once on stderr.
Anything else (including D symbols) is returned unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache

# the pyderust module, imported on the first Rust name (C and C++ programs never pay for
# it); None where it is not installed (no wheel for this machine): the fallback below
_NOT_LOADED = object()
pyderust = _NOT_LOADED


def _load_pyderust() -> None:
    global pyderust
    try:
        import pyderust as module
    except ImportError:
        module = None
    pyderust = module

_HEX = frozenset("0123456789abcdef")


def _rust_hash_at(name: str, at: int) -> bool:
    """Whether name[at:] starts with `h` and 16 lowercase hex digits."""
    return (name[at:at + 1] == "h" and len(name) >= at + 17
            and _HEX.issuperset(name[at + 1:at + 17]))


def _is_rust_legacy(name: str) -> bool:
    """Whether `name` is a legacy Rust symbol: `_ZN…17h<16 hex>E`, the 17-character hash path
    element last (optionally followed by a `.llvm.…`-style suffix); C++ names never end so,
    so only these go to the Rust demangler. (Not a regular expression: importing re is ~4 ms
    of a run, most of which demangle no Rust.)"""
    if not name.startswith("_ZN"):
        return False
    at = name.find("17h", 3)
    while at >= 0:
        end = at + 19
        if (_rust_hash_at(name, at + 2) and name[end:end + 1] == "E"
                and name[end + 1:end + 2] in ("", ".")):
            return True
        at = name.find("17h", at + 1)
    return False


_cxx: Callable[[str], str | None] | None = None


def _load_fallback() -> Callable[[str], str | None]:
    """The C++ demangler where __cxa_demangle cannot be loaded: the cpp_demangle library
    (imported only here: a run with libstdc++ never pays for it), else none; said on
    stderr."""
    try:
        from .demangle_fallback import demangle as library
    except ImportError:
        print("perfparser: C++ names stay mangled: libstdc++ (__cxa_demangle) cannot be loaded "
              "and cpp-demangle is not installed (install libstdc++6, or pip install "
              "'perfparser-py[cxx]')", file=sys.stderr)
        return lambda _mangled: None
    print("perfparser: libstdc++ (__cxa_demangle) cannot be loaded: C++ names are demangled "
          "by cpp-demangle, which spells a few differently from c++filt", file=sys.stderr)
    return library


def approximate() -> bool:
    """Whether this run's C++ names are not __cxa_demangle's (the fallback's, or mangled):
    the persistent cache keeps no names of such a run, which a later run with libstdc++
    would otherwise reuse."""
    return _cxx is not None and not _exact


_exact = False  # _cxx is __cxa_demangle


def _load_cxa() -> Callable[[str], str | None] | None:
    """__cxa_demangle by its soname: cxxfilt's find_library spawns ldconfig (~20 ms a run)."""
    import ctypes

    try:
        libcxx = ctypes.CDLL("libstdc++.so.6")
    except OSError:
        import ctypes.util

        name = ctypes.util.find_library("stdc++") or ctypes.util.find_library("c++")
        if name is None:  # CDLL(None) would be this process, without __cxa_demangle
            return None
        try:
            libcxx = ctypes.CDLL(name)
        except OSError:
            return None
    try:
        cxa_demangle = libcxx.__cxa_demangle
    except AttributeError:  # a C++ runtime without the Itanium ABI's demangler
        return None
    cxa_demangle.restype = ctypes.c_void_p
    cxa_demangle.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_int))
    free = ctypes.CDLL(None).free
    free.argtypes = (ctypes.c_void_p,)
    string_at = ctypes.string_at

    def cxx(mangled: str) -> str | None:
        try:
            name = mangled.encode()
        except UnicodeError:  # not UTF-8 (hostile .strtab)
            return None
        status = ctypes.c_int()
        out = cxa_demangle(name, None, None, ctypes.byref(status))
        if not out:
            return None
        try:
            return string_at(out).decode() if status.value == 0 else None
        except UnicodeError:
            return None
        finally:
            free(out)

    return cxx


def _cxx_text(mangled: str) -> str | None:
    global _cxx, _exact
    if _cxx is None:
        cxa = _load_cxa()
        _exact = cxa is not None
        _cxx = cxa if _exact else _load_fallback()
    return _cxx(mangled)


@lru_cache(maxsize=1 << 16)
def demangle(name: str) -> str:
    """Demangled form of `name`, or `name` unchanged if it is not a known mangling."""
    if len(name) < 3:
        return name
    if name.startswith("_R") or _is_rust_legacy(name):
        if pyderust is _NOT_LOADED:
            _load_pyderust()
        if pyderust is None:
            return _rust_without_pyderust(name)
        try:
            return pyderust.demangle(name)
        except ValueError:
            pass
    if name.startswith("_Z"):
        out = _cxx_text(name)
        return name if out is None else out
    return name


_warned_rust = False


def _rust_without_pyderust(name: str) -> str:
    global _warned_rust
    if name.startswith("_ZN"):
        out = _cxx_text(name.split(".", 1)[0])
        if out is not None:
            # without the `::h<16 hex>` hash element that ends it
            return out[:-19] if out[-19:-17] == "::" and _rust_hash_at(out, len(out) - 17) else out
    elif not _warned_rust:
        _warned_rust = True
        print("perfparser: Rust v0 symbols stay mangled: pyderust is not installed "
              "(pip install 'perfparser-py[rust]')", file=sys.stderr)
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
