"""Kallsyms: the compiled parse (any line shape) gives the same table as a line-by-line one,
and a kernel-written text searched in place (SortedKallsyms) the same answers as its parse."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from perfparser_py import cache
from perfparser_py.kernel import kallsyms
from perfparser_py.kernel.kallsyms import Kallsyms, KallsymsError, SortedKallsyms


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


def kernel_text(rng: random.Random, n: int, modules: int) -> bytes:
    """A kallsyms as the kernel writes it: per-CPU symbols at 0, the image's symbols in
    address order (some at one address), then the modules' in load order, some inside the
    image's range and at its symbols' addresses, and a BPF program."""
    lines = [b"0000000000000000 A fixed_percpu_data\n", b"0000000000000000 A __per_cpu_start\n"]
    addr = 0xFFFFFFFF81000000
    image = []
    for i in range(n):
        image.append(addr)
        lines.append(b"%016x %s %s\n" % (addr, rng.choice(b"TtDdRrBbW").to_bytes(1, "big"),
                                         b"_text" if i == 2 else b"s%d" % i))
        addr += rng.choice([0, 0x10, 0x40, 0x1000])
    for m in range(modules):
        base = rng.choice([0xFFFFFFFFC0000000 + m * 0x10000, rng.choice(image),
                           rng.choice(image) + 8])
        for k in rng.sample(range(12), 6):  # a module's symbols come in no order
            lines.append(b"%016x t m%d_%d\t[mod%d]\n" % (base + k * 0x10, m, k, m))
    lines.append(b"ffffffffc1000000 t bpf_prog_1234_x\t[bpf]\n")
    return b"".join(lines)


def check_in_place_like_parse(data: bytes, probes: list[int]) -> None:
    whole = Kallsyms.parse(data)
    in_place = SortedKallsyms.of(data)
    assert in_place is not None
    for addr in probes:
        assert in_place.lookup(addr) == whole.lookup(addr), hex(addr)
        assert in_place.in_image(addr) == whole.in_image(addr), hex(addr)
    assert in_place.address_of(b"_text") == whole.address_of(b"_text")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("modules", [0, 3, 40])
def test_a_kernel_written_text_searched_in_place_answers_as_its_parse(seed: int,
                                                                      modules: int) -> None:
    """SortedKallsyms (a binary search over the text, the tail of modules parsed) names every
    address as the parsed table does: at, between, below and above the symbols, at equal
    addresses (the last line wins, a module's over the image's), and says the same of which
    addresses lie in the image."""
    rng = random.Random(seed)
    data = kernel_text(rng, 3000, modules)
    addrs = sorted(reference(data))
    probes = [a + d for a, _, _ in addrs for d in (-1, 0, 1, 9)] + [0, 1, 1 << 63, (1 << 64) - 1]
    check_in_place_like_parse(data, probes)


@pytest.mark.parametrize("text", [
    b"  ffffffff81000000 T a\n",  # a blank before the address
    b"ffffffff8100000 T a\n",  # 15 digits
    b"(null) T a\n",
    b"0000000000000000 T a\n",  # no address: kptr_restrict
    b"".join(b"%016x T s%d\n" % (0xFFFFFFFF81100000 - 16 * i, i) for i in range(80)),  # descending
    b"ffffffff81000000 TT a\n",
])
def test_a_text_not_as_the_kernel_writes_it_is_parsed(text: bytes) -> None:
    assert SortedKallsyms.of(text) is None


@pytest.mark.parametrize("text", [
    b"ffffffff81000000 T a\t[m]\nffffffff81000010 T b\n",  # a line of the image after a module's
    b"ffffffff81000000 T a\r\nffffffff81000010 T b\r\n",  # lines ending at CR too
    b"ffffffff81000000 T a\rffffffff81000010 T b\rffffffff81000020 T c\n",  # lines ending at CR
])
def test_lines_the_kernel_does_not_write_hand_the_lookups_to_the_parse(text: bytes) -> None:
    """SortedKallsyms.of reads a few lines, not the whole text: a line with a CR, or a
    module's among the image's, is seen when a lookup reads it, and the parse answers.
    (Where its search for the modules' lines meets that module's line, the text is parsed
    up front instead.)"""
    text = b"".join(b"%016x T s%d\n" % (0xFFFFFFFF80000000 + 0x10 * i, i) for i in range(64)) + text
    if SortedKallsyms.of(text) is None:  # its search for the modules' lines met that line
        assert b"\t" in text
    else:
        check_in_place_like_parse(text, [0xFFFFFFFF81000000 + d for d in range(-1, 0x30, 4)])


def test_a_mapped_kernel_copy_stays_out_of_memory() -> None:
    """Searched in place, a kallsyms file of 10 MB puts only the pages its lookups read into
    the run's resident set: finding where its modules' lines start reads no more. The file
    is in tmpfs, whose pages are mapped a fault-around window (64 KiB) at a time; a disk
    file system's large folios may map far more per fault."""
    data = kernel_text(random.Random(3), 400_000, 40)
    folder = tempfile.mkdtemp(dir="/dev/shm")
    path = os.path.join(folder, "kallsyms")
    try:
        with open(path, "wb") as f:
            f.write(data)
        found = kallsyms._in_place(path)
        assert found is not None
        table = found[0]
        for addr in (0xFFFFFFFF81000000, 0xFFFFFFFF81234567, 0xFFFFFFFFC0000000):
            table.lookup(addr)
            table.in_image(addr)
        resident = None
        in_mapping = False
        with open("/proc/self/smaps") as smaps:
            for line in smaps:
                if line.rstrip().endswith(path):
                    in_mapping = True
                elif in_mapping and line.startswith("Rss:"):
                    resident = int(line.split()[1])
                    break
    finally:
        shutil.rmtree(folder)
    assert resident is not None
    assert resident * 1024 < len(data) // 4, (resident, len(data))


