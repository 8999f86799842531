#!/bin/sh
# Builds the self-contained perfparser executable with PyInstaller.
#   packaging/build.sh            -> build/dist/perfparser/{perfparser,hotspot-perfparser,_internal/}
#   PERFPARSER_ONEFILE=1 ...      -> build/dist/perfparser (one file; slower start, see README.md)
# The interpreter frozen into it is, by default, the PGO-built CPython of build-python.sh
# (built once into build/python, a few minutes): Debian's shared libpython would run the parser
# 15-20 % slower. PYTHON selects another interpreter instead (pyinstaller is installed into it
# when missing), e.g. PYTHON=.venv/bin/python for a quick build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$root/build
if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
elif ! py=$(sh "$here/build-python.sh"); then
    py=$root/.venv/bin/python
    echo "build.sh: no optimized interpreter (see above); freezing $py's, which runs 15-20 % slower" >&2
fi

"$py" -c "import PyInstaller" 2>/dev/null || "$py" -m pip install -q "pyinstaller>=6"
rm -rf "$out/dist/perfparser"
"$py" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$out/dist" --workpath "$out/pyinstaller" "$here/perfparser.spec"

if [ -d "$out/dist/perfparser" ]; then
    exe=$out/dist/perfparser/perfparser
    ln -sf perfparser "$out/dist/perfparser/hotspot-perfparser"
else
    exe=$out/dist/perfparser
    ln -sf perfparser "$out/dist/hotspot-perfparser"
fi
"$exe" --version
echo "built $exe ($(du -sh "$out/dist/perfparser" | cut -f1))"
