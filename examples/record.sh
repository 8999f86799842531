#!/bin/sh
# Rebuilds the quick start's demo and records it (as root, or with perf_event_paranoid <= 1).
# -O0: frame pointers in every function, spin() included, and no tail calls, so both call paths to spin() stay in the stacks that
# `perf record -g` samples; -N keeps perf's build-id cache out of it.
set -eu
cd "$(dirname "$0")"
gcc -O0 -g -fno-omit-frame-pointer -o demo demo.c
perf record -q -N -F 999 -g -o demo.perf.data -- ./demo 1600
perf record -q -N -F 999 --call-graph dwarf,4096 -o demo-dwarf.perf.data -- ./demo 400
rm -f ./*.perf.data.old
