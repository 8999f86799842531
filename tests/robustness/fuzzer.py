"""Structure-aware fuzzer for the whole pipeline (issue 6), used by tools/fuzz and the CI test.

Seeds are small corpus recordings (cut down to their first records) together with the ELF
files `--app` finds for them, a kallsyms excerpt and a perf-PID.map. Each execution applies
1-4 mutations chosen from field-level operators (file header, attr fields, record headers,
sample fields such as callchain nr and stack sizes, feature table, compressed payloads,
truncation) and, for some executions, to an ELF file (ELF/program/section headers, CFI and
DWARF bytes) or the kallsyms / perf-map text. The CLI then runs in a forked worker process
with a time limit and an address-space limit, and `check()` applies the invariants:
documented exit code, no traceback or internal-error line, nothing on stdout, an output
that our protocol reader decodes completely with every sample frame defined before use.

Everything derives from (seed, execution index), so a failure is reproduced by its index.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import shutil
import signal
import stat
import struct
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()

EXIT_CODES = frozenset((0, 1, 2, 4, 5, 6, 7, 8))
TIME_LIMIT = 10.0  # seconds per execution (inputs < 1 MB)
MEMORY_LIMIT = 512 << 20  # bytes of address space on top of the worker's baseline
HARD_TIMEOUT = 40.0  # the parent kills a worker that does not answer (hang in C code)
RESTART_EVERY = 150  # fresh worker process after this many executions
CACHE_SHARE = 0.15  # executions that damage a persistent cache filled by a clean run first

U64 = struct.Struct("<Q")
U32 = struct.Struct("<I")
U16 = struct.Struct("<H")
_INTERESTING = (0, 1, 2, 7, 8, 15, 16, 63, 64, 0x7F, 0x80, 0xFF, 0x100, 0xFFF, 0x1000, 0xFFFF,
                0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63,
                (1 << 64) - 1)

# sample_type bits (SEMANTICS §3.4)
S_IP, S_TID, S_TIME, S_ADDR, S_READ, S_CALLCHAIN, S_ID, S_CPU, S_PERIOD = (
    1, 2, 4, 8, 0x10, 0x20, 0x40, 0x80, 0x100)
S_STREAM_ID, S_RAW, S_BRANCH, S_REGS_USER, S_STACK_USER, S_IDENTIFIER = (
    0x200, 0x400, 0x800, 0x1000, 0x2000, 0x10000)


class FuzzTimeout(BaseException):
    """Raised by the execution alarm; BaseException so the CLI's own handlers let it pass."""


# ------------------------------------------------------------------------------ layout


@dataclass
class Layout:
    """Where things are in one perf.data (little-endian, file or pipe mode)."""

    pipe: bool
    attrs: list[int] = field(default_factory=list)  # offsets of perf_event_attr structs
    records: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, type, size)
    feature_table: int = -1  # offset of the {offset, size} array, file mode
    n_features: int = 0
    sample_fields: dict[str, int] = field(default_factory=dict)  # name -> offset in a SAMPLE body


def _sample_fields(attr: bytes, body: bytes) -> dict[str, int]:
    """Offsets (from the record start) of the variable-length counts in one SAMPLE body."""
    sample_type = U64.unpack_from(attr, 24)[0]
    regs_mask = U64.unpack_from(attr, 80)[0] if len(attr) >= 88 else 0
    pos, out = 8, {}
    for bit in (S_IDENTIFIER, S_IP, S_TID, S_TIME, S_ADDR, S_ID, S_STREAM_ID, S_CPU, S_PERIOD):
        if sample_type & bit:
            pos += 8
    if sample_type & S_READ:
        return out  # layout depends on read_format: not worth following for targeting
    try:
        if sample_type & S_CALLCHAIN:
            out["callchain_nr"] = pos
            pos += 8 + 8 * U64.unpack_from(body, pos)[0]
        if sample_type & S_RAW:
            out["raw_size"] = pos
            pos += 4 + U32.unpack_from(body, pos)[0]
        if sample_type & S_BRANCH:
            out["branch_nr"] = pos
            return out
        if sample_type & S_REGS_USER:
            out["regs_abi"] = pos
            abi = U64.unpack_from(body, pos)[0]
            pos += 8 + (8 * bin(regs_mask).count("1") if abi else 0)
        if sample_type & S_STACK_USER:
            out["stack_size"] = pos
            size = U64.unpack_from(body, pos)[0]
            if size:
                out["stack_dyn_size"] = pos + 8 + size
    except struct.error:
        pass
    return {k: v for k, v in out.items() if v + 8 <= len(body)}


