"""PGO training run for packaging/build-python.sh.

Run by the instrumented interpreter inside CPython's build tree (its PROFILE_TASK):
    python pgo_train.py ROOT [DIR ...]
ROOT is the project checkout (its compiled core built in place for this Python version), each
DIR a directory of the parser's dependencies (the project venv's site-packages). The parser
reads the recordings in TRAINING_DIRS (frame pointers and DWARF stacks, of a C and a C++
program) in one process, in every output flavour, so the profile sees the interpreter paths
the executable runs, the ones its compiled core calls into among them: record decoding,
unwinding, ELF/DWARF reading, demangling and stream encoding. None of them is a tools/bench
workload.
"""

import os
import sys


# each directory's recordings are of the programs beside them
TRAINING_DIRS = (
    "examples",  # the README's C demo
    "packaging/pgo",  # a C++ program: templates, inlined libstdc++ code, mangled names
)


def recordings(root):
    """(recording, its --app directory) for every *.perf.data of TRAINING_DIRS."""
    for rel in TRAINING_DIRS:
        app = os.path.join(root, rel)
        for name in sorted(os.listdir(app)):
            if name.endswith(".perf.data"):
                yield os.path.join(app, name), app


def main(argv):
    root, deps = argv[1], argv[2:]
    sys.path[:0] = [root, *deps]
    # everything in this process: the profile is written at exit, forked workers would lose theirs
    os.environ["PERFPARSER_PY_SPLIT"] = "0"
    from perfparser_py import cli

    failures = 0
    for path, app in recordings(root):
        for protocol in ("current", "1.5", "1.4", "1.3"):
            args = ["--input", path, "--output", os.devnull, "--no-cache", "--protocol", protocol,
                    "--app", app]
            status = cli.main(args)
            print(f"pgo training: {os.path.basename(path)} --protocol {protocol}: exit {status}")
            failures += status != 0
    # the Makefile ignores the task's status; build-python.sh checks this line in the log
    print("pgo training: done" if not failures else f"pgo training: {failures} runs failed")


if __name__ == "__main__":
    main(sys.argv)
