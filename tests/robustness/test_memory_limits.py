"""Runs under an address-space limit (ulimit -v, as on embedded targets and in some CI
containers): nothing allocates for a bound it does not need (docs/robustness.md)."""

from __future__ import annotations

import resource
import subprocess

from perfparser_py import regular
from perfparser_py.kernel.kallsyms import MAX_KALLSYMS
from tests.corpus.expect import CORPUS, case_options
from tests.robustness.cli_run import env, parser_cmd

KERNEL = CORPUS / "recorded" / "kernel"
# below the kallsyms bound (256 MB): read(bound + 1) alone asked for more, whatever the size
LIMIT = 250 << 20


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_a_run_fits_an_address_space_limit_below_the_kallsyms_bound():
    assert LIMIT < MAX_KALLSYMS
    args = [*parser_cmd(), "--input", str(KERNEL / "perf.data"), *case_options(KERNEL),
            "--no-cache"]
    free = subprocess.run(args, capture_output=True, timeout=120, env=env())
    limited = subprocess.run(args, capture_output=True, timeout=120, env=env(),
                             preexec_fn=_limited)
    assert free.returncode == 0, free.stderr.decode()
    assert limited.returncode == 0, limited.stderr.decode()
    assert limited.stdout == free.stdout


def test_read_bounded_reads_in_pieces_up_to_one_past_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(regular, "_PIECE", 3)
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    for bound, want in ((20, b"0123456789"), (10, b"0123456789"), (9, b"0123456789"),
                        (4, b"01234"), (0, b"0")):
        with open(path, "rb") as f:
            assert regular.read_bounded(f, bound) == want
    assert regular.read_regular(str(path), 9) is None
    assert regular.read_regular(str(path), 10) == b"0123456789"
