"""Running our parser as a subprocess for the robustness tests (the frozen executable when
PERFPARSER_EXE is set), and the invariant check of tests/robustness/fuzzer.py on its result."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.robustness.fuzzer import CORPUS, check

FP = CORPUS / "recorded" / "fp"
PIPE = CORPUS / "recorded" / "pipe"


def parser_cmd() -> list[str]:
    exe = os.environ.get("PERFPARSER_EXE")
    return [exe] if exe else [sys.executable, "-m", "perfparser_py.cli"]


def options(app: Path = FP) -> list[str]:
    """Deterministic options: corpus sysroot, no kallsyms, current protocol flavour."""
    return ["--app", str(app), "--sysroot", str(CORPUS / "sysroot") + "/",
            "--debug", str(CORPUS / "sysroot" / "usr" / "lib" / "debug"),
            "--kallsyms", "/dev/null", "--protocol", "current"]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("PERFPARSER_TRACEBACK", None)
    return e


def assert_clean(code: int, stderr: bytes, output: bytes) -> None:
    """The fuzz invariants: documented exit code, no traceback, a fully decodable stream."""
    failure = check(code, stderr.decode("utf-8", "replace"), b"", output)
    assert failure is None, f"{failure}\n{stderr.decode('utf-8', 'replace')}"
