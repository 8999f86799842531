"""perfparser-py: perf.data to hotspot QPERFSTREAM converter.

Its hot modules are compiled (setup.py) where the build could compile them: PERFPARSER_PY_PURE=1
imports their .py sources instead, from this package's directories only (CI runs the suite
both ways; the two must give byte-identical streams)."""

import os as _os

__version__ = "0.2.0"

if _os.environ.get("PERFPARSER_PY_PURE") == "1":
    import sys as _sys
    from importlib.machinery import (
        BYTECODE_SUFFIXES,
        SOURCE_SUFFIXES,
        SourceFileLoader,
        SourcelessFileLoader,
    )
    from importlib.machinery import FileFinder as _FileFinder

    # the import system asks the finder cached per directory: one without extension modules
    _here = __path__[0]
    # every directory with compiled modules
    _subs = (("elf",), ("elf", "dwarf"), ("kernel",), ("perfdata",), ("protocol",), ("unwind",))
    for _dir in (_here, *(_os.path.join(_here, *sub) for sub in _subs)):
        _sys.path_importer_cache[_dir] = _FileFinder(
            _dir, (SourceFileLoader, SOURCE_SUFFIXES), (SourcelessFileLoader, BYTECODE_SUFFIXES))


def compiled_core() -> bool:
    """Whether the unwinder, the hottest of the compiled modules, runs compiled: the file
    its import would load, found without importing it (the import was 9 M of the 48 M
    instructions of --version)."""
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import find_spec

    return (find_spec(".unwind.dwarf", __name__).origin or "").endswith(tuple(EXTENSION_SUFFIXES))
