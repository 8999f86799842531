"""Symbol demangling (SEMANTICS §12): C++ as libstdc++ prints it, Rust without hash."""

from __future__ import annotations

from functools import lru_cache

import cxxfilt


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """Demangled form of `name`, or `name` unchanged if it is not a known mangling."""
    if len(name) < 3:
        return name
    if name.startswith("_Z"):
        try:
            return cxxfilt.demangle(name, external_only=False)
        except cxxfilt.InvalidName:
            return name
    return name
