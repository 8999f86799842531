#!/bin/sh
# Rebuilds the training program and records it (as root, or with perf_event_paranoid <= 1):
# what packaging/pgo_train.py replays for the PGO build of the bundled interpreter.
set -eu
cd "$(dirname "$0")"
g++ -O2 -g -gz -fno-omit-frame-pointer -o train train.cpp
perf record -q -N -F 2000 -g -o train-fp.perf.data -- ./train 7000 >/dev/null
perf record -q -N -F 1000 --call-graph dwarf,4096 -o train-dwarf.perf.data -- ./train 3500 >/dev/null
rm -f ./*.perf.data.old
