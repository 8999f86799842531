"""The perf.data grammar imports construct without the debugger modules it never uses."""

import subprocess
import sys

PROBE = """
import sys
import perfparser_py.perfdata
print(sorted(m for m in ("pdb", "bdb", "cmd", "code", "pprint") if m in sys.modules))
import construct.debug
print(construct.debug.pdb.post_mortem.__module__)
import pdb
print(pdb.__spec__ is not None)
"""


def test_construct_without_pdb_until_used():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          check=True)
    unused, debugger, real = done.stdout.splitlines()
    assert unused == "[]"
    # construct's Debugger still reaches the real pdb, and a later `import pdb` gets it too
    assert debugger == "pdb"
    assert real == "True"
