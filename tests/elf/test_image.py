"""ElfImage against nm/readelf/pyelftools/objdump on corpus and freshly built binaries."""

from __future__ import annotations

import random
import re
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from perfparser_py.demangle import demangle
from perfparser_py.unwind.rules import cfi_for_image
from perfparser_py.elf.image import ElfImage
from tests import aarch64_programs, arm_programs, plt_programs


def nm_symbols(path: Path) -> list[tuple[int, int, str, str]]:
    """(value, size, type letter, name) of every defined symbol nm lists."""
    out = subprocess.run(["nm", "--defined-only", "-S", str(path)],
                         capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(maxsplit=3)
        if len(parts) == 4:
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
        elif len(parts) == 3:
            syms.append((int(parts[0], 16), 0, parts[1], parts[2]))
    return syms


def check_symbols_like_nm(image: ElfImage, nm_path: Path, samples: int = 200) -> int:
    """Sampled functions resolve at their start, middle and just past their end."""
    syms = nm_symbols(nm_path)
    by_value: dict[int, set[str]] = {}
    for value, _size, _t, name in syms:
        # nm -D appends @VERSION; a .symtab name may contain it literally.
        by_value.setdefault(value, set()).update({demangle(name), demangle(name.split("@")[0])})
    values = sorted(by_value)
    funcs = [s for s in syms if s[2] in "Tt" and s[1] > 0]
    random.Random(1).shuffle(funcs)
    checked = 0
    for value, size, _t, name in funcs[:samples]:
        hit = image.symbol_at(value)
        assert hit is not None, name
        assert hit[1] == value and hit[0] in by_value[value], (name, hit)
        # Middle of the function, when no other symbol starts inside it.
        i = values.index(value)
        if i + 1 == len(values) or values[i + 1] >= value + size:
            mid = image.symbol_at(value + size // 2)
            assert mid is not None and mid[1] == value and mid[2] > 0, (name, mid)
            after = image.symbol_at(value + size)
            assert after is None or after[1] != value or after[2] != size
        checked += 1
    return checked


def test_symbols_of_recorded_binaries(corpus_dir: Path) -> None:
    binaries = [corpus_dir / "recorded/sharedlib/libhot.so",
                corpus_dir / "recorded/sharedlib/libuser",
                corpus_dir / "recorded/fp/hotloop",
                corpus_dir / "upstream/vector_static_gcc" / "vector_static_gcc_v9.1.0"]
    total = 0
    for path in binaries:
        if not path.exists():
            path = next(path.parent.glob("vector_static_gcc*"))
        image = ElfImage.open(str(path))
        assert image is not None
        total += check_symbols_like_nm(image, path, samples=60)
    assert total > 60


def test_symbols_of_libc_with_debug_file(corpus_dir: Path) -> None:
    sysroot = corpus_dir / "sysroot"
    libc = ElfImage.open(str(sysroot / "usr/lib/x86_64-linux-gnu/libc.so.6"))
    debug_path = next((sysroot / "usr/lib/debug/.build-id").rglob("*.debug"))
    debug = ElfImage.open(str(debug_path))
    assert libc is not None and debug is not None
    assert libc.build_id == debug.build_id and len(libc.build_id or b"") == 20
    libc.attach_debug(debug)
    assert check_symbols_like_nm(libc, debug_path) == 200
    # A local function that .dynsym does not have.
    local = next(s for s in nm_symbols(debug_path) if s[2] == "t" and s[1] > 16)
    assert libc.symbol_at(local[0] + 1)[1] == local[0]


def test_code_is_the_executable_segments(corpus_dir: Path) -> None:
    """in_code: an address in ld.so's .text is code; one in .gnu.hash (its read-only first
    segment, where a pointer ld.so leaves on the stack points) is not; every section
    pyelftools reads agrees with its segment's PF_X."""
    path = corpus_dir / "sysroot/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    image = ElfImage.open(str(path))
    assert image is not None
    with open(path, "rb") as f:
        elf = ELFFile(f)
        loads = [(s["p_vaddr"], s["p_memsz"], bool(s["p_flags"] & 1))
                 for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        sections = {s.name: (s["sh_addr"], s["sh_size"]) for s in elf.iter_sections()
                    if s["sh_addr"] and s["sh_size"]}
    assert image.in_code(sections[".text"][0]) and not image.in_code(sections[".gnu.hash"][0])
    for addr, size in sections.values():
        for at in (addr, addr + size - 1):
            held = [x for v, m, x in loads if v <= at < v + m]
            assert image.in_code(at) == (held == [True])
    assert not image.in_code(max(v + m for v, m, _x in loads))  # past every segment


def test_dynsym_only_libstdcxx(corpus_dir: Path) -> None:
    path = corpus_dir / "sysroot/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"
    image = ElfImage.open(str(path))
    assert image is not None
    syms = subprocess.run(["nm", "-D", "--defined-only", "-S", str(path)], capture_output=True,
                          text=True, check=True).stdout
    funcs = [line.split() for line in syms.splitlines()]
    funcs = [f for f in funcs if len(f) == 4 and f[2] in "TW" and int(f[1], 16) > 0]
    for value, _size, _t, _name in funcs[:100]:
        hit = image.symbol_at(int(value, 16))
        assert hit is not None and hit[1] == int(value, 16)
    named = {demangle(f[3].split("@")[0]) for f in funcs}
    assert any(image.symbol_at(int(f[0], 16))[0] in named for f in funcs[:10])


@pytest.mark.parametrize("name", ["i386", "i386pie"])
def test_32_bit(built: dict[str, Path], name: str) -> None:
    image = ElfImage.open(str(built[name]))
    assert image is not None and not image.is_64 and image.machine == "i386"
    assert len(image.build_id or b"") == 20
    assert check_symbols_like_nm(image, built[name]) == 2  # g and _start
    for prot, vaddr, off in kernel_mappings(built[name]):
        base = 0 if name == "i386" else 0x56555000
        assert image.load_bias(base + vaddr, off, prot) == base


def test_minidebuginfo_symbols(built: dict[str, Path]) -> None:
    image = ElfImage.open(str(built["mini"]))
    assert image is not None and image.section(".symtab") is None
    for value, size, _t, name in nm_symbols(built["pie"]):
        if name in ("helper", "g", "main"):
            assert image.symbol_at(value + size - 1) == (name, value, size)


def test_plt_and_section_fallback_names(corpus_dir: Path, built: dict[str, Path]) -> None:
    static = corpus_dir / "upstream/vector_static_clang/vector_static_clang_v8.0.1"
    image = ElfImage.open(str(static))
    assert image.symbol_at(0x401060) is None
    init = ELFFile(open(static, "rb")).get_section_by_name(".init")["sh_addr"]
    assert image.fallback_name(init + 1) == f"<.init+{init + 1:x}>"
    assert image.fallback_name(image.symbol_at(0x401200)[1] if image.symbol_at(0x401200)
                               else 0x401200) is None  # .text gets no fallback name
    image = ElfImage.open(str(built["pie"]))
    dis = subprocess.run(["objdump", "-d", "-j", ".plt", str(built["pie"])],
                         capture_output=True, text=True, check=True).stdout
    plt = {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(\w+@plt)>:", dis, re.M)}
    assert {"puts@plt", "printf@plt"} <= set(plt.values())
    for addr, name in plt.items():
        assert image.fallback_name(addr + 4) == name
    first = min(plt) - 16  # PLT0, the resolver stub, has no name
    assert image.fallback_name(first) == f"<.plt+{first:x}>"
    init = ELFFile(open(built["pie"], "rb")).get_section_by_name(".init")["sh_addr"]
    assert image.fallback_name(init + 1) == f"<.init+{init + 1:x}>"


def _functions(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the sized functions in `path`'s symbol table."""
    symtab = ELFFile(open(path, "rb")).get_section_by_name(".symtab")
    return {sym.name: (sym["st_value"], sym["st_size"]) for sym in symtab.iter_symbols()
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"]}


def test_a_stripped_programs_functions_are_its_fdes(built: dict[str, Path]) -> None:
    """Without .symtab (objcopy --strip-all), each function is still the code its FDE
    covers: named after its start, with the extent its symbol had before the strip."""
    stripped = ElfImage.open(str(built["stripped"]))
    funcs = _functions(built["pie"])
    for name in ("g", "main"):
        start, size = funcs[name]
        for vaddr in (start, start + size // 2, start + size - 1):
            assert stripped.symbol_at(vaddr) is None
            assert stripped.fallback_name(vaddr) is None
            assert stripped.unnamed_function(vaddr) == (f"<.text+{start:x}>", start, size)
    # a section fallback name comes first: the PLT has an FDE, its entries keep their names
    init = ELFFile(open(built["stripped"], "rb")).get_section_by_name(".init")["sh_addr"]
    assert stripped.fallback_name(init) == f"<.init+{init:x}>"


def test_a_stripped_programs_frames_group_by_function(built: dict[str, Path]) -> None:
    """Two addresses of one function of a stripped program share its symbol, which hotspot
    can disassemble (its start and size); another function has its own."""
    import io

    from perfparser_py.compare import logical_frames
    from perfparser_py.emit import Emitter
    from perfparser_py.kernel.symbols import KernelSymbols
    from perfparser_py.protocol import StreamWriter, read_stream
    from perfparser_py.session import Mapping
    from perfparser_py.symbolize import Symbolizer
    from perfparser_py.textdump import StreamState

    out = io.BytesIO()
    writer = StreamWriter(out, "current")
    writer.header()
    sym = Symbolizer(Emitter(writer), KernelSymbols(writer, "/dev/null", "/", []), None)
    image = ElfImage.open(str(built["stripped"]))
    funcs = _functions(built["pie"])
    g, main = funcs["g"], funcs["main"]
    base = 0x555555554000
    mapping = Mapping(base, base + 0x10000, 0, b"/bin/p", str(built["stripped"]), image, base,
                      base)
    addrs = (g[0] + 1, g[0] + g[1] - 1, main[0] + 2)
    ids = [sym._in_image(image, mapping, base + a, 42, False, -1, -1, -1) for a in addrs]
    writer.flush()
    state = StreamState.from_messages(read_stream(out.getvalue(), "current").messages)
    names = [[f[0] for f in logical_frames(state, [lid])] for lid in ids]
    assert names == [[f"<.text+{g[0]:x}>"], [f"<.text+{g[0]:x}>"], [f"<.text+{main[0]:x}>"]]
    parents = [state.location(lid).parent_location_id for lid in ids]
    assert parents[0] == parents[1] != parents[2]
    symbols = [state.symbol(p) for p in parents]
    assert [(x.rel_addr, x.size) for x in symbols] == [g, g, main]
    # the names only say where the functions are: the end of the run still counts these
    # frames as unresolved, and says to install the debug package (diagnostics.py)
    assert all(sym.emit.unnamed.get(lid) == (-1, -1, False) for lid in ids)


def kernel_mappings(path: Path) -> list[tuple[int, int, int]]:
    """(PROT_* bits, page-aligned vaddr, page-aligned file offset) of each PT_LOAD."""
    with open(path, "rb") as f:
        segs = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]
        prot = [(1 if s["p_flags"] & 4 else 0) | (2 if s["p_flags"] & 2 else 0)
                | (4 if s["p_flags"] & 1 else 0) for s in segs]
        return [(p, s["p_vaddr"] & ~0xFFF, s["p_offset"] & ~0xFFF) for p, s in zip(prot, segs, strict=True)]


@pytest.mark.parametrize("name", ["pie", "nosep", "exec"])
def test_load_bias_for_every_segment(built: dict[str, Path], name: str) -> None:
    image = ElfImage.open(str(built[name]))
    base = 0 if name == "exec" else 0x7F0000000000
    maps = kernel_mappings(built[name])
    deltas = {s[0] - s[2] for s in image.segments}
    if name == "nosep":
        assert len(maps) == 2 and len(deltas) == 2  # data segment shares the text's last page
    for prot, vaddr, off in maps:
        assert image.load_bias(base + vaddr, off, prot) == base
        if prot & 4:  # without prot, an executable mapping still resolves
            assert image.load_bias(base + vaddr, off) == base
    lo, hi = image.span()
    assert lo == min(s[0] for s in image.segments) and hi > lo


def synthetic_elf(segments: list[tuple[int, int, int, int]], etype: int = 3) -> bytes:
    """A 64-bit little-endian ELF with only program headers (vaddr, memsz, offset, filesz)."""
    phoff = 64
    size = max(off + filesz for _v, _m, off, filesz in segments)
    hdr = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack(
        "<HHIQQQIHHHHHH", etype, 62, 1, 0, phoff, 0, 0, 64, 56, len(segments), 64, 0, 0)
    phdrs = b"".join(struct.pack("<IIQQQQQQ", 1, 5, off, vaddr, vaddr, filesz, memsz, 0x1000)
                     for vaddr, memsz, off, filesz in segments)
    data = bytearray(max(size, len(hdr) + len(phdrs)))
    data[:len(hdr)] = hdr
    data[phoff:phoff + len(phdrs)] = phdrs
    for i in range(len(hdr) + len(phdrs), len(data)):
        data[i] = i & 0xFF
    return bytes(data)


def test_load_bias_with_differing_offset_deltas() -> None:
    # Three segments whose vaddr - offset differ (0, 0x1000, 0x201000), the second and
    # third starting inside the previous segment's last page.
    segs = [(0x0, 0x1800, 0x0, 0x1800), (0x2800, 0x3000, 0x1800, 0x3000),
            (0x205800, 0x900, 0x4800, 0x800)]
    image = ElfImage.from_bytes("synthetic", synthetic_elf(segs))
    assert image is not None and image.segments == segs
    bias = 0x555555554000
    for vaddr, _memsz, off, _filesz in segs:
        assert image.load_bias(bias + (vaddr & ~0xFFF), off & ~0xFFF) == bias
        assert image.load_bias(bias + (vaddr & ~0xFFF), off & ~0xFFF, 5) == bias
    # A mapping that starts in the middle of a segment (split by mprotect).
    assert image.load_bias(bias + 0x4000, 0x3000) == bias  # file 0x3000 is vaddr 0x4000
    assert image.read(0x2800, 4) == bytes(i & 0xFF for i in range(0x1800, 0x1804))
    assert image.read(0x205800 + 0x7FF, 2) is None  # runs past p_filesz


def test_load_bias_of_an_executable_mapped_twice() -> None:
    """ET_EXEC is placed like any ELF: by the PT_LOAD covering the mapping's file offset.
    The kernel's mappings at the link address get bias 0; a second mapping of the text at
    another address, from a file offset inside the segment (pgoff != p_offset, as V8 maps
    node's builtins), gets its own bias."""
    segs = [(0x400000, 0x800, 0x0, 0x800), (0x401000, 0x6000, 0x1000, 0x6000),
            (0x408000, 0x1000, 0x7000, 0x1000)]
    image = ElfImage.from_bytes("exec", synthetic_elf(segs, etype=2))
    assert image is not None and image.elf_type == 2
    for vaddr, _memsz, off, _filesz in segs:
        assert image.load_bias(vaddr, off, 5) == 0
    assert image.load_bias(0x403000, 0x3000) == 0  # a piece split off by mprotect
    second = 0x7F1234560000
    bias = image.load_bias(second, 0x4000, 5)  # file 0x4000 is vaddr 0x404000
    assert bias == second - 0x404000
    assert image.read(second + 0x10 - bias, 4) == bytes(i & 0xFF for i in range(0x4010, 0x4014))
    assert image.load_bias(second, 0x9000) is None  # no PT_LOAD covers the offset


def test_read_matches_file(built: dict[str, Path]) -> None:
    image = ElfImage.open(str(built["pie"]))
    raw = built["pie"].read_bytes()
    for vaddr, _memsz, off, filesz in image.segments:
        assert image.read(vaddr, min(filesz, 64)) == raw[off:off + min(filesz, 64)]


@pytest.mark.parametrize("name", ["zlib", "zstd", "zgnu"])
def test_compressed_sections(built: dict[str, Path], name: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    subprocess.run(["objcopy", "--decompress-debug-sections", str(built[name]), str(plain)],
                   check=True)
    with open(plain, "rb") as f:
        expected = ELFFile(f).get_section_by_name(".debug_info").data()
    image = ElfImage.open(str(built[name]))
    addr, data = image.section(".debug_info")
    assert addr == 0 and bytes(data) == expected


def test_build_ids_and_debuglink(built: dict[str, Path]) -> None:
    assert len(ElfImage.open(str(built["md5"])).build_id) == 16
    assert ElfImage.open(str(built["short"])).build_id == bytes.fromhex("0102030405060708")
    stripped = ElfImage.open(str(built["stripped"]))
    assert stripped.debuglink is not None and stripped.debuglink[0] == "debug"
    assert stripped.symbol_at(0x1000) is None or stripped.section(".symtab") is None
    debug = ElfImage.open(str(built["debug"]))
    stripped.attach_debug(debug)
    assert stripped.section(".debug_info") is not None
    main = next(s for s in nm_symbols(built["pie"]) if s[3] == "main")
    assert stripped.symbol_at(main[0] + 1) == ("main", main[0], main[1])


def test_not_elf_and_missing(tmp_path: Path) -> None:
    (tmp_path / "text").write_text("hello")
    assert ElfImage.open(str(tmp_path / "text")) is None
    assert ElfImage.open(str(tmp_path / "missing")) is None
    assert ElfImage.open(str(tmp_path)) is None


def _arm_library(tmp: Path) -> Path:
    """A 32-bit Arm library with its exception-handling index, inline and .ARM.extab entries."""
    (tmp / "a.cc").write_text("extern int ext(int); struct G { ~G(); };\n"
                              "int f(int x) { G g; return ext(x) + ext(x + 1); }\n"
                              "int h(int x) { int a[64]; a[x & 63] = ext(x); return a[3]; }\n")
    subprocess.run(["clang++", "--target=armv7-linux-gnueabihf", "-O2", "-fPIC", "-c", "a.cc"],
                   cwd=tmp, check=True)
    subprocess.run(["ld.lld", "-shared", "a.o", "-o", "liba.so"], cwd=tmp, check=True)
    return tmp / "liba.so"


@pytest.mark.parametrize("machine", ["x86_64", "aarch64", "arm"])
def test_hostile_elf_never_raises(built: dict[str, Path], tmp_path: Path, machine: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    good = (built["pie"] if machine == "x86_64" else _arm_library(tmp_path) if machine == "arm"
            else aarch64_programs.calls_through_plt(tmp_path, "lld-bti", "shared")).read_bytes()
    rng = random.Random(7)
    path = tmp_path / "bad"
    variants = [good[:n] for n in (16, 60, 64, 200, 0x1000, len(good) // 2)]
    for _ in range(60):
        data = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            pos = rng.choice([rng.randrange(64), rng.randrange(len(data))])
            data[pos] = rng.randrange(256)
        variants.append(bytes(data))
    if machine == "arm":  # its unwinding index and table, word by word
        with open(tmp_path / "liba.so", "rb") as f:
            spans = [(sec["sh_offset"], sec["sh_size"]) for sec in ELFFile(f).iter_sections()
                     if sec.name in (".ARM.exidx", ".ARM.extab")]
        assert len(spans) == 2
        for _ in range(60):
            data = bytearray(good)
            for _ in range(rng.randint(1, 4)):
                off, size = rng.choice(spans)
                struct.pack_into("<I", data, off + 4 * rng.randrange(size // 4),
                                 rng.choice([rng.getrandbits(32), 0x80000000 | rng.getrandbits(24),
                                             rng.getrandbits(31), 1]))
            variants.append(bytes(data))
    # Huge section/segment counts and header offsets pointing past the end.
    for field, fmt in ((0x38, "<H"), (0x3C, "<H"), (0x28, "<Q"), (0x20, "<Q")):
        data = bytearray(good)
        struct.pack_into(fmt, data, field, 0xFFFF if fmt == "<H" else 1 << 40)
        variants.append(bytes(data))
    for data in variants:
        path.write_bytes(data)
        image = ElfImage.open(str(path))
        if image is None:
            continue
        plt = image.section(".plt")
        text = image.section(".text")
        cfi = cfi_for_image(image)
        for vaddr in (0, 0x1000, 0x1139, 0x4010, *([plt[0], plt[0] + 36] if plt else []),
                      *(range(text[0], text[0] + len(text[1]), 6) if text else [])):
            image.symbol_at(vaddr)
            image.fallback_name(vaddr)
            image.read(vaddr, 8)
            image.load_bias(0x7F0000000000 + vaddr, vaddr)
            if cfi is not None:
                cfi.row(vaddr)
        for name in (".debug_info", ".eh_frame", ".symtab", ".debug_line"):
            image.section(name)
    assert "Traceback" not in capsys.readouterr().err


def test_a_label_inside_a_function_takes_the_function_name(tmp_path):
    """A size-0 label (here an asm label in the loop) is only a fallback: a sized function
    that contains the address names it, as perf and elfutils do (V8's builtins)."""
    src = tmp_path / "label.c"
    src.write_text("long hot(long n) { long s = 0; for (long i = 0; i < n; i++) {\n"
                   "  __asm__ volatile(\"inner_label: nop\"); s += i * 3; } return s; }\n"
                   "__asm__(\".text\\nafter_label: nop\\n\");\n"
                   "int main(int c, char **v) { return (int)hot(c); }\n")
    exe = tmp_path / "label"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    syms = {name: (value, size) for value, size, _t, name in nm_symbols(exe)}
    hot, hot_size = syms["hot"]
    label = syms["inner_label"][0]
    assert hot < label < hot + hot_size and syms["inner_label"][1] == 0
    image = ElfImage.open(str(exe))
    assert image.symbol_at(label)[:2] == ("hot", hot)
    assert image.symbol_at(label + 1)[:2] == ("hot", hot)
    # outside every sized symbol, the label is still the best name there is
    after = syms["after_label"][0]
    assert image.symbol_at(after)[0] == "after_label"


def test_a_label_does_not_name_the_next_section(tmp_path):
    """crt's `_init` is a size-0 symbol at the start of .init, and .plt follows it with no
    symbol of its own: a PLT slot is `puts@plt` (perf's synthesized name, §10.8's fallback),
    never `_init`, as elfutils keeps a sizeless symbol to its own section."""
    src = tmp_path / "plt.c"
    src.write_text("#include <stdio.h>\nint main(int c, char **v) { puts(v[0]); return c; }\n")
    exe = tmp_path / "plt"
    subprocess.run(["gcc", "-O1", "-fno-pie", "-no-pie", "-fcf-protection=none", "-o", str(exe),
                    str(src)], check=True)
    with open(exe, "rb") as f:
        plt = ELFFile(f).get_section_by_name(".plt")
        start, size, entsize = plt["sh_addr"], plt["sh_size"], plt["sh_entsize"]
    syms = {name: (value, sz) for value, sz, _t, name in nm_symbols(exe)}
    init, init_size = syms["_init"]
    assert init_size == 0 and init < start and not any(start <= v < start + size
                                                       for v, _ in syms.values())
    image = ElfImage.open(str(exe))
    slots = [start + k * entsize for k in range(1, size // entsize)]
    named = {image.fallback_name(a): a for a in slots}
    assert "puts@plt" in named
    assert image.symbol_at(named["puts@plt"]) is None
    assert image.symbol_at(start) is None  # the PLT's header: §10.8 names it `<.plt+…>`
    assert image.symbol_at(init + 4)[0] == "_init"  # inside its own section it still names


def test_a_label_at_a_sections_end_does_not_name_what_follows(tmp_path):
    """`_end` is a size-0 symbol at the end of .bss, with no section after it: an address
    past it (a junk return address in a frame-pointer chain) has no name, as perf says
    `[unknown]`, instead of `_end`."""
    src = tmp_path / "end.c"
    src.write_text("int counter;\nint main(void) { return counter; }\n")
    exe = tmp_path / "end"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    syms = {name: (value, sz) for value, sz, _t, name in nm_symbols(exe)}
    end, end_size = syms["_end"]
    assert end_size == 0 and end > syms["counter"][0]
    image = ElfImage.open(str(exe))
    assert image.symbol_at(end + 0x40) is None
    assert image.symbol_at(syms["counter"][0])[0] == "counter"


@pytest.mark.parametrize("flags", [["-fcf-protection", "-Wl,-z,ibtplt"], []],
                         ids=["ibt-plt.sec", "plt.got"])
def test_plt_sec_and_plt_got_entries_are_name_at_plt(tmp_path, flags):
    """With IBT (Ubuntu's default -fcf-protection) calls go through .plt.sec, and
    `__cxa_finalize` through .plt.got: each entry is `name@plt` by the GOT slot its jump
    reads, as objdump labels them (and perf ≥ 6.2), not a `<.plt.sec+…>` placeholder."""
    src = tmp_path / "plt.c"
    src.write_text("#include <stdio.h>\n#include <string.h>\n"
                   "int main(int c, char **v) { puts(v[0]); return (int)strlen(v[c - 1]); }\n")
    exe = tmp_path / "plt"
    subprocess.run(["gcc", "-O1", "-fno-builtin", *flags, "-o", str(exe), str(src)], check=True)
    out = subprocess.run(["objdump", "-d", "-j", ".plt.sec", "-j", ".plt.got", str(exe)],
                         capture_output=True, text=True, check=True).stdout
    labels = {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(\S+@plt)>:$", out, re.M)}
    assert "__cxa_finalize@plt" in labels.values()
    if flags:
        assert {"puts@plt", "strlen@plt"} <= set(labels.values())
    image = ElfImage.open(str(exe))
    for addr, name in labels.items():
        assert image.symbol_at(addr) is None
        assert image.fallback_name(addr) == image.fallback_name(addr + 5) == name


@pytest.mark.parametrize("flags", [["-fpie", "-pie"], ["-fno-pie", "-no-pie"],
                                   ["-fcf-protection", "-Wl,-z,ibtplt"]],
                         ids=["pie", "no-pie", "ibt-plt.sec"])
def test_i386_plt_entries_are_name_at_plt(tmp_path, flags):
    """i386's PLT entries jump through `*slot(%ebx)` (%ebx: the GOT) in position-independent
    code and `*slot` otherwise, and GNU ld gives its .plt an entry size of 4: each entry is
    `name@plt` by its slot's relocation as objdump labels it, not `<.plt+…>`."""
    src = tmp_path / "plt.c"
    src.write_text("#include <stdio.h>\n#include <string.h>\n"
                   "int main(int c, char **v) { puts(v[0]); return (int)strlen(v[c - 1]); }\n")
    exe = tmp_path / "plt"
    subprocess.run(["gcc", "-m32", "-O1", "-fno-builtin", *flags, "-o", str(exe), str(src)],
                   check=True)
    out = subprocess.run(["objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got",
                          str(exe)], capture_output=True, text=True, check=True).stdout
    labels = {int(a, 16): n for a, n in re.findall(r"^([0-9a-f]+) <(\S+@plt)>:$", out, re.M)}
    assert {"puts@plt", "strlen@plt"} <= set(labels.values())
    image = ElfImage.open(str(exe))
    assert not image.is_64
    for addr, name in labels.items():
        assert image.symbol_at(addr) is None
        assert image.fallback_name(addr) == image.fallback_name(addr + 5) == name


@pytest.mark.parametrize("output", ["shared", "pie"])
@pytest.mark.parametrize("linker", list(aarch64_programs.LINKERS))
def test_aarch64_plt_entries_are_name_at_plt(tmp_path: Path, linker: str, output: str) -> None:
    """aarch64 PLT entries load their GOT slot (`adrp x16; ldr x17, [x16, #off]`), 16 bytes
    or 24 with `bti c` or pointer authentication, and neither linker gives `.plt` an entry
    size: each entry is `name@plt` by its slot's relocation, as llvm-objdump labels it (GNU
    objdump assumes 16-byte entries), and the header none. An executable's entries are its
    functions' addresses: `bti c` comes first."""
    out = aarch64_programs.calls_through_plt(tmp_path, linker, output)
    _assert_plt_names(out, aarch64_programs.plt_labels(out), 12)


def _assert_plt_names(out: Path, entries: dict[int, str], last: int) -> None:
    """`out`'s PLT `entries` (address -> `name@plt`: the three of CALLS) are named so from
    their start to their instruction at `last` bytes, and its lazy header's first two
    instructions are no entry's."""
    assert sorted(entries.values()) == ["ext1@plt", "ext2@plt", "ext3@plt"]
    image = ElfImage.open(str(out))
    for addr, name in entries.items():
        assert image.fallback_name(addr) == image.fallback_name(addr + last) == name
    plt = image.section(".plt")[0]
    assert [image.fallback_name(a) for a in (plt, plt + 4)] == [f"<.plt+{plt:x}>",
                                                                f"<.plt+{plt + 4:x}>"]


@pytest.mark.parametrize("linker", list(arm_programs.LINKERS))
def test_arm_plt_entries_are_name_at_plt(tmp_path: Path, linker: str) -> None:
    """32-bit Arm PLT entries (`add ip, pc, #imm; add ip, ip, #imm; ldr pc, [ip, #off]!`)
    are `name@plt` by the GOT slot they load, as GNU objdump labels GNU ld's and lld's
    layout places lld's; the header is none. GNU ld gives `.plt` an entry size of 4 bytes,
    by which upstream's index named every word a different slot."""
    out = arm_programs.calls_through_plt(tmp_path, linker)
    _assert_plt_names(out, arm_programs.plt_entries(out), 8)


@pytest.mark.parametrize(("target", "linker"), [("aarch64-linux-gnu", "aarch64-linux-gnu-ld"),
                                                ("armv7a-linux-gnueabihf", "ld.lld"),
                                                ("riscv64-linux-gnu", "ld.lld")])
def test_mapping_symbols_name_no_function(tmp_path: Path, target: str, linker: str) -> None:
    """Arm's and RISC-V's toolchains put untyped mapping symbols (`$x`, `$x.0`, `$d.1`, `$a`,
    `$t`) at the start of each piece of code and data, at a function's first address too:
    every address of a function is the function's, never `$x.0`'s."""
    (tmp_path / "m.c").write_text(
        "static int a1(int x) { return x * 3; }\nconst char tbl[] = \"table\";\n"
        "int g(int x) { return a1(x) + tbl[x & 3]; }\n"
        "int h(int x) { switch (x) { case 0: return g(1); case 1: return g(2);\n"
        "  case 2: return 5; case 3: return 9; default: return x; } }\n")
    subprocess.run(["clang", f"--target={target}", "-O1", "-fPIC", "-ffunction-sections",
                    "-c", "m.c"], cwd=tmp_path, check=True)
    so = tmp_path / "libm.so"
    subprocess.run([linker, "-shared", "-o", str(so), str(tmp_path / "m.o")], check=True)
    functions = [(v & ~1, n, name) for v, n, t, name in nm_symbols(so)
                 if t in "Tt" and not name.startswith("$")]
    assert {"g", "h"} <= {name for _v, _n, name in functions}
    image = ElfImage.open(str(so))
    for start, size, name in functions:
        for addr in range(start, start + size, 2):
            assert image.symbol_at(addr)[0] == name


def test_aarch64_static_ifunc_slot_is_named_by_its_resolver(tmp_path: Path) -> None:
    """A static aarch64 executable's PLT jumps through an IRELATIVE slot: named after the
    IFUNC resolver's symbol, as on x86-64."""
    obj = aarch64_programs.compile_object(tmp_path, "ifn", "static int twice(int x) { return 2 * x; }\n"
                          "static int (*pick(void))(int) { return twice; }\n"
                          "int scaled(int) __attribute__((ifunc(\"pick\")));\n"
                          "int f(int x) { return scaled(x) + 1; }\n")
    exe = tmp_path / "ifn"
    subprocess.run(["aarch64-linux-gnu-ld", "-static", "-e", "f", "-o", str(exe), str(obj)],
                   check=True)
    image = ElfImage.open(str(exe))
    plt = image.section(".plt")[0]
    assert image.fallback_name(plt) == image.fallback_name(plt + 12)
    assert image.fallback_name(plt) in ("pick@plt", "scaled@plt")  # the resolver's names


@pytest.mark.parametrize("linker", ["ld.lld", "arm-linux-gnueabihf-ld"])
def test_arm_static_ifunc_slot_is_named_by_its_resolver(tmp_path: Path, linker: str) -> None:
    """A static 32-bit Arm executable's `.iplt` entry loads an R_ARM_IRELATIVE slot: a REL
    relocation, the resolver's address the slot's own content (i386's too). Named after the
    IFUNC's symbol, as on x86-64."""
    (tmp_path / "ifn.c").write_text("static int twice(int x) { return 2 * x; }\n"
                                    "static int (*pick(void))(int) { return twice; }\n"
                                    "int scaled(int) __attribute__((ifunc(\"pick\")));\n"
                                    "int f(int x) { return scaled(x) + 1; }\n")
    subprocess.run(["clang", "--target=armv7-linux-gnueabihf", "-marm", "-O2", "-c", "ifn.c"],
                   cwd=tmp_path, check=True)
    subprocess.run([linker, "-static", "-e", "f", "-o", "ifn", "ifn.o"], cwd=tmp_path,
                   check=True)
    image = ElfImage.open(str(tmp_path / "ifn"))
    iplt, code = image.section(".iplt")
    names = {image.fallback_name(a) for a in range(iplt, iplt + len(code), 4)}
    assert names <= {"pick@plt", "scaled@plt"} and len(names) == 1


def test_i386_static_ifunc_slots_are_named_by_their_resolvers(tmp_path: Path) -> None:
    """A static i386 executable calls glibc's string functions through 8-byte `.plt`
    entries (`jmp *slot`) whose slots R_386_IRELATIVE relocations fill: REL ones, so the
    resolver's address is the slot's content in the file. Each entry is `name@plt` of a
    symbol at that address (nm), as on x86-64; upstream and we before named none."""
    src = tmp_path / "p.c"
    src.write_text(IFUNC_SOURCE + "int main(int c, char **v) { return use(c, v); }\n")
    exe = tmp_path / "p"
    subprocess.run(["gcc", "-m32", "-O1", "-fno-builtin", "-static", "-o", str(exe), str(src)],
                   check=True)
    at: dict[int, set[str]] = {}
    for value, _size, _t, name in nm_symbols(exe):
        at.setdefault(value, set()).add(name.partition("@")[0] + "@plt")
    dump = subprocess.run(["objdump", "-d", "-j", ".plt", str(exe)], capture_output=True,
                          text=True, check=True).stdout
    jumps = {int(a, 16): int(slot, 16) for a, slot in
             re.findall(r"^ *([0-9a-f]+):\s+ff 25 (?:[0-9a-f]{2} ){4}\s*jmp\s+\*0x([0-9a-f]+)",
                        dump, re.M)}
    image = ElfImage.open(str(exe))
    with exe.open("rb") as f:
        elf = ELFFile(f)
        slots = {}
        for entry, slot in jumps.items():
            sec = next(s for s in elf.iter_sections()
                       if s["sh_addr"] <= slot < s["sh_addr"] + s["sh_size"])
            off = slot - sec["sh_addr"]
            slots[entry] = struct.unpack_from("<I", sec.data(), off)[0]
    assert len(slots) >= 3
    for entry, resolver in slots.items():
        assert image.fallback_name(entry + 2) in at[resolver], hex(entry)


IFUNC_SOURCE = r"""
#include <stdio.h>
#include <string.h>
static int twice(int x) { return 2 * x; }
static int (*pick(void))(int) { return twice; }
int scaled(int) __attribute__((ifunc("pick"), visibility("hidden")));
int use(int c, char **v) { char b[64]; memcpy(b, v[0], 8); b[8] = 0; return scaled(c) + (int)strlen(b); }
"""


def _plt_jumps(exe: Path, section: str) -> dict[int, int]:
    """Address of each `jmp *slot(%rip)` in `section` -> the GOT slot it reads (objdump)."""
    out = subprocess.run(["objdump", "-d", "-j", section, str(exe)], capture_output=True,
                         text=True, check=True).stdout
    return {int(a, 16): int(slot, 16) for a, slot in
            re.findall(r"^ *([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(?:bnd )?jmp\s+\*0x[0-9a-f]+"
                       r"\(%rip\)\s+# ([0-9a-f]+)", out, re.M)}


def _slot_names(exe: Path, symbols: Path | None = None) -> dict[int, set[str]]:
    """GOT slot -> the names its entry may have: `sym@plt` of the symbol its relocation
    names, or of any symbol at the address an IRELATIVE relocation gives (readelf; nm of
    `symbols`, default `exe`, without a symbol version)."""
    at: dict[int, set[str]] = {}
    for value, _size, _t, name in nm_symbols(symbols or exe):
        at.setdefault(value, set()).add(name.partition("@")[0] + "@plt")
    out = subprocess.run(["readelf", "-rW", str(exe)], capture_output=True, text=True,
                         check=True).stdout
    names: dict[int, set[str]] = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 4 and p[2] == "R_X86_64_IRELATIVE":
            names[int(p[0], 16)] = at.get(int(p[3], 16), set())
        elif len(p) >= 5 and p[2] in ("R_X86_64_JUMP_SLOT", "R_386_JUMP_SLOT"):
            names[int(p[0], 16)] = {p[4].split("@")[0] + "@plt"}
    return names


@pytest.mark.parametrize("build", ["static", "static-pie", "shared", "lld", "lld-static", "mold"])
def test_ifunc_and_lld_plt_entries_are_named(tmp_path: Path, build: str) -> None:
    """A static executable calls glibc's string functions through `.plt` (GNU ld: 8-byte
    entries, no header, no section entry size) or `.iplt` (lld) slots that IRELATIVE
    relocations fill from an IFUNC resolver; a shared object calls its own IFUNCs so (libc's
    `memcpy`), and lld's `.plt` gives no entry size either, nor mold's (a 32-byte header,
    its entries `name$plt` in .symtab, here named without it). Each entry is `name@plt` of the
    resolver's symbol, as perf ≥ 6.3 names it, or of the relocation's symbol; the lazy
    PLT's header stays unnamed."""
    src = tmp_path / "p.c"
    src.write_text(IFUNC_SOURCE + ("" if build == "shared" else
                                   "int main(int c, char **v) { return use(c, v); }\n"))
    exe = tmp_path / "p"
    cc, flags = {"static": ("gcc", ["-static"]), "static-pie": ("gcc", ["-static-pie"]),
                 "shared": ("gcc", ["-shared", "-fPIC"]),
                 "lld": ("clang", ["-fuse-ld=lld"]),
                 "lld-static": ("clang", ["-fuse-ld=lld", "-static"]),
                 "mold": ("gcc", ["-fuse-ld=mold"])}[build]
    subprocess.run([cc, "-O1", "-fno-builtin", *flags, "-o", str(exe), str(src)], check=True)
    slots = _slot_names(exe)
    image = ElfImage.open(str(exe))
    checked = 0
    for section in (".plt", ".iplt"):
        if image.section(section) is None:
            continue
        for addr, slot in _plt_jumps(exe, section).items():
            got = image.fallback_name(addr + 2)
            if slot in slots:
                assert got in slots[slot], (hex(addr), got, slots[slot])
                checked += 1
            else:  # the header's jump to the lazy resolver
                assert got == f"<{section}+{addr + 2:x}>"
    assert checked >= (2 if build in ("lld", "mold") else 3)


@pytest.mark.parametrize("build", list(plt_programs.RETPOLINE))
def test_lld_retpoline_plt_entries_are_named(tmp_path: Path, build: str) -> None:
    """lld's retpoline PLT entries (`-z retpolineplt`) load their GOT slot into a register
    for a thunk in the header rather than jump through it: 32 bytes each after a 48-byte
    header (x86-64 with -z now: 16 after 32; a static executable's `.iplt` has no header),
    and neither section gives an entry size. Every byte of each entry is `name@plt` of the
    symbol whose relocation fills the slot it loads (GNU objdump's decoding of the load,
    readelf's relocations; nm's symbol at an IFUNC's resolver); the header's are none."""
    exe = plt_programs.build(tmp_path, build)
    slots = _slot_names(exe)
    entries = plt_programs.entry_slots(exe)
    starts = sorted(entries)
    assert len(starts) >= 3
    image = ElfImage.open(str(exe))
    plt = image.section(".plt")[0]
    for addr in range(plt, min(starts[0], plt + len(image.section(".plt")[1]))):
        assert image.fallback_name(addr) == f"<.plt+{addr:x}>"
    stride = starts[1] - starts[0]
    for start in starts:
        for addr in range(start, start + stride):
            assert image.fallback_name(addr) in slots[entries[start]], hex(addr)


def test_libcs_own_ifunc_calls_are_named_without_symbol_versions(corpus_dir: Path) -> None:
    """libc.so calls its own IFUNCs (`memcpy`) through `.plt` slots IRELATIVE relocations
    fill; with its debug file the resolver's symbol is a .symtab name that can carry its
    version (`memcpy@@GLIBC_2.14`): the entry is `memcpy@plt`, as a .dynsym slot is named."""
    sysroot = corpus_dir / "sysroot"
    path = sysroot / "usr/lib/x86_64-linux-gnu/libc.so.6"
    debug_path = next((sysroot / "usr/lib/debug/.build-id").rglob("*.debug"))
    libc = ElfImage.open(str(path))
    libc.attach_debug(ElfImage.open(str(debug_path)))
    slots = _slot_names(path, debug_path)
    names = [(libc.fallback_name(addr + 2), slots.get(slot))
             for addr, slot in _plt_jumps(path, ".plt").items()]
    ifuncs = [got for got, want in names if want and got in want and got.startswith("mem")]
    assert ifuncs and all("@" not in got[:-4] for got, _ in names if got[0] != "<")
    assert all(got in want for got, want in names if want)
