"""The README's first command, as a new user runs it: tools/quickstart in a fresh copy of the
project installs it, converts the demo, shows the demo's point (its two call paths, with
their shares) and ends with the command that opens the recording in hotspot."""

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_quickstart_shows_both_call_paths_and_the_hotspot_command(tmp_path):
    copy = tmp_path / "perfparser-py"
    if (REPO / ".git").exists():
        tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                                 check=True).stdout.decode().split("\0")
        for name in filter(None, tracked):
            src = REPO / name
            if src.is_file():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, copy / name)
    else:  # a source tarball: the tree as it is, without what a run leaves in it
        shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(
            ".venv", "build", "out", "__pycache__", "*.so", "*.c"))
    done = subprocess.run(["bash", "tools/quickstart"], cwd=copy, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    shares = {path: float(pct) for pct, path in
              re.findall(r"^\s+([\d.]+)%\s+(?:\.\.\. > )?(.*> (?:fast|slow)_path > spin)$",
                         out, re.M)}
    slow = next(v for k, v in shares.items() if "slow_path" in k)
    fast = next(v for k, v in shares.items() if "fast_path" in k)
    # slow_path spins three times as long as fast_path (examples/demo.c)
    assert 2.5 < slow / fast < 3.5, out
    assert slow + fast > 90, out
    assert out.rstrip().splitlines()[-1].strip() == (
        f"HOTSPOT_PERFPARSER={copy}/.venv/bin/perfparser hotspot {copy}/examples/demo.perf.data")
