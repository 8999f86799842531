#!/bin/sh
# Builds the interpreter the frozen executable bundles: CPython with --enable-shared (PyInstaller
# loads libpython as a shared library) and the PGO + LTO that distributions give only to their
# static /usr/bin/python3. Debian's shared libpython3.11.so has neither and runs the parser
# 15-20 % slower than /usr/bin/python3.11 (docs/performance.md, round 6).
#
#   packaging/build-python.sh   -> build/python/bin/python3 (a venv for PyInstaller beside it,
#                                  build/python-venv, with the project and PyInstaller installed)
#
# The profile is trained on the parser itself (packaging/pgo_train.py: the recordings of
# examples/ and of packaging/pgo/, a C++ program) rather than CPython's test suite: the
# interpreter paths it exercises are the ones the executable runs, and it takes seconds instead
# of ten minutes on two cores. The whole build takes about 8 minutes on
# 2 cores; reruns reuse it until this script, the training or its recordings change.
#
# Source: the CPython release tarball, pinned by checksum. PERFPARSER_CPYTHON_TARBALL names a
# local copy; otherwise it is downloaded from Debian's archive (byte-identical to the upstream
# release Debian packages, and reachable where python.org may not be).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
version=3.11.2
sha256=2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849
url=http://deb.debian.org/debian/pool/main/p/python3.11/python3.11_${version}.orig.tar.gz
prefix=$root/build/python
venv=$root/build/python-venv
work=$root/build/cpython
jobs=$(nproc 2>/dev/null || echo 2)
recipe=$(cat "$here/build-python.sh" "$here/pgo_train.py" "$root"/examples/*.perf.data \
    "$here"/pgo/*.perf.data "$here"/pgo/train | sha256sum | cut -d' ' -f1)

if [ "$(cat "$prefix/.complete" 2>/dev/null)" != "$recipe" ]; then
    # the training run imports the parser's pure-Python dependencies from the project's venv
    py=$root/.venv/bin/python
    if [ ! -x "$py" ]; then
        echo "build-python.sh: no $py (tools/run-tests or tools/quickstart makes it)" >&2
        exit 1
    fi
    deps=$("$py" -c 'import construct, elftools, os
print(" ".join(sorted({os.path.dirname(os.path.dirname(m.__file__)) for m in (construct, elftools)})))')
    mkdir -p "$work"
    tarball=${PERFPARSER_CPYTHON_TARBALL:-$work/Python-$version.tar.gz}
    if [ ! -f "$tarball" ]; then
        echo "downloading CPython $version source" >&2
        curl -fsSL --retry 3 -o "$tarball.part" "$url"
        mv "$tarball.part" "$tarball"
    fi
    echo "$sha256  $tarball" | sha256sum -c --quiet -
    rm -rf "$work/src" "$prefix"
    mkdir -p "$work/src"
    tar -xzf "$tarball" -C "$work/src" --strip-components=1
    cd "$work/src"
    # $ORIGIN rpath: the installed python3 finds its own libpython, so nothing needs
    # LD_LIBRARY_PATH; PyInstaller copies the library into the bundle either way.
    ./configure --quiet --prefix="$prefix" --enable-shared --enable-optimizations --with-lto \
        LDFLAGS="-Wl,-rpath,'\$\$ORIGIN/../lib'" >"$work/configure.log"
    # For GCC, configure links LTO as one partition (-flto-partition=none), on one core: the
    # two links of libpython then take most of the build. Partitioned links on every core run
    # the parser as fast (dwarf-50k 0.83 s against 0.84 s for Debian's /usr/bin/python3.11;
    # PGO without LTO: 0.90 s).
    sed -i 's/-flto -fuse-linker-plugin -ffat-lto-objects -flto-partition=none/-flto=auto -fuse-linker-plugin -ffat-lto-objects/' Makefile
    grep -q -- '-flto=auto' Makefile || { echo "build-python.sh: LTO flags not found in CPython's Makefile" >&2; exit 1; }
    echo "building CPython $version with PGO+LTO (about 8 minutes on 2 cores; log: $work/make.log)" >&2
    # -fprofile-partial-training: code the short training run never reaches is optimized as
    # without a profile, instead of for size as GCC does by default
    make -j"$jobs" PROFILE_TASK="$here/pgo_train.py $root $deps" \
        PGO_PROF_USE_FLAG="-fprofile-use -fprofile-correction -fprofile-partial-training" \
        >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
    grep -q "^pgo training: done" "$work/make.log" ||
        { grep "^pgo training" "$work/make.log" >&2; echo "PGO training failed" >&2; exit 1; }
    make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; exit 1; }
    cd "$root"
    rm -rf "$work/src"  # ~0.5 GB of objects; the tarball stays for a rebuild
    echo "$recipe" >"$prefix/.complete"
fi

# The venv PyInstaller runs in: the project installed editable (the spec freezes the checkout's
# code), remade with the interpreter and when pyproject.toml (the dependencies) changes.
stamp=$(cat "$prefix/.complete" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.pyproject" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$venv"
    "$prefix/bin/python3" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -e "$root[package]" \
        --config-settings editable_mode=compat >&2
    echo "$stamp" >"$venv/.pyproject"
fi
echo "$venv/bin/python"
