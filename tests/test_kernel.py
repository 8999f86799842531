"""Kallsyms: gzip or plain files, sorted lookup, modules, upstream error texts."""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import pytest

from perfparser_py.kernel.kallsyms import Kallsyms, KallsymsError


def test_corpus_kallsyms_gz(corpus_dir: Path) -> None:
    path = corpus_dir / "kallsyms/kallsyms.gz"
    ks = Kallsyms.load(str(path))
    lines = [line.split("\t")[0].split() + [line.partition("\t")[2]]
             for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    entries = sorted(((int(f[0], 16), f[2], f[3]) for f in lines if int(f[0], 16)),
                     key=lambda e: e[0])
    assert len(ks) == len(entries)
    rng = random.Random(3)
    for i in rng.sample(range(len(entries) - 1), 200):
        addr, _name, _module = entries[i]
        nxt = next(e[0] for e in entries[i:] if e[0] > addr)
        last_at_addr = max(j for j in range(i, i + 64) if entries[j][0] == addr)
        expected = entries[last_at_addr]
        assert ks.lookup(addr) == expected
        assert ks.lookup(nxt - 1) == expected
    assert ks.lookup(entries[0][0] - 1) is None
    module = next(e for e in entries if e[2])
    assert ks.lookup(module[0])[2].startswith("[")


def test_plain_file_null_and_modules(tmp_path: Path) -> None:
    path = tmp_path / "kallsyms"
    path.write_text("(null) A irq_stack_backing_store\n"
                    "ffffffffc0a01000 t serio_open\t[serio]\n"
                    "ffffffff81000000 T _text\n"
                    "0000000000000000 A fixed_percpu_data\n"
                    "\n")
    ks = Kallsyms.load(str(path))
    assert len(ks) == 2
    assert ks.lookup(0xFFFFFFFF81000010) == (0xFFFFFFFF81000000, "_text", "")
    assert ks.lookup(0xFFFFFFFFC0A01005) == (0xFFFFFFFFC0A01000, "serio_open", "[serio]")
    assert ks.lookup(0x1000) is None


@pytest.mark.parametrize("content,message", [
    ("", "Mapping is empty."),
    ("0000000000000000 A only_zero\n", "Mapping is empty."),
    ("ffffffff81000000 T _text\nzz T bad\n", "Invalid address: zz"),
    # upstream's addresses are 64-bit: one beyond is as invalid as one that is not hex
    ("ffffffff81000000 T _text\n1ffffffff81000000 T big\n", "Invalid address: 1ffffffff81000000"),
])
def test_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "kallsyms"
    path.write_text(content)
    with pytest.raises(KallsymsError) as err:
        Kallsyms.load(str(path))
    assert str(err.value) == message


def test_missing_file_and_bad_gzip(tmp_path: Path) -> None:
    with pytest.raises(KallsymsError, match="No such file or directory"):
        Kallsyms.load(str(tmp_path / "missing"))
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(KallsymsError):
        Kallsyms.load(str(tmp_path / "bad.gz"))


def test_cached_path(tmp_path: Path) -> None:
    bid = bytes(range(20))
    assert Kallsyms.cached_path([str(tmp_path)], bid) is None
    target = tmp_path / "d2" / "[kernel.kallsyms]" / bid.hex() / "kallsyms"
    target.parent.mkdir(parents=True)
    target.write_text("ffffffff81000000 T _text\n")
    assert Kallsyms.cached_path([str(tmp_path / "d1"), "", str(tmp_path / "d2")], bid) == str(
        target)


@pytest.mark.parametrize("text", [
    b"ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000010 t x_text\n",
    b"ffffffffc0000000 t _text\t[mod]\nffffffff81000010 t a _text\nffffffff81000000 T _text",
    b"ffffffff81000010 t z\r\nffffffff81000000 T _text\r\n",
    b"ffffffff81000010 t z\rffffffff81000000 T _text",
    # fields are the words before the TAB: the first line is an address alone
    b"ffffffff80000000\tT _text\nffffffff81000000 T _text\n",
    b"ffffffff81000000 T _text\n0000000000000000 T _text\n(null) T _text\n",
])
def test_address_of_the_reference_symbol(tmp_path: Path, text: bytes) -> None:
    """The core kernel's `_text` line, whatever the line ends, the last line included; not a
    module's, not a name that ends in it."""
    path = tmp_path / "kallsyms"
    path.write_bytes(text)
    ks = Kallsyms.load(str(path))
    assert ks.address_of(b"_text") == 0xFFFFFFFF81000000
    assert ks.address_of(b"_etext") is None
    buf = io.BytesIO()
    Kallsyms.write_table(buf, text)
    assert Kallsyms.from_buffer(buf.getvalue()).address_of(b"_text") == 0xFFFFFFFF81000000


def test_a_warm_run_knows_the_reference_symbol_without_a_parse(tmp_path: Path) -> None:
    from perfparser_py import cache

    path = tmp_path / "kallsyms"
    path.write_bytes(b"ffffffff81000000 T _text\nffffffff81000100 t next\n")
    try:
        for warm in (False, True):
            store = cache.PersistentCache(str(tmp_path / "cache"))
            cache.set_current(store)
            table = Kallsyms.load(str(path))
            assert table.address_of(b"_text") == 0xFFFFFFFF81000000
            assert table.address_of(b"_stext") is None
            assert (table._table is None) == warm
            store.save()
    finally:
        cache.set_current(None)
