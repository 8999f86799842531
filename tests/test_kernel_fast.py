"""Kallsyms: the compiled parse (any line shape) gives the same table as a line-by-line one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from perfparser_py.kernel.kallsyms import Kallsyms, KallsymsError


def reference(data: bytes) -> list[tuple[int, str, str]]:
    """SEMANTICS §10.6 written plainly: the table a lookup must see, in lookup order."""
    entries = []
    for line in data.splitlines():
        main, _, module = line.partition(b"\t")
        fields = main.split()
        if not fields:
            continue
        addr = 0 if fields[0] == b"(null)" else int(fields[0], 16)
        if addr and len(fields) >= 3:
            entries.append((addr, b" ".join(fields[2:]).decode(), module.strip().decode()))
    return sorted(entries, key=lambda e: e[0])


def random_kallsyms(rng: random.Random, n: int) -> bytes:
    out = []
    for i in range(n):
        addr = rng.choice([0, 0xFFFFFFFF81000000 + rng.randrange(0, 1 << 16, 16)])
        module = rng.choice(["", "\t[mod]", "\t[other] "])
        name = rng.choice([f"f{i}", f"g{i}.cold", f"h{i}\x0bx"])
        out.append(f"{addr:016x} {rng.choice('TtDbW')} {name}{module}\n")
    return "".join(out).encode()


def check_like_reference(tmp_path: Path, data: bytes) -> None:
    """The table loaded from a file holding `data` answers like `reference`."""
    path = tmp_path / "kallsyms"
    path.write_bytes(data)
    want = reference(data)
    ks = Kallsyms.load(str(path))
    assert len(ks) == len(want)
    for i, entry in enumerate(want):
        # equal addresses: the last one in file order wins
        if i + 1 == len(want) or want[i + 1][0] != entry[0]:
            assert ks.lookup(entry[0]) == entry
            assert ks.lookup(entry[0] + 3) == entry
    assert ks.lookup(want[0][0] - 1) is None


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("tail", [b"", b"ffffffff81000008 T short", b"ffffffff81000008 T\n",
                                  b"\n\n", b"ffffffff8100000 T fifteen_digits\n"])
def test_fast_path_matches_reference(tmp_path: Path, seed: int, tail: bytes) -> None:
    rng = random.Random(seed)
    check_like_reference(tmp_path, random_kallsyms(rng, 400) + tail)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", ["sorted", "unsorted", "zeros", "blank line", "short line"])
def test_texts_of_many_chunks_match_reference(tmp_path: Path, seed: int, shape: str) -> None:
    """~320 KB: the regular path reads it in several chunks; the defect (if any) is far from
    the first one."""
    rng = random.Random(seed)
    lines = random_kallsyms(rng, 20000).splitlines(keepends=True)
    lines = sorted(line for line in lines if not line.startswith(b"0000"))  # /proc's order
    at = len(lines) * 3 // 4
    if shape == "unsorted":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif shape == "zeros":
        lines.insert(0, b"0000000000000000 T zero\n")
    elif shape == "blank line":
        lines.insert(at, b"\n")
    elif shape == "short line":
        lines.insert(at, b"ffffffff81000008 T\n")
    data = b"".join(lines)
    assert len(data) > 3 * (1 << 16)
    check_like_reference(tmp_path, data)


def test_bad_address_after_regular_lines(tmp_path: Path) -> None:
    path = tmp_path / "kallsyms"
    path.write_bytes(random_kallsyms(random.Random(9), 50) + b"ffffffff8100zzzz T bad\n")
    with pytest.raises(KallsymsError, match="Invalid address: ffffffff8100zzzz"):
        Kallsyms.load(str(path))
