"""The rules CONTRIBUTING.md states for the code, checked: `ruff check` finds nothing, with the
version the test extra pins (a newer ruff brings new rules, and a fresh install must not fail
on them)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_check_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
