"""Importing a library without the modules it imports up front for features the parser never
uses: each such module is stood in for by a placeholder that imports the real one on first use.

The runs that meet a rare record or odd header bytes import construct (perfdata/declare.py).
construct imports pdb (with bdb, cmd, code, glob, pprint), traceback (with textwrap), pickle
and inspect (with ast, dis, tokenize) for its Debugger and Pickled field, and hashlib (which
loads OpenSSL's libcrypto, ~3 ms) for Checksum and compile(). Together ~13 ms of a start, ~7 %
of a 10k-sample file. perfdata/declare.py, the one module that imports construct, imports it
through `import_construct`.
"""

from __future__ import annotations

import sys
import types


class _OnFirstUse(types.ModuleType):
    """Placeholder for a module: the first attribute read imports the real one."""

    def __getattr__(self, attr):
        name = self.__name__
        if sys.modules.get(name) is self:  # read while the library is still being imported
            del sys.modules[name]
        return getattr(__import__(name), attr)


def import_without(module: str, unused: tuple[str, ...]) -> None:
    """Import `module` (if not yet imported) with placeholders for the `unused` modules that
    are not imported yet; afterwards an `import` of those gets the real module."""
    if module in sys.modules:
        return
    placeholders = [name for name in unused if name not in sys.modules]
    for name in placeholders:
        sys.modules[name] = _OnFirstUse(name)
    try:
        __import__(module)
    finally:
        for name in placeholders:
            if isinstance(sys.modules.get(name), _OnFirstUse):
                del sys.modules[name]


# the modules construct imports up front that a run never uses
CONSTRUCT_UNUSED = ("pdb", "pickle", "traceback", "inspect", "hashlib")


def import_construct() -> None:
    """Import construct without its unused modules."""
    import_without("construct", CONSTRUCT_UNUSED)