def layout(data: bytes) -> Layout:
    size = U64.unpack_from(data, 8)[0]
    lay = Layout(pipe=size == 16)
    if lay.pipe:
        pos, end = 16, len(data)
    else:
        attr_size = U64.unpack_from(data, 16)[0]
        a_off, a_size, pos, d_size = struct.unpack_from("<4Q", data, 24)
        lay.attrs = list(range(a_off, a_off + a_size, attr_size))
        end = pos + d_size
        lay.feature_table = end
        lay.n_features = sum(bin(w).count("1") for w in struct.unpack_from("<4Q", data, 72))
    while pos + 8 <= end:
        rtype, _misc, rsize = struct.unpack_from("<IHH", data, pos)
        if rsize < 8:
            break
        lay.records.append((pos, rtype, rsize))
        if rtype == 64:  # HEADER_ATTR (pipe mode)
            lay.attrs.append(pos + 8)
        pos += rsize
    if lay.attrs:
        attr = data[lay.attrs[0]:lay.attrs[0] + 120]
        for off, rtype, rsize in lay.records:
            if rtype == 9:
                fields = _sample_fields(attr, data[off:off + rsize])
                if fields:
                    lay.sample_fields = fields
                    break
    return lay


def shrink(data: bytes, max_samples: int) -> bytes:
    """Keep every non-sample record but only the first max_samples SAMPLEs; in file mode the
    feature sections move down and their table entries are patched."""
    lay = layout(data)
    kept, samples = [], 0
    for off, rtype, rsize in lay.records:
        if rtype == 9:
            samples += 1
            if samples > max_samples:
                continue
        kept.append(data[off:off + rsize])
    body = b"".join(kept)
    if lay.pipe:
        return data[:16] + body
    d_off, d_size = struct.unpack_from("<2Q", data, 40)
    old_end, new_end = d_off + d_size, d_off + len(body)
    tail = bytearray(data[old_end:])
    for k in range(lay.n_features):
        off = U64.unpack_from(tail, 16 * k)[0]
        if off >= old_end:
            U64.pack_into(tail, 16 * k, off - old_end + new_end)
    head = bytearray(data[:d_off])
    U64.pack_into(head, 48, len(body))
    return bytes(head) + body + bytes(tail)


# ------------------------------------------------------------------------------ seeds


@dataclass
class Seed:
    name: str
    data: bytes
    lay: Layout
    app: Path | None = None  # directory given as --app
    elf: str | None = None  # file in app that ELF mutations target
    elf_sections: list[tuple[str, int, int]] = field(default_factory=list)  # name, offset, size
    kallsyms: bytes | None = None
    perf_map: tuple[str, bytes] | None = None  # file name, text


def _elf_sections(path: Path) -> list[tuple[str, int, int]]:
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f:
        return [(s.name, s["sh_offset"], s["sh_size"]) for s in ELFFile(f).iter_sections()
                if s["sh_type"] != "SHT_NOBITS" and s["sh_size"]
                and s.name != ".note.gnu.build-id"]


def _kallsyms_excerpt() -> bytes:
    lines = gzip.decompress((CORPUS / "kallsyms" / "kallsyms.gz").read_bytes()).splitlines()
    return b"\n".join(lines[:300] + lines[300::97]) + b"\n"


