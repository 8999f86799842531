"""The perf.data grammar imports construct without the modules it pulls in for features the
parser never uses (its Debugger, its Pickled field)."""

import subprocess
import sys

PROBE = """
import sys
import perfparser_py.perfdata
print(sorted(m for m in ("pdb", "bdb", "cmd", "pprint", "pickle", "traceback") if m in sys.modules))
import construct
print(construct.Pickled.parse(__import__("pickle").dumps([1, 2])))
import construct.debug
print(construct.debug.pdb.post_mortem.__module__, construct.debug.traceback.format_exc.__module__)
import pdb, pickle, traceback
print(all(m.__spec__ is not None for m in (pdb, pickle, traceback)))
"""


def test_construct_without_unused_modules_until_used():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          check=True)
    unused, pickled, debugger, real = done.stdout.splitlines()
    assert unused == "[]"
    # what construct uses them for still works, and a later import gets the real modules
    assert pickled == "[1, 2]"
    assert debugger == "pdb traceback"
    assert real == "True"
