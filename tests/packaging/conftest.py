"""The frozen executable under test: $PERFPARSER_EXE, or built once per session into build/
with the .venv's interpreter (build.sh's PGO interpreter takes ~15 minutes to build: a release
build's, not every test run's)."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def perfparser_exe() -> Path:
    prebuilt = os.environ.get("PERFPARSER_EXE")
    if prebuilt:
        exe = Path(prebuilt).resolve()
    else:
        subprocess.run(["sh", str(REPO / "packaging" / "build.sh")], check=True,
                       stdout=subprocess.DEVNULL, timeout=900,
                       env={**os.environ, "PYTHON": str(REPO / ".venv" / "bin" / "python")})
        exe = REPO / "build" / "dist" / "perfparser" / "perfparser"
    assert os.access(exe, os.X_OK), f"no executable at {exe}"
    return exe
