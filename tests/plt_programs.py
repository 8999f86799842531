"""Programs whose PLTs no CFI describes, built here for the tests that name their entries and
unwind through them: lld's retpoline PLTs (`-z retpolineplt`) and mold's. And the ground
truth of both: the GOT slot each retpoline entry loads, as GNU objdump decodes its load, and
the stack depth at each PLT instruction the program really executes, single-stepped by gdb."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

from elftools.elf.elffile import ELFFile

# calls each function three times: the first call of a lazy PLT's entry runs its header on
# the way to the resolver, the others go through the entry to the function
PROGRAM = r"""
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = 0;
    for (int i = 0; i < 3; i++)
        n += strlen(argv[0]) + abs(argc - i);
    return n == 12345;
}
"""

# lld's retpoline PLTs: x86-64 lazy (48-byte header, 32-byte entries) and -z now (32, 16);
# i386 position-independent and not (lld has one i386 layout for both bindings); a static
# executable (`.iplt` entries of IFUNCs, strlen's, calling the thunk `.plt` holds alone)
RETPOLINE = {"x86-64": [], "x86-64-now": ["-Wl,-z,now"], "i386": ["-m32"],
             "i386-no-pic": ["-m32", "-fno-pic", "-no-pie"], "x86-64-static": ["-static"]}
# mold's: a header that pushes the index register its entries set, x86-64 and i386
MOLD = {"mold-x86-64": [], "mold-i386": ["-m32"], "mold-i386-no-pic": ["-m32", "-fno-pic", "-no-pie"]}

# the load of an entry's slot, as objdump prints it: x86-64 `mov slot(%rip),%r11  # slot`,
# i386 `mov off(%ebx),%eax` (off from the GOT) or `mov slot,%eax`, after `push %eax`
_LOAD = re.compile(r"^ *([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*mov\s+"
                   r"(?:0x[0-9a-f]+\(%rip\),%r11\s+# ([0-9a-f]+)|(0x[0-9a-f]+)(\(%ebx\))?,%eax)",
                   re.M)

_STEPPER = r"""
import json, os
import gdb
lo, hi = int(os.environ["PLT_LO"]), int(os.environ["PLT_HI"])
gdb.execute("starti", to_string=True)
pid = gdb.selected_inferior().pid
exe = os.path.realpath(os.environ["PLT_EXE"])
base = 0 if os.environ["PLT_FIXED"] == "1" else next(  # a PIE's load address
    int(p[0].split("-")[0], 16) - int(p[2], 16)
    for p in map(str.split, open(f"/proc/{pid}/maps")) if p[5:6] == [exe])
word = gdb.lookup_type("long").sizeof
sp = "$rsp" if word == 8 else "$esp"
for entry in json.loads(os.environ["PLT_ENTRIES"]):
    gdb.Breakpoint(f"*{base + entry:#x}", internal=True)
seen = []
while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:  # the program has exited
        break
    if not gdb.selected_inferior().pid:
        break
    caller = int(gdb.parse_and_eval(sp)) + word  # the call pushed the return address
    while lo <= int(gdb.parse_and_eval("$pc")) - base < hi:
        seen.append((int(gdb.parse_and_eval("$pc")) - base,
                     (caller - int(gdb.parse_and_eval(sp))) // word))
        gdb.execute("stepi", to_string=True)
print("STEPS" + json.dumps(seen))
"""


def build(tmp: Path, name: str) -> Path:
    """PROGRAM linked with the PLT of build `name`: a RETPOLINE one by lld, a MOLD one by
    mold."""
    (tmp / "p.c").write_text(PROGRAM)
    exe = tmp / name
    flags = (["gcc", "-fuse-ld=mold", *MOLD[name]] if name in MOLD else
             ["clang", "-fuse-ld=lld", "-Wl,-z,retpolineplt", *RETPOLINE[name]])
    subprocess.run([*flags, "-O1", "-fno-builtin", "-o", str(exe), "p.c"], cwd=tmp, check=True)
    return exe


def sections(exe: Path) -> dict[str, tuple[int, int]]:
    """Section name -> (address, size)."""
    with open(exe, "rb") as f:
        return {sec.name: (sec["sh_addr"], sec["sh_size"]) for sec in ELFFile(f).iter_sections()}


def plt_span(exe: Path) -> tuple[int, int]:
    """The addresses of `.plt` and, after it, `.iplt`: (start, end)."""
    found = sections(exe)
    spans = [found[name] for name in (".plt", ".iplt") if name in found]
    return spans[0][0], max(addr + size for addr, size in spans)


def entry_slots(exe: Path) -> dict[int, int]:
    """Start of each PLT entry (`.plt`, `.iplt`) -> the GOT slot it loads, the header's
    loads left out (they read the resolver's reserved slots, `.got.plt`'s first three)."""
    dump = subprocess.run(["objdump", "-d", "-j", ".plt", "-j", ".iplt", str(exe)],
                          capture_output=True, text=True, check=True).stdout
    got = sections(exe)[".got.plt"][0]  # DT_PLTGOT, %ebx in position-independent code
    with open(exe, "rb") as f:
        word = ELFFile(f).elfclass // 8
    out = {}
    for addr, rip_slot, operand, ebx in _LOAD.findall(dump):
        if rip_slot:
            start, slot = int(addr, 16), int(rip_slot, 16)
        else:  # i386: the entry's `push %eax` comes first
            start, slot = int(addr, 16) - 1, int(operand, 16) + (got if ebx else 0)
        if slot >= got + 3 * word:
            out[start] = slot
    return out


def entries(exe: Path) -> list[int]:
    """Where each PLT entry starts: a retpoline one by its load, mold's by its `name$plt`
    symbol."""
    slots = entry_slots(exe)
    if slots:
        return sorted(slots)
    with open(exe, "rb") as f:
        return sorted(sym["st_value"] for sym in ELFFile(f).get_section_by_name(".symtab")
                      .iter_symbols() if sym.name.endswith("$plt"))


def stepped_depths(exe: Path) -> dict[int, int]:
    """PLT address -> the words on the stack above the caller's stack pointer there, as the
    program runs (gdb stepping each instruction from every entry until it leaves the PLTs),
    at each address the depth seen most often: the lazy header's call reaches the entries'
    thunk deeper, once per function."""
    lo, hi = plt_span(exe)
    with open(exe, "rb") as f:
        fixed = ELFFile(f)["e_type"] == "ET_EXEC"  # else a PIE, at a load address
    env = {**os.environ, "PLT_EXE": str(exe), "PLT_LO": str(lo), "PLT_HI": str(hi),
           "PLT_FIXED": "1" if fixed else "0",
           "PLT_ENTRIES": json.dumps(entries(exe))}
    script = exe.parent / "stepper.py"
    script.write_text(_STEPPER)
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-x", str(script), "--args", str(exe)],
                         env=env, capture_output=True, text=True, check=True).stdout
    steps = json.loads(out[out.index("STEPS") + 5:].splitlines()[0])
    seen: dict[int, Counter] = {}
    for pc, depth in steps:
        seen.setdefault(pc, Counter())[depth] += 1
    return {pc: counts.most_common(1)[0][0] for pc, counts in seen.items()}
