"""PGO training run for packaging/build-python.sh.

Run by the instrumented interpreter inside CPython's build tree (its PROFILE_TASK):
    python pgo_train.py ROOT [DIR ...]
ROOT is the project checkout, each DIR a directory holding the pure-Python dependencies
(construct, pyelftools). The parser reads the sample recordings shipped in examples/ (frame
pointers, and DWARF stacks) in one process, in two output flavours, so the profile sees the
interpreter paths the executable runs: record decoding, unwinding, ELF/DWARF reading and
stream encoding. Uncompressed recordings and --no-cache keep the C extensions (zstandard, lz4)
out of it, which the build tree's interpreter could not load for another Python version.
"""

import os
import sys


def main(argv):
    root, deps = argv[1], argv[2:]
    sys.path[:0] = [root, *deps]
    # everything in this process: the profile is written at exit, forked workers would lose theirs
    os.environ["PERFPARSER_PY_SPLIT"] = "0"
    from perfparser_py import cli

    examples = os.path.join(root, "examples")
    recordings = sorted(
        os.path.join(examples, name) for name in os.listdir(examples) if name.endswith(".perf.data")
    )
    failures = 0
    for path in recordings:
        for protocol in ("current", "1.3"):
            args = ["--input", path, "--output", os.devnull, "--no-cache", "--protocol", protocol,
                    "--app", examples]
            status = cli.main(args)
            print(f"pgo training: {os.path.basename(path)} --protocol {protocol}: exit {status}")
            failures += status != 0
    # the Makefile ignores the task's status; build-python.sh checks this line in the log
    print("pgo training: done" if not failures else f"pgo training: {failures} runs failed")


if __name__ == "__main__":
    main(sys.argv)
