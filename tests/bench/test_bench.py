"""tools/bench runs end to end on a tiny recording (no timing assertions); needs perf and
g++, which CI has."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "tools" / "bench"


def test_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    env = {**os.environ, "PERFPARSER_REFERENCE": "/nonexistent/perfparser"}
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--only", "tiny-fp", "--runs", "1", "--work",
         str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tiny-fp" in proc.stdout and "per-stage profile" in proc.stdout
    report = json.loads(out.read_text())
    (entry,) = report["results"]
    assert entry["samples"] > 0
    assert entry["ours"]["exit_codes"] == [0]
    assert entry["ours"]["median_s"] > 0 and entry["ours"]["peak_rss_kib"] > 0
    assert "reference" not in entry  # reference missing: ours only
    assert sum(entry["stages_s"].values()) > 0
    assert set(entry["stages_s"]) >= {"parse", "order", "unwind", "symbolize", "emit"}