# (name, perf data, max samples, app dir, ELF to mutate, kallsyms?, perf-map)
_SEEDS = [
    ("fp", "recorded/fp/perf.data", 40, "recorded/fp", "hotloop", False, None),
    ("compressed", "recorded/compressed/perf.data", 0, "recorded/compressed", "hotloop", False,
     None),
    ("pipe", "recorded/pipe/pipe.data", 40, "recorded/pipe", "hotloop", False, None),
    ("kernel", "recorded/kernel/perf.data", 40, "recorded/kernel", "sysheavy", True, None),
    ("kernel-dwarf", "recorded/kernel/perf.dwarf.data", 12, "recorded/kernel", "sysheavy", True,
     None),
    ("dwarf", "recorded/dwarf/perf.data", 12, "recorded/dwarf", "hotloop", False, None),
    ("inline", "recorded/inline/perf.data", 12, "recorded/inline", "inline", False, None),
    ("jit", "recorded/jit/perf.data", 40, "recorded/jit", "jit", False, "perf-28417.map"),
    ("forkexec", "recorded/forkexec/perf.data", 40, "recorded/forkexec", "worker", False, None),
    ("multievent", "recorded/multievent/perf.data", 40, "recorded/multievent", "multievent",
     False, None),
    ("lbr", "upstream/vector_static_gcc/perf.lbr.data", 0, "upstream/vector_static_gcc",
     None, False, None),
    ("zstd", "upstream/vector_static_gcc/perf.data.zstd", 0, "upstream/vector_static_gcc",
     None, False, None),
    ("probe-file", "upstream/probe.data.file", 0, None, None, False, None),
    ("probe-stream", "upstream/probe.data.stream", 0, None, None, False, None),
]


def load_seeds() -> list[Seed]:
    kallsyms = _kallsyms_excerpt()
    seeds = []
    for name, rel, max_samples, app, elf, with_kallsyms, perf_map in _SEEDS:
        data = (CORPUS / rel).read_bytes()
        if max_samples:
            data = shrink(data, max_samples)
        seed = Seed(name, data, layout(data), app=CORPUS / app if app else None, elf=elf,
                    kallsyms=kallsyms if with_kallsyms else None)
        if elf:
            seed.elf_sections = _elf_sections(seed.app / elf)
        if perf_map:
            seed.perf_map = (perf_map, (seed.app / perf_map).read_bytes())
        seeds.append(seed)
    return seeds


# ------------------------------------------------------------------------------ mutators


def _value(rng: random.Random, old: int, bits: int) -> int:
    mask = (1 << bits) - 1
    r = rng.random()
    if r < 0.5:
        return rng.choice(_INTERESTING) & mask
    if r < 0.75:
        return (old + rng.choice((-16, -8, -1, 1, 8, 16, 4096))) & mask
    if r < 0.9:
        return old ^ (1 << rng.randrange(bits))
    return rng.getrandbits(bits)


def _set(rng: random.Random, buf: bytearray, off: int, width: int) -> str:
    if off < 0 or off + width > len(buf):
        return "out of range"
    st = {8: U64, 4: U32, 2: U16}[width]
    old = st.unpack_from(buf, off)[0]
    new = _value(rng, old, width * 8)
    st.pack_into(buf, off, new)
    return f"@{off:#x} u{width * 8} {old:#x}->{new:#x}"


def m_header(rng, buf, lay):
    return "header " + _set(rng, buf, rng.choice(range(8, 104, 8)), 8)


