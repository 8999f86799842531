#!/bin/sh
# Builds the self-contained perfparser executable with PyInstaller.
#   packaging/build.sh            -> build/dist/perfparser/{perfparser,hotspot-perfparser,_internal/}
#   PERFPARSER_ONEFILE=1 ...      -> build/dist/perfparser (one file; slower start, see README.md)
# The interpreter frozen into it is the project's .venv's (tools/run-tests and
# tools/quickstart make it from the distribution's python3: tools/venv-python), with the
# compiled core built in place; the distribution's libpython carries its security fixes.
# PYTHON selects another interpreter (pyinstaller is installed into it when missing).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$root/build
py=${PYTHON:-$root/.venv/bin/python}
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
