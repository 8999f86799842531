"""Symbol demangling (SEMANTICS §12).

C++ (`_Z…`) goes through libstdc++'s `__cxa_demangle` (via cxxfilt), so the text is exactly
what upstream prints. Rust legacy (`_ZN…17h<16 hex>E`) and v0 (`_R…`) symbols go through the
rustc-demangle crate (via pyderust) in its alternate form, i.e. without the `::h…` hash and
crate disambiguators — what upstream prints when its rustc-demangle plug-in is installed.
Anything else (including D symbols) is returned unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache

import cxxfilt
import pyderust

# A legacy Rust symbol ends with a 17-character `h<16 hex>` path element (optionally followed
# by a `.llvm.…`-style suffix); C++ names never do, so only these go to the Rust demangler.
_RUST_LEGACY = re.compile(r"_ZN.*17h[0-9a-f]{16}E(\..*)?")


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
        try:
            return cxxfilt.demangle(name, external_only=False)
        except (cxxfilt.InvalidName, UnicodeEncodeError):  # not UTF-8 (hostile .strtab)
            return name
    return name
