#!/bin/sh
# Builds the self-contained perfparser executable with PyInstaller.
#   packaging/build.sh            -> build/dist/perfparser/{perfparser,hotspot-perfparser,_internal/}
#   PERFPARSER_ONEFILE=1 ...      -> build/dist/perfparser (one file; slower start, see README.md)
# The interpreter frozen into it is, by default, build-python.sh's: the distribution's own
# CPython source, security fixes included, built with PGO+LTO (about 15 minutes once, reused
# from build/). The distribution's shared libpython has neither, and the executable frozen
# with it runs 11-29 % slower (README.md). PYTHON selects another interpreter instead
# (pyinstaller is installed into it when missing), e.g. PYTHON=.venv/bin/python for a quick
# build (the tests' and CI's).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$root/build
if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
elif ! py=$(sh "$here/build-python.sh"); then
    py=$root/.venv/bin/python
    echo "build.sh: no optimized interpreter (see above); freezing $py's, which runs 11-29 % slower" >&2
fi
if [ ! -x "$py" ]; then
    echo "build.sh: no $py (tools/run-tests or tools/quickstart makes it; or set PYTHON)" >&2
    exit 1
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
