"""hotspot closing its end of the pipe early: the parser dies quietly of SIGPIPE like upstream
(a Qt program writing to a closed pipe), with no traceback and no hang."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess

import pytest

from tests.robustness.cli_run import FP, env, options, parser_cmd

TIMEOUT = 60
F_SETPIPE_SZ = 1031


@pytest.mark.parametrize("read_first", [0, 16, 20000], ids=["none", "header", "some"])
def test_consumer_closing_stdout_early(read_first):
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)  # the ~50 KB stream must not fit into the pipe
    proc = subprocess.Popen([*parser_cmd(), *options(FP), "--input", str(FP / "perf.data")],
                            stdout=w, stderr=subprocess.PIPE, env=env())
    os.close(w)
    with os.fdopen(r, "rb", buffering=0) as out:
        got = b""
        while len(got) < read_first:
            got += out.read(read_first - len(got))
    err = proc.stderr.read().decode()
    assert proc.wait(TIMEOUT) == -signal.SIGPIPE
    for word in ("Traceback", "Broken", "Exception", "internal error"):
        assert word not in err