def m_attr(rng, buf, lay):
    if not lay.attrs:
        return m_bytes(rng, buf, lay)
    at = rng.choice(lay.attrs)
    off, width = rng.choice(((0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (24, 8), (32, 8),
                             (40, 8), (72, 8), (80, 8), (88, 4), (96, 8), (108, 2)))
    return "attr " + _set(rng, buf, at + off, width)


def m_record(rng, buf, lay):
    if not lay.records:
        return m_bytes(rng, buf, lay)
    off, rtype, rsize = rng.choice(lay.records)
    what = rng.random()
    if what < 0.4:
        return f"record type {rtype} size " + _set(rng, buf, off + 6, 2)
    if what < 0.55:
        return f"record type {rtype} type " + _set(rng, buf, off, 4)
    if what < 0.65:
        return f"record type {rtype} misc " + _set(rng, buf, off + 4, 2)
    if rsize <= 16:
        return "record (too small)"
    return f"record type {rtype} body " + _set(rng, buf, off + 8 + 8 * rng.randrange(
        (rsize - 8) // 8), 8)


def m_sample(rng, buf, lay):
    samples = [r for r in lay.records if r[1] == 9]
    if not samples or not lay.sample_fields:
        return m_record(rng, buf, lay)
    off, _t, rsize = rng.choice(samples)
    name = rng.choice(sorted(lay.sample_fields))
    at = lay.sample_fields[name]
    if at + 8 > rsize:
        return "sample field outside this record"
    return f"sample {name} " + _set(rng, buf, off + at, 4 if name == "raw_size" else 8)


def m_feature(rng, buf, lay):
    if lay.pipe or lay.n_features == 0 or lay.feature_table + 16 * lay.n_features > len(buf):
        return m_header(rng, buf, lay)
    k = rng.randrange(lay.n_features)
    entry = lay.feature_table + 16 * k
    if rng.random() < 0.5:
        return f"feature {k} table " + _set(rng, buf, entry + 8 * rng.randrange(2), 8)
    start, size = struct.unpack_from("<2Q", buf, entry)
    if not size or start + size > len(buf):
        return "feature (empty)"
    return f"feature {k} data " + _set(rng, buf, start + 4 * rng.randrange(max(1, size // 4)), 4)


def m_compressed(rng, buf, lay):
    chunks = [r for r in lay.records if r[1] in (81, 83)]
    if not chunks:
        return m_record(rng, buf, lay)
    off, _t, rsize = rng.choice(chunks)
    if rng.random() < 0.3:
        return "compressed size " + _set(rng, buf, off + 6, 2)
    for _ in range(rng.randint(1, 4)):
        buf[off + 8 + rng.randrange(rsize - 8)] = rng.randrange(256)
    return f"compressed bytes @{off:#x}"


def m_truncate(rng, buf, lay):
    if not lay.pipe and rng.random() < 0.3:
        U64.pack_into(buf, 48, 0)  # header never finalised
        cut = rng.randrange(104, len(buf) + 1)
        del buf[cut:]
        return f"data size 0, cut at {cut}"
    cut = rng.randrange(len(buf) + 1)
    del buf[cut:]
    return f"cut at {cut}"


def m_bytes(rng, buf, lay):
    if not buf:
        return "empty"
    what = rng.random()
    at = rng.randrange(len(buf))
    if what < 0.5:
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return "bit flips"
    if what < 0.7:
        n = rng.randint(1, 64)
        buf[at:at + n] = bytes(rng.randrange(256) for _ in range(n))[:len(buf) - at]
        return f"random bytes @{at:#x}"
    if what < 0.85:
        n = rng.randint(1, 256)
        del buf[at:at + n]
        return f"delete {n} @{at:#x}"
    src = rng.randrange(len(buf))
    buf[at:at] = buf[src:src + rng.randint(8, 512)]
    return f"duplicate @{src:#x} -> {at:#x}"


PERF_MUTATORS = ((m_header, 2), (m_attr, 3), (m_record, 4), (m_sample, 4), (m_feature, 2),
                 (m_compressed, 2), (m_truncate, 1), (m_bytes, 3))


def mutate_elf(rng: random.Random, buf: bytearray, sections) -> str:
    if len(buf) < 64:
        return "elf too small"
    e_shoff, e_phoff = U64.unpack_from(buf, 0x28)[0], U64.unpack_from(buf, 0x20)[0]
    shnum, phnum = U16.unpack_from(buf, 0x3C)[0], U16.unpack_from(buf, 0x38)[0]
    what = rng.random()
    if what < 0.15:
        off, width = rng.choice(((0x20, 8), (0x28, 8), (0x36, 2), (0x38, 2), (0x3A, 2),
                                 (0x3C, 2), (0x3E, 2), (4, 2)))
        return "elf header " + _set(rng, buf, off, width)
    if what < 0.35 and shnum:
        k = rng.randrange(shnum)
        off, width = rng.choice(((0, 4), (4, 4), (16, 8), (24, 8), (32, 8), (32, 8), (40, 4),
                                 (44, 4), (56, 8)))
        return f"section header {k} " + _set(rng, buf, e_shoff + 64 * k + off, width)
    if what < 0.45 and phnum:
        k = rng.randrange(phnum)
        off = rng.choice((0, 8, 16, 32, 40, 48))
        return f"program header {k} " + _set(rng, buf, e_phoff + 56 * k + off, 8 if off else 4)
    debug = [s for s in sections if s[0].startswith((".debug", ".eh_frame", ".symtab",
                                                     ".dynsym", ".strtab", ".gnu_debuglink"))]
    if not debug:
        return "elf (no section to mutate)"
    name, start, size = rng.choice(debug)
    at = start + rng.randrange(size)
    if what < 0.6 and name == ".debug_info":
        # a small DIE reference: likely points back into the same CU, making cycles
        U32.pack_into(buf, min(at, len(buf) - 4), rng.randrange(0x0B, 0x400))
        return f"{name} ref @{at:#x}"
    if what < 0.8:
        width = rng.choice((2, 4, 8))
        return f"{name} " + _set(rng, buf, min(at, len(buf) - width), width)
    for _ in range(rng.randint(1, 8)):
        buf[start + rng.randrange(size)] = rng.randrange(256)
    return f"{name} bytes"


def mutate_text(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    lines = text.split(b"\n")
    what = rng.random()
    k = rng.randrange(len(lines))
    if what < 0.15:
        lines[k] = b"%x %s" % (rng.choice(_INTERESTING), rng.choice((b"T", b"t", b"", b"?")))
    elif what < 0.3:
        fields = lines[k].split(b" ")
        fields[rng.randrange(len(fields))] = rng.choice((b"", b"zz", b"-1", b"0x", b"\0",
                                                         b"ffffffffffffffffff"))
        lines[k] = b" ".join(fields)
    elif what < 0.4:
        lines[k] = b"x" * rng.choice((1000, 70000))
    elif what < 0.5:
        lines[k] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    elif what < 0.65:
        rng.shuffle(lines)
        return b"\n".join(lines), "shuffled lines"
    elif what < 0.75:
        del lines[k:]
        return b"\n".join(lines)[:-rng.randint(0, 5) or None], f"cut at line {k}"
    elif what < 0.85:
        lines.insert(k, lines[rng.randrange(len(lines))])
    else:
        return b"", "empty"
    return b"\n".join(lines), f"line {k}"


# ------------------------------------------------------------------------------ cases


def _fill_cache(argv: list[str], seed_data: bytes, workdir: Path, cache: Path) -> None:
    """Populate the persistent cache at `cache` with a clean run of the seed (same --app and
    files), so that a case can damage real entries."""
    from perfparser_py import cli

    clean = workdir / "clean.data"
    clean.write_bytes(seed_data)
    argv = [*argv, "--input", str(clean), "--output", os.devnull]
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cli.main(argv)
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved
        clean.unlink()


_CACHE_HEAD = struct.Struct("<8sIII")  # perfparser_py/cache.py's entry header


def _resigned(raw: bytes, change) -> bytes:
    """A cache entry whose record is change(record), with a correct CRC: what passes every
    check but the record's shape."""
    import marshal
    import zlib

    import lz4.block

    magic, fmt, _crc, klen = _CACHE_HEAD.unpack_from(raw)
    start = _CACHE_HEAD.size + klen
    body = lz4.block.compress(marshal.dumps(change(marshal.loads(lz4.block.decompress(
        raw[start:])))))
    return _CACHE_HEAD.pack(magic, fmt, zlib.crc32(body), klen) + raw[_CACHE_HEAD.size:start] + body


def _ill_typed(rng: random.Random, record: dict) -> dict:
    """`record` with one value, or the values of one of its tables, of another type."""
    if not record:
        return {"x": 1}
    key = rng.choice(sorted(record))
    wrong = rng.choice(("str", 1, -1, None, (), (1, 2), [b"x"], {1: "y"}, b"\0", 2.5, True))
    value = record[key]
    if isinstance(value, dict) and value and rng.random() < 0.7:
        table = dict(value)
        table[rng.choice(sorted(table))] = wrong
        record[key] = table
    elif isinstance(value, tuple) and value and rng.random() < 0.7:
        items = list(value)
        items[rng.randrange(len(items))] = wrong
        record[key] = tuple(items)
    else:
        record[key] = wrong
    return record


def mutate_cache(rng: random.Random, cache: Path) -> str:
    """Damage the persistent cache directory under `cache` (XDG_CACHE_HOME)."""
    root = cache / "perfparser-py"
    # regular entries only, and not one an earlier mutation made huge
    entries = sorted(p for p in root.glob("*.ppc") if p.is_file() and not p.is_symlink()
                     and p.stat().st_size < 64 << 20) if root.is_dir() else []
    what = rng.random()
    if what < 0.1 and root.is_dir():
        os.chmod(root, rng.choice((0o777, 0o770, 0o757, 0o700)))
        return f"cache directory mode {stat.S_IMODE(os.stat(root).st_mode):o}"
    if not entries:
        return "cache (no entries)"
    path = rng.choice(entries)
    raw = path.read_bytes()
    if what < 0.45:
        try:
            path.write_bytes(_resigned(raw, lambda r: _ill_typed(rng, r)))
        except Exception:  # noqa: BLE001 - an earlier mutation already broke the entry
            return f"cache {path.name[:8]} (no record left to retype)"
        return f"cache {path.name[:8]} ill-typed (well signed)"
    if what < 0.55:
        path.unlink()
        os.mkfifo(path)
        return f"cache {path.name[:8]} FIFO"
    if what < 0.65:
        path.unlink()
        os.symlink(rng.choice(("/dev/zero", "/dev/stdin", "/proc/self/fd/1", str(entries[0]))),
                   path)
        return f"cache {path.name[:8]} symlink"
    if what < 0.7:
        with open(path, "r+b") as f:
            f.truncate(rng.choice((100 << 20, 1 << 30)))  # sparse: past the size cap
        return f"cache {path.name[:8]} huge"
    if what < 0.8:
        cut = rng.randrange(len(raw))
        path.write_bytes(raw[:cut])
        return f"cache {path.name[:8]} cut at {cut}"
    data = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    path.write_bytes(data)
    return f"cache {path.name[:8]} bytes"


@dataclass
class Case:
    argv: list[str]
    stdin: str | None
    mutations: list[str]
    workdir: Path
    cache: Path | None = None  # XDG_CACHE_HOME of this case when it damages the cache


def make_case(seeds: list[Seed], seed: int, index: int, workdir: Path) -> Case:
    """Write the input files of execution `index` into workdir; deterministic."""
    rng = random.Random(f"{seed}:{index}")
    s = rng.choice(seeds)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    buf = bytearray(s.data)
    mutations = [s.name]
    aux_only = rng.random() < 0.25 and (s.elf or s.kallsyms or s.perf_map)
    if not aux_only:
        mutators, weights = zip(*PERF_MUTATORS, strict=True)
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
            mutations.append(rng.choices(mutators, weights)[0](rng, buf, s.lay))
            if len(buf) != len(s.data):
                break  # truncated: the seed's layout no longer describes the buffer
    (workdir / "perf.data").write_bytes(buf)
    argv = ["--sysroot", str(CORPUS / "sysroot") + "/",
            "--debug", str(CORPUS / "sysroot" / "usr" / "lib" / "debug"), "--max-frames", "1024"]
    if s.app is not None:
        app = s.app
        if s.elf and (aux_only or rng.random() < 0.2):
            app = workdir / "app"
            app.mkdir()
            elf = bytearray((s.app / s.elf).read_bytes())
            for _ in range(rng.randint(1, 3)):
                mutations.append(mutate_elf(rng, elf, s.elf_sections))
            (app / s.elf).write_bytes(elf)
        argv += ["--app", str(app)]
    kallsyms = "/dev/null"
    if s.kallsyms is not None:
        text = s.kallsyms
        if aux_only and rng.random() < 0.5:
            text, what = mutate_text(rng, text)
            mutations.append("kallsyms " + what)
        (workdir / "kallsyms").write_bytes(text)
        kallsyms = str(workdir / "kallsyms")
    argv += ["--kallsyms", kallsyms]
    if s.perf_map is not None:
        name, text = s.perf_map
        if aux_only and rng.random() < 0.7:
            text, what = mutate_text(rng, text)
            mutations.append("perf-map " + what)
        (workdir / "maps").mkdir()
        (workdir / "maps" / name).write_bytes(text)
        argv += ["--perf-map-path", str(workdir / "maps")]
    cache = None
    crng = random.Random(f"{seed}:{index}:cache")  # its own: earlier indices replay unchanged
    if s.app is not None and crng.random() < CACHE_SHARE:
        cache = workdir / "cache"
        _fill_cache(argv, s.data, workdir, cache)
        for _ in range(crng.randint(1, 3)):
            mutations.append(mutate_cache(crng, cache))
    argv += ["--output", str(workdir / "out.qperf")]
    stdin = None
    if rng.random() < 0.25:
        stdin = str(workdir / "perf.data")
    else:
        argv += ["--input", str(workdir / "perf.data")]
    return Case(argv, stdin, mutations, workdir, cache)


# ------------------------------------------------------------------------------ invariants


def check(code: int | None, stderr: str, stdout: bytes, output: bytes) -> str | None:
    """None if the run kept every invariant, else what went wrong."""
    from perfparser_py import protocol as P

    if "Traceback" in stderr:
        return "traceback on stderr"
    if "internal error" in stderr:
        return "internal error: " + next(
            line for line in stderr.splitlines() if "internal error" in line)
    if code not in EXIT_CODES:
        return f"undocumented exit code {code}"
    if stdout:
        return f"diagnostics on stdout: {stdout[:200]!r}"
    try:
        stream = P.read_stream(output)
    except Exception as exc:
        return f"invalid output stream: {type(exc).__name__}: {exc}"
    if stream.trailing_bytes:
        return f"output ends inside a message ({len(stream.trailing_bytes)} bytes)"
    locations: set[int] = set()
    for m in stream.messages:
        if isinstance(m, P.Location):
            if m.parent_location_id != -1 and m.parent_location_id not in locations:
                return f"location {m.id} has undefined parent {m.parent_location_id}"
            locations.add(m.id)
        elif isinstance(m, P.Sample | P.TracePointSample):
            missing = [f for f in m.frames if f not in locations]
            if missing:
                return f"sample uses undefined locations {missing[:5]}"
    return None


# ------------------------------------------------------------------------------ execution


def _alarm(_signum, _frame):
    raise FuzzTimeout


def run_case(case: Case, time_limit: float = TIME_LIMIT) -> tuple[str | None, float]:
    """Run the CLI in this process on `case`; (failure or None, seconds)."""
    from perfparser_py import cli

    err, out = io.StringIO(), io.TextIOWrapper(io.BytesIO())  # main() needs stdout.buffer
    saved_stdin = None
    if case.stdin is not None:
        saved_stdin = os.dup(0)
        fd = os.open(case.stdin, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
    saved_cache = os.environ.get("XDG_CACHE_HOME")
    if case.cache is not None:
        os.environ["XDG_CACHE_HOME"] = str(case.cache)
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    code: int | None = None
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = cli.main(case.argv)
    except FuzzTimeout:
        return f"timeout after {time_limit} s", time.monotonic() - start
    except BaseException as exc:  # anything escaping main is a crash
        return ("exception escaped main: " + "".join(
            traceback.format_exception_only(type(exc), exc)).strip()), time.monotonic() - start
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if saved_stdin is not None:
            os.dup2(saved_stdin, 0)
            os.close(saved_stdin)
        if saved_cache is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved_cache
    elapsed = time.monotonic() - start
    out_path = case.workdir / "out.qperf"
    output = out_path.read_bytes() if out_path.exists() else b""
    out.flush()
    return check(code, err.getvalue(), out.buffer.getvalue(), output), elapsed


def _worker(conn, seed: int, workdir: Path) -> None:
    os.environ.update(PERFPARSER_PROTOCOL="current", TMPDIR=str(workdir),
                      XDG_CACHE_HOME=str(workdir / "cache"), HOME=str(workdir))
    os.environ.pop("PERFPARSER_TRACEBACK", None)
    import perfparser_py.pipeline  # noqa: F401 - import before measuring the baseline

    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_LIMIT, resource.RLIM_INFINITY))
    seeds = load_seeds()
    while True:
        index = conn.recv()
        if index is None:
            return
        case = make_case(seeds, seed, index, workdir / "case")
        failure, elapsed = run_case(case)
        conn.send((index, failure, elapsed, case.mutations))


@dataclass
class Report:
    executions: int = 0
    failures: list[tuple[int, str, list[str]]] = field(default_factory=list)
    slowest: float = 0.0
    corpus: int = 0

    def summary(self) -> str:
        return (f"fuzz: {self.executions} executions, corpus {self.corpus} inputs, "
                f"{len(self.failures)} failures")


def save_failure(seeds: list[Seed], seed: int, index: int, what: str, out_dir: Path) -> Path:
    """Regenerate execution `index` into out_dir/<index> with a README of how to run it."""
    target = out_dir / f"{index}"
    case = make_case(seeds, seed, index, target)
    (target / "out.qperf").unlink(missing_ok=True)
    (target / "README").write_text(
        f"seed {seed} index {index}: {what}\nmutations: {case.mutations}\n"
        f"argv: {case.argv}\nstdin: {case.stdin}\n"
        + (f"XDG_CACHE_HOME: {case.cache}\n" if case.cache else ""))
    return target


def fuzz(seconds: float, seed: int = 1, workers: int = 2, max_execs: int | None = None,
         out_dir: Path | None = None, log=print) -> Report:
    """Run executions 0, 1, 2, ... in `workers` processes until time or max_execs is used up."""
    ctx = multiprocessing.get_context("fork")
    base = Path(os.environ.get("TMPDIR") or "/tmp") / f"perfparser-fuzz-{os.getpid()}"
    seeds = load_seeds()
    report = Report(corpus=len(seeds))
    deadline = time.monotonic() + seconds
    next_index = 0
    slots: dict[int, tuple] = {}  # slot -> (process, conn, index in flight, sent at, count)

    def start(slot: int):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, seed, base / f"w{slot}"), daemon=True)
        p.start()
        child.close()
        return [p, parent, None, 0.0, 0]

    def send(slot: int) -> None:
        nonlocal next_index
        st = slots[slot]
        if time.monotonic() >= deadline or (max_execs is not None and next_index >= max_execs):
            st[1].send(None)
            st[0].join(5)
            del slots[slot]
            return
        if st[4] >= RESTART_EVERY:
            st[1].send(None)
            st[0].join(5)
            st = slots[slot] = start(slot)
        st[2], st[3] = next_index, time.monotonic()
        st[4] += 1
        next_index += 1
        st[1].send(st[2])

    def fail(index: int, what: str, mutations: list[str]) -> None:
        report.failures.append((index, what, mutations))
        where = save_failure(seeds, seed, index, what, out_dir) if out_dir else None
        log(f"FAIL #{index}: {what} {mutations}" + (f" -> {where}" if where else ""))

    try:
        for slot in range(workers):
            slots[slot] = start(slot)
            send(slot)
        while slots:
            conns = {st[1]: slot for slot, st in slots.items()}
            ready = multiprocessing.connection.wait(list(conns), timeout=1.0)
            for conn in ready:
                slot = conns[conn]
                st = slots[slot]
                try:
                    index, failure, elapsed, mutations = conn.recv()
                except (EOFError, OSError):
                    st[0].join(1)
                    fail(st[2], f"worker died (exit {st[0].exitcode})", [])
                    report.executions += 1
                    slots[slot] = start(slot)
                    send(slot)
                    continue
                report.executions += 1
                report.slowest = max(report.slowest, elapsed)
                if failure:
                    fail(index, failure, mutations)
                send(slot)
            for slot, st in list(slots.items()):
                if st[2] is not None and time.monotonic() - st[3] > HARD_TIMEOUT:
                    st[0].kill()
                    st[0].join(5)
                    fail(st[2], f"hang: no answer in {HARD_TIMEOUT} s", [])
                    report.executions += 1
                    slots[slot] = start(slot)
                    send(slot)
    finally:
        for st in slots.values():
            st[0].kill()
        shutil.rmtree(base, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=150.0, help="time budget (default 150)")
    ap.add_argument("--seed", type=int, default=1, help="deterministic seed (default 1)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-execs", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"),
                    help="where failing inputs are written (default ./fuzz-failures)")
    ap.add_argument("--replay", type=int, default=None, metavar="INDEX",
                    help="regenerate and run one execution in this process, verbosely")
    args = ap.parse_args(argv)
    if args.replay is not None:
        where = save_failure(load_seeds(), args.seed, args.replay, "replay", args.out)
        print(where.joinpath("README").read_text(), end="")
        return 0
    report = fuzz(args.seconds, args.seed, args.workers, args.max_execs, args.out)
    print(report.summary() + f" (slowest {report.slowest:.2f} s)")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