def _with_line_at(line: bytes) -> tuple[bytes, list[bytes], int]:
    """A kernel text with `line` inserted between two of the lines SortedKallsyms.of samples."""
    lines = kernel_text(random.Random(5), 3000, 2).splitlines(keepends=True)
    at = 1700
    return b"".join(lines[:at] + [line] + lines[at:]), lines, at


@pytest.mark.parametrize("line", [b"ffffffff81234567  T two_blanks\n",
                                  b" ffffffff81234567 T blank_first\n", b"\n",
                                  b"ffffffff81234567 T\n"])
def test_a_line_the_sampling_missed_hands_the_lookups_to_the_parse(line: bytes) -> None:
    """9 evenly spread lines are checked up front; a lookup that meets a line not in the
    kernel's form elsewhere answers from the whole text's parse from then on."""
    data, lines, at = _with_line_at(line)
    in_place = SortedKallsyms.of(data)
    assert in_place is not None
    near = [int(lines[k][:16], 16) + d for k in (at - 1, at) for d in (-1, 0, 1)]
    check_in_place_like_parse(data, [a for a, _, _ in sorted(reference(data))[::7]] + near)


def test_a_line_that_is_no_kallsyms_line_names_nothing_once_met() -> None:
    """A copy the kernel did not write whole (an address that is not hex): a lookup meeting
    that line finds the text cannot be parsed, and nothing is named from it after."""
    data, lines, at = _with_line_at(b"ffffffff8123zzzz T bad\n")
    with pytest.raises(KallsymsError):
        Kallsyms.parse(data)
    in_place = SortedKallsyms.of(data)
    assert in_place is not None
    before = int(lines[at - 1][:16], 16)
    assert in_place.in_image(before) is False  # the next line it reads is the bad one
    assert all(in_place.lookup(a) is None and not in_place.in_image(a)
               for a, _, _ in reference(b"".join(lines))[::50])


def test_load_searches_a_kernel_copy_in_place(tmp_path: Path, monkeypatch) -> None:
    """Kallsyms.load's in_place: a kernel-written file is mapped and searched, not parsed;
    a compressed one is read and parsed as before."""
    monkeypatch.setattr(cache, "_current", None)  # no persistent cache record around it
    data = kernel_text(random.Random(2), 500, 3)
    plain = tmp_path / "kallsyms"
    plain.write_bytes(data)
    packed = tmp_path / "kallsyms.gz"
    packed.write_bytes(gzip.compress(data))
    assert isinstance(Kallsyms.load(str(plain), in_place=True), SortedKallsyms)
    assert isinstance(Kallsyms.load(str(packed), in_place=True), Kallsyms)
    assert isinstance(Kallsyms.load(str(plain)), Kallsyms)
    addrs = [a for a, _, _ in reference(data)]
    check_in_place_like_parse(data, addrs)
    mapped = Kallsyms.load(str(plain), in_place=True)
    assert [mapped.lookup(a) for a in addrs] == [Kallsyms.parse(data).lookup(a) for a in addrs]
