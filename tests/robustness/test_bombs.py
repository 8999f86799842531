"""Issue 24 rule 2: decompression bombs. A compressed debug section inflates to at most the
size its header claims, all of a run's sections share one budget (zlib too), and compressed
perf records inflate in bounded chunks, never past perf's own per-record bound. Each input is
built here, is small, and must finish quickly in bounded memory."""

from __future__ import annotations

import struct
import subprocess
import zlib

import zstandard
from elftools.elf.elffile import ELFFile

from tests.robustness.hostile import (
    PROG,
    recording,
    run,
)

TIMEOUT = 10
HANG_GUARD = 30  # for inputs that take seconds: a shared CI machine must never flake
SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD = 1, 2
FEAT_COMPRESSED = 27
REC_COMPRESSED = 81
MiB = 1 << 20


def _with_sections(elf: bytes, payloads: dict[str, bytes]) -> bytes:
    """`elf` with the contents of the named sections replaced by `payloads` (appended at the
    end of the file, the section headers pointed at them, SHF_COMPRESSED set)."""
    import io

    out = bytearray(elf)
    f = ELFFile(io.BytesIO(elf))
    shoff, shentsize = f["e_shoff"], f["e_shentsize"]
    for i, sec in enumerate(f.iter_sections()):
        if sec.name in payloads:
            at = shoff + i * shentsize
            flags, = struct.unpack_from("<Q", out, at + 8)
            struct.pack_into("<Q", out, at + 8, flags | SHF_COMPRESSED)
            struct.pack_into("<QQ", out, at + 24, len(out), len(payloads[sec.name]))
            out += payloads[sec.name]
    return bytes(out)


def _chdr(ctype: int, size: int) -> bytes:
    return struct.pack("<IIQQ", ctype, 0, size, 1)


