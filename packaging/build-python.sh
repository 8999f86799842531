#!/bin/sh
# Builds the interpreter the frozen executable bundles: the distribution's own CPython source
# (Debian's python3.X with its patches, security fixes included, from `apt-get source`), as a
# shared libpython (PyInstaller loads it as one) with the PGO and LTO that distributions give
# only to their static /usr/bin/python3. Debian's shared libpython3.11.so has neither: the
# executable frozen with it ran 11-29 % slower than the installed package on the bench's
# recordings (packaging/README.md).
#
#   packaging/build-python.sh   -> prints build/python-venv/bin/python: a venv of
#                                  build/python/bin/python3 with the project and PyInstaller
#
# The profile is trained on the parser itself (packaging/pgo_train.py: the recordings of
# examples/ and packaging/pgo/) rather than CPython's test suite: the interpreter paths it
# exercises are the ones the executable runs, and it takes seconds instead of ten minutes.
# About 15 minutes on 2 cores; reruns reuse the build until this script, the training or the
# installed python's version change. Needs apt-get and dpkg-source (dpkg-dev); the deb-src
# entries are made from the system's deb ones in a private apt state under build/, the
# system's apt configuration untouched.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
prefix=$root/build/python
venv=$root/build/python-venv
work=$root/build/cpython
jobs=$(nproc 2>/dev/null || echo 2)

# the project's venv: its Python's version names the source package; the training imports the
# parser's dependencies from its site-packages
py=$root/.venv/bin/python
if [ ! -x "$py" ]; then
    echo "build-python.sh: no $py (tools/run-tests or tools/quickstart makes it)" >&2
    exit 1
fi
minor=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
package=python$minor
installed=$(dpkg-query -W -f '${Version}' "lib$package" 2>/dev/null || true)
deps=$("$py" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
recipe=$( (cat "$here/build-python.sh" "$here/pgo_train.py" "$root"/examples/*.perf.data \
    "$here"/pgo/*.perf.data "$here"/pgo/train; echo "$package $installed") | sha256sum | cut -d' ' -f1)

fetch_source() {
    # apt-get source with deb-src twins of the system's deb entries, in build/cpython/apt
    apt=$work/apt
    rm -rf "$apt"
    mkdir -p "$apt/lists/partial" "$apt/parts" "$apt/cache/archives/partial"
    for list in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$list" ] && sed -n 's/^deb \(.*\)$/deb-src \1/p' "$list"
    done >"$apt/sources.list"
    for parts in /etc/apt/sources.list.d/*.sources; do
        [ -f "$parts" ] && sed 's/^Types:.*$/Types: deb-src/' "$parts" >"$apt/parts/$(basename "$parts")"
    done
    set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts="$apt/parts" \
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1
    apt-get -q "$@" update >"$work/apt.log" 2>&1 ||
        { tail -5 "$work/apt.log" >&2; echo "build-python.sh: apt-get update failed" >&2; return 1; }
    # the installed version's source, else the newest the archives hold (a mirror may lack
    # the security archive's pool): said when it is not the installed one. $version stays
    # the one unpacked.
    versions=$(apt-cache -q "$@" showsrc "$package" 2>/dev/null | sed -n 's/^Version: //p' |
        sort -u -r -V)
    for version in $installed $versions; do
        (cd "$work" && apt-get -q "$@" source --download-only "$package=$version") \
            >>"$work/apt.log" 2>&1 || continue
        [ "$version" = "$installed" ] ||
            echo "build-python.sh: no source of $package $installed; building $version" >&2
        dpkg-source -q -x "$work/${package}_$(echo "$version" | sed 's/^[0-9]*://').dsc" \
            "$work/src" >>"$work/apt.log" 2>&1 ||
            { tail -5 "$work/apt.log" >&2; return 1; }
        return 0
    done
    echo "build-python.sh: no source of $package found by apt-get (log: $work/apt.log)" >&2
    return 1
}

if [ "$(cat "$prefix/.complete" 2>/dev/null)" != "$recipe" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    echo "fetching the source of $package $installed with apt-get" >&2
    fetch_source  # before the old build goes: without the source, build.sh falls back
    rm -rf "$prefix"
    cd "$work/src"
    # pyexpat and _elementtree built into libpython, as the distribution builds them: its
    # patched pyexpat.c includes a core header, which setup.py's shared build cannot compile
    sed -n 's/^#\(pyexpat\|_elementtree\) /\1 /p' Modules/Setup >>Modules/Setup.local
    # Configured as the distribution configures it: the system's expat (its patches build no
    # other) and no ensurepip (its patched one refuses to run). $ORIGIN rpath: the installed
    # python3 finds its own libpython without LD_LIBRARY_PATH; PyInstaller copies the library
    # into the bundle either way.
    ./configure --quiet --prefix="$prefix" --enable-shared --enable-optimizations --with-lto \
        --with-system-expat --without-ensurepip LDFLAGS="-Wl,-rpath,'\$\$ORIGIN/../lib'" >"$work/configure.log"
    # For GCC, configure links LTO as one partition (-flto-partition=none), on one core: the
    # two links of libpython then take most of the build. Partitioned links on every core run
    # the parser as fast.
    sed -i 's/-flto -fuse-linker-plugin -ffat-lto-objects -flto-partition=none/-flto=auto -fuse-linker-plugin -ffat-lto-objects/' Makefile
    grep -q -- '-flto=auto' Makefile || { echo "build-python.sh: LTO flags not found in CPython's Makefile" >&2; exit 1; }
    echo "building $package $version with PGO+LTO (about 12 minutes on 2 cores, 15 with the venv; log: $work/make.log)" >&2
    # -fprofile-partial-training: code the short training run never reaches is optimized as
    # without a profile, instead of for size as GCC does by default
    make -j"$jobs" PROFILE_TASK="$here/pgo_train.py $root $deps" \
        PGO_PROF_USE_FLAG="-fprofile-use -fprofile-correction -fprofile-partial-training" \
        >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
    grep -q "^pgo training: done" "$work/make.log" ||
        { grep "^pgo training" "$work/make.log" >&2; echo "PGO training failed" >&2; exit 1; }
    make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; exit 1; }
    # what the parser, pip and PyInstaller load of the modules setup.py may skip or fail
    "$prefix/bin/python3" -c 'import bz2, ctypes, lzma, pyexpat, ssl, zlib, _elementtree' ||
        { grep -i "failed to build\|_failed" "$work/make.log" >&2; exit 1; }
    cd "$root"
    rm -rf "$work"  # ~0.5 GB of objects and sources
    echo "$recipe" >"$prefix/.complete"
fi

# The venv PyInstaller runs in: the project installed editable (the spec freezes the checkout's
# code and its compiled core), remade with the interpreter and when pyproject.toml changes.
stamp=$(cat "$prefix/.complete" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.pyproject" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$venv"
    # no pip of its own (no ensurepip): the project venv's pip installs into it
    "$prefix/bin/python3" -m venv --without-pip "$venv"
    "$py" -m pip --python "$venv/bin/python" install --quiet --disable-pip-version-check \
        -e "$root[package,fast,rust]" --config-settings editable_mode=compat >&2
    echo "$stamp" >"$venv/.pyproject"
fi
echo "$venv/bin/python"