def _zeros(compressor, total: int) -> bytes:
    block = bytes(4 * MiB)
    return b"".join(compressor.compress(block) for _ in range(total // len(block)))


def _app_with(tmp_path, payloads: dict[str, bytes]):
    d = tmp_path / "app"
    d.mkdir()
    (d / "hotloop").write_bytes(_with_sections(PROG.read_bytes(), payloads))
    w, n = recording([], samples_per_map=20, prog=str(d / "hotloop").encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    return d, n


def _options(app) -> list[str]:
    return ["--app", str(app), "--kallsyms", "/dev/null", "--no-cache", "--protocol", "current",
            "--input", str(app.parent / "pipe.data")]


def test_zstd_section_inflates_only_to_its_header_size(tmp_path):
    cctx = zstandard.ZstdCompressor(level=3)
    bomb = cctx.compress(bytes(1 << 30))  # 1 GiB of zeros in ~32 KB
    app, n = _app_with(tmp_path, {".debug_info": _chdr(ELFCOMPRESS_ZSTD, 64 << 10) + bomb,
                                  ".debug_line": _chdr(ELFCOMPRESS_ZSTD, 64 << 10) + bomb})
    res = run(_options(app), TIMEOUT)
    assert res.code == 0 and res.samples == n
    assert res.max_rss < 400 * MiB, res.max_rss


def test_zlib_sections_share_one_budget(tmp_path):
    # four honest 256 MiB zlib sections in ~1 MB: more than the budget allows in all
    c = zlib.compressobj(9)
    body = _zeros(c, 256 * MiB) + c.flush()
    payload = _chdr(ELFCOMPRESS_ZLIB, 256 * MiB) + body
    names = (".debug_info", ".debug_abbrev", ".debug_line", ".debug_str")
    app, n = _app_with(tmp_path, dict.fromkeys(names, payload))
    res = run(_options(app), TIMEOUT)
    assert res.code == 0 and res.samples == n
    assert "exceeds the run's decompression budget" in res.stderr
    assert res.max_rss < 700 * MiB, res.max_rss


def _compressed_record(payload: bytes) -> bytes:
    return struct.pack("<IHH", REC_COMPRESSED, 0, 8 + len(payload)) + payload


def _unknown_records(count: int) -> bytes:
    """`count` records of an unknown type, 64 KiB each: the reader frames and passes them."""
    one = struct.pack("<IHH", 200, 0, 65528) + bytes(65520)
    return one * count


def test_compressed_record_bomb_stops_at_the_record_bound(tmp_path):
    w, n = recording([], samples_per_map=30, prog=str(PROG).encode())
    c = zstandard.ZstdCompressor(level=3).compressobj()
    stream = b"".join(c.compress(_unknown_records(64)) for _ in range(64)) + c.flush()
    data = w.data() + b"".join(_compressed_record(stream[i:i + 60000])
                               for i in range(0, len(stream), 60000))
    (tmp_path / "pipe.data").write_bytes(data)
    res = run(["--app", str(PROG.parent), "--kallsyms", "/dev/null", "--no-cache",
               "--input", str(tmp_path / "pipe.data")], TIMEOUT)
    assert res.code == 5 and res.samples == n
    assert "decompression bomb" in res.stderr
    assert res.max_rss < 400 * MiB, res.max_rss


PINGPONG = r"""
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int a[2], b[2];
    long n = atol(argv[1]);
    char c = 0;
    if (pipe(a) || pipe(b))
        return 1;
    if (fork() == 0) {
        for (long i = 0; i < n; i++)
            if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    for (long i = 0; i < n; i++)
        if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
            return 1;
    return 0;
}
"""


def test_a_real_recording_that_inflates_like_a_bomb_is_decoded(tmp_path):
    # Samples without timestamps of an event with a fixed period are identical: perf -z
    # (default level) compresses 5 MB of them (200 000 samples) into ~2 KB, thousands of times,
    # as dense as a bomb. (Not more: a pipe round trip costs ~60 us in a small VM, and
    # 800 000 of them ran into the timeout in CI.) Such a recording is perf's, so no ratio of the whole run can be a bound, only
    # each record's; and every record comes out, those of the last compressed record too.
    src = tmp_path / "pingpong.c"
    src.write_text(PINGPONG)
    exe = tmp_path / "pingpong"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    data = tmp_path / "perf.data"
    subprocess.run(["perf", "record", "-N", "-q", "-z", "-m", "2048", "--no-timestamp",
                    "--per-thread", "-e", "context-switches", "-c", "1", "-o", str(data), "--",
                    str(exe), "200000"], check=True, capture_output=True, timeout=180)
    assert data.stat().st_size < 32 << 10
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "tid"], check=True,
                            capture_output=True, timeout=60).stdout
    res = run(["--app", str(tmp_path), "--kallsyms", "/dev/null", "--no-cache",
               "--input", str(data)], HANG_GUARD)
    # perf itself may lose a few of the switches on a busy machine: every one it has counts
    assert res.code == 0 and res.samples == script.count(b"\n") > 190_000


def test_a_real_compressed_recording_is_within_the_bounds():
    from tests.robustness.fuzzer import CORPUS

    rec = CORPUS / "recorded" / "compressed"
    res = run(["--app", str(rec), "--kallsyms", "/dev/null", "--no-cache",
               "--input", str(rec / "perf.data")], TIMEOUT)
    assert res.code == 0 and res.samples > 0


def _without_aranges(elf: bytes) -> bytes:
    """`elf` with .debug_aranges and .debug_rnglists emptied: units are found by their DIEs."""
    import io

    out = bytearray(elf)
    f = ELFFile(io.BytesIO(elf))
    for i, sec in enumerate(f.iter_sections()):
        if sec.name in (".debug_aranges", ".debug_rnglists"):
            struct.pack_into("<Q", out, f["e_shoff"] + i * f["e_shentsize"] + 32, 0)
    return bytes(out)


def test_many_units_within_the_budget_keep_no_abbreviation_table_each(tmp_path):
    # 10 000 copies of the program's unit, each with its own copy of the abbreviation table,
    # in 700 KB of zlib (within the run's budget) and no .debug_aranges: finding the unit of
    # an address reads every unit DIE; the 10 000 parsed tables held took ~70 KB each
    with open(PROG, "rb") as f:
        e = ELFFile(f)
        info = e.get_section_by_name(".debug_info").data()
        abbrev = e.get_section_by_name(".debug_abbrev").data()
    length, version = struct.unpack_from("<IH", info, 0)
    assert version == 5 and 4 + length == len(info)  # one DWARF 5 unit
    units = bytearray()
    for k in range(10000):
        unit = bytearray(info)
        struct.pack_into("<I", unit, 8, k * len(abbrev))  # debug_abbrev_offset
        units += unit
    sections = {}
    for name, raw in ((".debug_info", bytes(units)), (".debug_abbrev", abbrev * 10000)):
        c = zlib.compressobj(9)
        sections[name] = _chdr(ELFCOMPRESS_ZLIB, len(raw)) + c.compress(raw) + c.flush()
    d = tmp_path / "app"
    d.mkdir()
    (d / "hotloop").write_bytes(_without_aranges(_with_sections(PROG.read_bytes(), sections)))
    w, n = recording([], samples_per_map=20, prog=str(d / "hotloop").encode())
    (tmp_path / "pipe.data").write_bytes(w.data())
    res = run(_options(d), HANG_GUARD)
    assert res.code == 0 and res.samples == n
    assert b"main" in res.symbols()
    assert res.max_rss < 400 * MiB, res.max_rss
