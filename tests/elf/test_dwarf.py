"""Line tables and inline scopes (perfparser_py.elf.dwarf) against pyelftools, the upstream
expected output and addr2line's view of the recorded 'inline' case; hostile input."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from perfparser_py.elf.dwarf import DwarfInfo
from perfparser_py.elf.image import ElfImage
from tests.elf.leb import sleb as _sleb
from tests.elf.leb import uleb as _uleb

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
BINARIES = [
    CORPUS / "recorded" / "inline" / "inline",
    CORPUS / "recorded" / "dwarf" / "hotloop",
    CORPUS / "upstream" / "cpp-inlining" / "cpp-inlining",
    CORPUS / "upstream" / "vector_static_gcc" / "vector_static_gcc_v9.1.0",
]


def _dwarf(path: Path) -> DwarfInfo:
    image = ElfImage.open(str(path))
    assert image is not None
    info = DwarfInfo.for_image(image)
    assert info is not None
    return info


def _die_ranges(die, dw) -> list[tuple[int, int]]:
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        low = attrs["DW_AT_low_pc"].value
        high = attrs["DW_AT_high_pc"]
        return [(low, high.value if high.form == "DW_FORM_addr" else low + high.value)]
    if "DW_AT_ranges" in attrs:
        rl = dw.range_lists()
        if die.cu.header.version >= 5:
            entries = rl.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=die.cu)
        else:
            entries = rl.get_range_list_at_offset(attrs["DW_AT_ranges"].value)
        base = die.cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        base = base.value if base else 0
        out = []
        for e in entries:
            if hasattr(e, "begin_offset"):
                if getattr(e, "is_absolute", False):
                    out.append((e.begin_offset, e.end_offset))
                else:
                    out.append((base + e.begin_offset, base + e.end_offset))
            elif hasattr(e, "base_address"):
                base = e.base_address
        return out
    return []


def _top_subprograms(die, inside_sub: bool, subs: list, dw) -> None:
    """Subprograms with code, searched through everything except other subprograms."""
    for child in die.iter_children():
        if child.tag == "DW_TAG_subprogram":
            if not inside_sub and _die_ranges(child, dw):
                subs.append(child)
            _top_subprograms(child, True, subs, dw)
        elif not inside_sub:
            _top_subprograms(child, False, subs, dw)


def _oracle(path: Path):
    """Per sampled address: (line row (line, column, basename), [(die offset, call line)])."""
    with open(path, "rb") as f:
        dw = ELFFile(f).get_dwarf_info()
        result = {}
        for cu in dw.iter_CUs():
            top = cu.get_top_DIE()
            prog = dw.line_program_for_CU(cu)
            rows = []
            for i, entry in enumerate(prog.get_entries()):
                st = entry.state
                if st is not None:
                    rows.append((st.address, 0 if st.end_sequence else 1, i, st))
            rows.sort(key=lambda r: r[:3])
            files = prog["file_entry"]
            v5 = prog["version"] >= 5
            subs = []

            _top_subprograms(top, False, subs, dw)
            for sub in subs:
                for lo, hi in _die_ranges(sub, dw):
                    for addr in range(lo, hi, max(1, (hi - lo) // 12)):
                        idx = max(i for i, r in enumerate(rows) if r[0] <= addr) if rows[0][0] <= addr else None
                        line = None
                        if idx is not None and rows[idx][1]:
                            st = rows[idx][3]
                            fe = files[st.file if v5 else st.file - 1]
                            line = (st.line, st.column, os.path.basename(fe.name))
                        chain = []

                        def inl(die, addr=addr, chain=chain):
                            for child in die.iter_children():
                                rng = _die_ranges(child, dw)
                                has_pc = "DW_AT_low_pc" in child.attributes or "DW_AT_ranges" in child.attributes
                                inside = any(a <= addr < b for a, b in rng) if has_pc else True
                                if child.tag == "DW_TAG_inlined_subroutine" and inside:
                                    call = child.attributes.get("DW_AT_call_line")
                                    chain.append((child.offset, call.value if call else -1))
                                    inl(child)
                                elif child.tag == "DW_TAG_lexical_block" and inside:
                                    inl(child)

                        inl(sub)
                        result.setdefault(addr, (line, sub.offset, chain))
        return result


@pytest.mark.parametrize("path", BINARIES)
def test_lines_and_scopes_match_pyelftools(path: Path) -> None:
    info = _dwarf(path)
    oracle = _oracle(path)
    assert len(oracle) > 10
    inlined = 0
    for addr, (line, sub, chain) in oracle.items():
        got = info.line_at(addr)
        if line is None:
            assert got is None
        else:
            assert got is not None and got[0].startswith(b"/"), hex(addr)
            assert (got[1], got[2], os.path.basename(got[0])) == line, hex(addr)
        scopes = info.scopes_at(addr)
        assert scopes is not None, hex(addr)
        assert scopes[0].die_offset == sub
        assert [(s.die_offset, s.call_line) for s in scopes[1]] == chain, hex(addr)
        inlined += bool(chain)
    if "inlin" in path.name or "vector" in path.name:
        assert inlined > 0


def _addr2line_blocks():
    text = (CORPUS / "recorded" / "inline" / "reference" / "inline-addr2line.txt").read_text()
    for block in text.split("== ")[1:]:
        lines = block.strip().splitlines()
        frames = []
        for i in range(1, len(lines), 2):
            where = lines[i + 1].split(" ")[0]
            file, line = where.rsplit(":", 1)
            frames.append((lines[i], file, int(line)))
        yield int(lines[0], 16), frames


def test_inline_case_matches_addr2line() -> None:
    info = _dwarf(CORPUS / "recorded" / "inline" / "inline")
    checked = 0
    for addr, frames in _addr2line_blocks():
        sub, chain = info.scopes_at(addr)
        names = [s.name for s in reversed(chain)] + [sub.name]
        assert names == [f[0] for f in frames], hex(addr)
        file, line, _col = info.line_at(addr)
        assert file == b"/tmp/corpus-build/inline/" + frames[0][1].encode()
        assert line == frames[0][2]
        # the line of each outer frame is the call site of the next inner inlined scope
        for scope, outer in zip(reversed(chain), frames[1:], strict=True):
            assert scope.call_file.endswith(b"/" + outer[1].encode())
            assert scope.call_line == outer[2]
            assert scope.decl_file.endswith(b"/inl_math.h")
        checked += 1
    assert checked > 20


def test_vector_static_gcc_matches_upstream_expected() -> None:
    # perf.data.expected.txt: leaf 4015a4 is vector.tcc:121:4 inside four inline levels of main
    info = _dwarf(CORPUS / "upstream" / "vector_static_gcc" / "vector_static_gcc_v9.1.0")
    assert info.line_at(0x4015A4) == (b"/usr/include/c++/9.1.0/bits/vector.tcc", 121, 4)
    sub, chain = info.scopes_at(0x401572)
    assert sub.name == "main" and sub.entry_pc is None and (sub.decl_line, sub.decl_column) == (9, 5)
    assert sub.decl_file.endswith(b"/vector_static_gcc/../../../manual/clients/vector.cpp")
    assert [s.name for s in chain] == [
        "std::generate_n<std::back_insert_iterator<std::vector<double> >, int, main()::<lambda()> >"]
    gen = chain[0]
    assert gen.entry_pc == 0x40152B and (gen.decl_line, gen.decl_column) == (4441, 5)
    assert (gen.call_line, gen.call_column) == (16, 6)
    _, chain = info.scopes_at(0x4015A4)
    assert chain[-1].name == "void std::vector<double, std::allocator<double> >::emplace_back<double>(double&&)"
    assert chain[-1].entry_pc == 0x401590
    assert info.line_at(0) is None and info.scopes_at(0) is None


class _Image:
    little_endian = True
    path = "/nonexistent/synthetic"  # no .dwo or .dwp beside it
    debug = None
    supplement_search = None
    split_dirs = ()
    recorded_at = None

    def holder_of(self, name: str) -> _Image:
        return self

    def __init__(self, sections: dict[str, bytes]) -> None:
        self._s = sections

    def section(self, name: str):
        data = self._s.get(name)
        return None if data is None else (0, memoryview(data))


def _sections(path: Path) -> dict[str, bytes]:
    image = ElfImage.open(str(path))
    out = {}
    for name in (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_line",
                 ".debug_rnglists", ".debug_ranges"):
        sec = image.section(name)
        if sec is not None:
            out[name] = bytes(sec[1])
    return out


@pytest.mark.parametrize("victim", [".debug_info", ".debug_abbrev", ".debug_line"])
def test_truncated_and_garbled_sections_never_raise(victim: str) -> None:
    secs = _sections(CORPUS / "recorded" / "inline" / "inline")
    good = _dwarf(CORPUS / "recorded" / "inline" / "inline")
    addrs = [0x11F0, 0x11E0, 0x1100]
    assert good.scopes_at(0x11F0) is not None
    data = secs[victim]
    for cut in (1, 7, len(data) // 3, len(data) // 2, len(data) - 3):
        for mutate in (lambda d, c=cut: d[:c], lambda d, c=cut: d[:c] + b"\xff" * 9 + d[c + 9:]):
            info = DwarfInfo.for_image(_Image({**secs, victim: mutate(data)}))
            if info is None:
                continue
            for a in addrs:
                info.line_at(a)
                info.scopes_at(a)


def test_cyclic_abstract_origin_terminates() -> None:
    # Patch the inline case so an inlined DIE's abstract origin points at itself.
    path = CORPUS / "recorded" / "inline" / "inline"
    secs = _sections(path)
    info = _dwarf(path)
    _, chain = info.scopes_at(0x11F0)
    off = chain[-1].die_offset
    with open(path, "rb") as f:
        dw = ELFFile(f).get_dwarf_info()
        die = dw.get_DIE_from_refaddr(off)
        attr = die.attributes["DW_AT_abstract_origin"]
        assert attr.form == "DW_FORM_ref4"
        cu_off = die.cu.cu_offset
        pos = attr.offset
    data = bytearray(secs[".debug_info"])
    data[pos:pos + 4] = (off - cu_off).to_bytes(4, "little")
    hostile = DwarfInfo.for_image(_Image({**secs, ".debug_info": bytes(data)}))
    sub, chain = hostile.scopes_at(0x11F0)
    assert chain[-1].die_offset == off and chain[-1].name is None


def _synthetic_dwarf5(program: bytes | None = None,
                      codes: tuple[int, ...] = (1, 2, 3, 4, 5)) -> dict[str, bytes]:
    """A hand-made DWARF 5 unit using the index forms gcc's corpus builds do not:
    strx1, addrx, addrx1, rnglistx, with .debug_str_offsets/.debug_addr/.debug_rnglists.
    Its line program is `program` when given (the unit covers 0x1000-0x1040); its five
    abbreviations are numbered `codes`."""
    import struct

    strings = [b"main.c", b"/src", b"outer", b"inner", b"ns"]
    debug_str = b"\0"
    offsets = []
    for s in strings:
        offsets.append(len(debug_str))
        debug_str += s + b"\0"
    body = struct.pack("<HH", 5, 0) + b"".join(struct.pack("<I", o) for o in offsets)
    str_offsets = struct.pack("<I", len(body)) + body
    body = struct.pack("<HBB", 5, 8, 0) + struct.pack("<QQ", 0x1000, 0x1010)
    debug_addr = struct.pack("<I", len(body)) + body
    lists = bytes([3]) + _uleb(0) + _uleb(0x40) + bytes([0])
    body = struct.pack("<HBBI", 5, 8, 0, 1) + struct.pack("<I", 4) + lists
    rnglists = struct.pack("<I", len(body)) + body

    def abbrev(code, tag, children, specs):
        out = _uleb(code) + _uleb(tag) + bytes([children])
        for attr, form in specs:
            out += _uleb(attr) + _uleb(form)
        return out + b"\0\0"

    unit, sub, inlined, decl, ns = codes
    debug_abbrev = (
        abbrev(unit, 0x11, 1, [(0x03, 0x25), (0x1B, 0x25), (0x11, 0x1B), (0x12, 0x06), (0x10, 0x17),
                            (0x72, 0x17), (0x73, 0x17), (0x74, 0x17)])
        + abbrev(sub, 0x2E, 1, [(0x03, 0x25), (0x55, 0x23), (0x3A, 0x0B), (0x3B, 0x0B)])
        + abbrev(inlined, 0x1D, 0, [(0x31, 0x13), (0x11, 0x29), (0x12, 0x06), (0x58, 0x0B),
                                    (0x59, 0x0B), (0x57, 0x0B)])
        + abbrev(decl, 0x2E, 0, [(0x03, 0x25), (0x3A, 0x0B), (0x3B, 0x0B)])
        + abbrev(ns, 0x39, 1, [(0x03, 0x25)])
        + b"\0"
    )
    unit_die = _uleb(unit) + bytes([0, 1]) + _uleb(0) + struct.pack("<IIIII", 0x40, 0, 8, 8, 12)
    ns_die = _uleb(ns) + bytes([4])
    inner_off = 12 + len(unit_die) + len(ns_die)
    dies = (
        unit_die
        + ns_die
        + _uleb(decl) + bytes([3, 1, 3]) + b"\0"
        + _uleb(sub) + bytes([2]) + _uleb(0) + bytes([0, 9])
        + _uleb(inlined) + struct.pack("<I", inner_off) + bytes([1]) + struct.pack("<I", 0x10)
        + bytes([0, 11, 2]) + b"\0"
        + b"\0"
    )
    body = struct.pack("<HBBI", 5, 1, 8, 0) + dies
    debug_info = struct.pack("<I", len(body)) + body

    std_lengths = bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
    tables = (bytes([1]) + _uleb(1) + _uleb(0x08) + _uleb(2) + b"/src\0inc\0"
              + bytes([2]) + _uleb(1) + _uleb(0x08) + _uleb(2) + _uleb(0x0B)
              + _uleb(2) + b"main.c\0\0x.h\0\1")
    header_rest = bytes([1, 1, 1, 0xFB, 14, 13]) + std_lengths + tables
    if program is None:
        program = (_SET_ADDRESS_0x1000
                   + b"\4" + _uleb(0) + b"\3" + _uleb(9) + b"\1"
                   + b"\4" + _uleb(1) + b"\2" + _uleb(0x10) + b"\3" + _uleb(5) + b"\1"
                   + b"\2" + _uleb(0x30) + _END_SEQUENCE)
    body = struct.pack("<HBBI", 5, 8, 0, len(header_rest)) + header_rest + program
    debug_line = struct.pack("<I", len(body)) + body
    return {".debug_info": debug_info, ".debug_abbrev": debug_abbrev, ".debug_str": debug_str,
            ".debug_str_offsets": str_offsets, ".debug_addr": debug_addr,
            ".debug_rnglists": rnglists, ".debug_line": debug_line}


_SET_ADDRESS_0x1000 = b"\0" + _uleb(9) + b"\2" + (0x1000).to_bytes(8, "little")
_FILE_0 = b"\4" + _uleb(0)  # DWARF 5: main.c
_END_SEQUENCE = b"\0\1\1"


def test_line_table_rows_are_kept_as_packed_ints() -> None:
    """A profile's line tables are its largest DWARF state (a `perf record -a` touched
    870 k rows): each row is kept as a few packed ints, not as Python objects (~190 bytes a
    row as a tuple of ints), while the answers stay the rows' (DESIGN decision 3)."""
    import tracemalloc

    rows = 20_000
    # special opcode 0x21 (opcode base 13, line range 14, line base -5): address +1, line +1
    info = DwarfInfo.for_image(_Image(_synthetic_dwarf5(
        _SET_ADDRESS_0x1000 + _FILE_0 + b"\3" + _sleb(99) + b"\1" + b"\x21" * rows
        + _END_SEQUENCE)))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert info.line_at(0x1020) == (b"/src/main.c", 132, 0)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # the unit's header and DIEs, and the interpreter's free tuples (up to 2000), besides
    assert kept < 24 * rows + (256 << 10)
    assert info.line_at(0x103F) == (b"/src/main.c", 163, 0)


def test_subtrees_a_walk_jumps_over_are_kept_small() -> None:
    """A walk defers the subtrees of the functions no address fell into yet, most of a
    unit's (python3.11-dbg: 90 k of them): each is kept as a few packed numbers, its open
    DIEs shared with its siblings', not as a tuple and an array of its own (~380 bytes a
    subtree with what the walk keeps besides, against ~230)."""
    import tracemalloc

    info = _dwarf(CORPUS / "upstream" / "vector_static_gcc" / "vector_static_gcc_v9.1.0")
    units = [info._unit(off) for off in info._units()]
    for cu in units:  # what a walk reads besides its own: the unit DIE, the abbreviations
        info._cu_top(cu)
        info._abbrevs(cu)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for cu in units:
            info._walk(cu)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    deferred = sum(len(cu.pending) for cu in units)
    assert deferred > 200
    assert sum(len(cu.prefixes) for cu in units) < deferred / 4
    assert kept < 300 * deferred


@pytest.mark.parametrize("line", [1 << 40, 1 << 70, -(1 << 70)])
def test_line_numbers_beyond_32_and_64_bits_are_kept(line: int) -> None:
    """Hostile DWARF: line numbers that need 64 bits, or more, are answered as they are."""
    info = DwarfInfo.for_image(_Image(_synthetic_dwarf5(
        _SET_ADDRESS_0x1000 + _FILE_0 + b"\3" + _sleb(line - 1) + b"\1"
        + b"\2" + _uleb(0x10) + b"\3" + _sleb(-line + 3) + b"\1" + _END_SEQUENCE)))
    assert info.line_at(0x1008) == (b"/src/main.c", line, 0)
    assert info.line_at(0x1010) == (b"/src/main.c", 3, 0)


@pytest.mark.parametrize("codes", [
    (1, 2, 3, 4, 5),
    (1, 300, 130, 7, 129),  # several bytes of LEB128, numbered with gaps
    (1, 200_000, 130, 7, 1 << 40),  # too sparse for the walk's table by code
])
def test_dwarf5_index_forms(codes: tuple[int, ...]) -> None:
    info = DwarfInfo.for_image(_Image(_synthetic_dwarf5(codes=codes)))
    assert info.line_at(0x1000) == (b"/src/main.c", 10, 0)
    assert info.line_at(0x1010) == (b"/src/inc/x.h", 15, 0)
    assert info.line_at(0x1040) is None
    sub, chain = info.scopes_at(0x1012)
    assert (sub.name, sub.entry_pc, sub.decl_file, sub.decl_line) == ("outer", None, b"/src/main.c", 9)
    assert len(chain) == 1
    inl = chain[0]
    assert (inl.name, inl.entry_pc, inl.decl_file, inl.decl_line) == ("ns::inner", 0x1010, b"/src/inc/x.h", 3)
    assert (inl.call_file, inl.call_line, inl.call_column) == (b"/src/main.c", 11, 2)
    sub, chain = info.scopes_at(0x1030)
    assert sub.name == "outer" and chain == []
    assert info.scopes_at(0x1040) is None


def _answers(info: DwarfInfo, addrs: list[int]) -> list[tuple]:
    return [(info.line_at(a), repr(info.scopes_at(a))) for a in addrs]


@pytest.mark.parametrize("path", BINARIES)
def test_units_are_found_with_all_some_or_none_listed_in_aranges(path: Path) -> None:
    """A unit .debug_aranges lists is looked up there, as elfutils does, without walking
    every unit header; the units it does not list (all of them without it) are found by the
    walk. The answers do not depend on which way a unit was found."""
    addrs = sorted(_oracle(path))
    full = _dwarf(path)
    expected = _answers(full, addrs)
    listed = full._aranges()
    assert listed
    if path.name == "inline":  # one unit, listed: nothing else to walk for
        assert full._unit_offsets is None
    for keep in (lambda units: units[::2], lambda units: []):
        info = _dwarf(path)
        partial = {off: listed[off] for off in keep(sorted(listed))}
        info._aranges = lambda partial=partial: partial
        assert _answers(info, addrs) == expected
        assert info._unit_offsets is not None or len(partial) == len(listed)


@pytest.mark.parametrize("version", ["4", "5"])
def test_a_relative_compilation_directory_is_not_doubled(tmp_path: Path, version: str) -> None:
    """Debian's packages are built with `-fdebug-prefix-map=BUILD=.`: glibc's comp_dir is
    `./elf` and so is entry 0 of its DWARF 5 directory table, which is the compilation
    directory itself. A file there is `./elf/dl-load.c`, not `./elf/./elf/dl-load.c`; a
    file in another, relative, directory is still relative to the compilation directory."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.h").write_text(
        "static inline __attribute__((always_inline)) int sum(int x)\n"
        "{ int s = 0; for (int i = 0; i < x; i++) s += i ^ x; return s; }\n")
    (tmp_path / "sub" / "p.c").write_text(
        '#include "h.h"\n__attribute__((noinline)) int f(int x) { return sum(x) + 1; }\n'
        "int main(int c, char **v) { return f(c); }\n")
    exe = tmp_path / "p"
    subprocess.run(["gcc", f"-gdwarf-{version}", "-O1", f"-fdebug-prefix-map={tmp_path}=.",
                    "-I../inc", "-o", str(exe), "p.c"], cwd=tmp_path / "sub", check=True)
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    f = next(int(p[0], 16) for p in map(str.split, syms.splitlines()) if p[-1] == "f")
    info = _dwarf(exe)
    sub, _ = info.scopes_at(f)
    assert sub.decl_file == b"./sub/p.c"
    inlined = {(s.decl_file, s.call_file) for a in range(f, f + 16)
               for s in (info.scopes_at(a) or (None, []))[1]}
    assert inlined == {(b"./sub/../inc/h.h", b"./sub/p.c")}
    files = {info.line_at(a)[0] for a in range(f, f + 64) if info.line_at(a)}
    assert files == {b"./sub/p.c", b"./sub/../inc/h.h"}


def test_a_subprogram_without_sibling_is_decoded_only_when_an_address_falls_into_it() -> None:
    """rustc and clang write no DW_AT_sibling: the walk still jumps over a subprogram's
    subtree (found by skipping its DIEs) and decodes its scopes only for an address in it,
    with the same answers."""
    info = DwarfInfo.for_image(_Image(_synthetic_dwarf5()))
    cu = info._cu_for(0x1012)
    info._walk(cu)
    (sub, _), = cu.subprograms
    assert sub in cu.pending and cu.nodes[sub] == []
    _, chain = info.scopes_at(0x1012)
    assert sub not in cu.pending and len(cu.nodes[sub]) == 1
    assert [s.name for s in chain] == ["ns::inner"]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_parents_match_pyelftools_whatever_the_order_they_are_asked(path: Path,
                                                                    seed: int) -> None:
    """A DIE's parent, asked in any order, walks the subtrees a walk jumped over that hold it,
    nested ones included (pending_around's bisection per level): for every DIE the walk
    records a parent of (those with children, subprograms and inlined subroutines), the
    parent pyelftools reads."""
    import random

    info = _dwarf(path)
    with open(path, "rb") as f:
        expected = {}
        for unit in ELFFile(f).get_dwarf_info().iter_CUs():
            for die in unit.iter_DIEs():
                if die.tag is None or die.offset == unit.cu_die_offset:
                    continue
                if die.has_children or die.tag in ("DW_TAG_subprogram",
                                                   "DW_TAG_inlined_subroutine"):
                    expected[die.offset] = die.get_parent().offset
    offsets = sorted(expected)
    random.Random(seed).shuffle(offsets)
    assert len(offsets) > 100
    assert {off: info._parent(off) for off in offsets} == expected


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_a_units_own_abbreviation_is_read_alone_as_in_its_table(path: Path) -> None:
    """The unit DIE's abbreviation, read alone (parse_abbrevs' `until`, which skips the
    others: GCC numbers it last), is the whole table's entry, and the unit DIEs decode the
    same by it as by the table."""
    from perfparser_py.elf.dwarf.units import parse_abbrevs

    info = _dwarf(path)
    units = [info._unit(off) for off in info._units()]
    assert units
    for cu in units:
        info._cu_top(cu)
        alone = (cu.top, cu.comp_dir, cu.low_pc, cu.stmt_list, cu.ranges)
        table = parse_abbrevs(info._s["abbrev"], cu.abbrev_off)
        for code in table:
            assert parse_abbrevs(info._s["abbrev"], cu.abbrev_off, code)[code] == table[code]
        cu.abbrevs = table
        info._cu_top(cu)
        assert (cu.top, cu.comp_dir, cu.low_pc, cu.stmt_list, cu.ranges) == alone


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_file_names_alone_come_from_the_line_program_header(path: Path) -> None:
    """A unit asked only for file names (those of another unit's inlined scopes, dwz's
    partial units) has its line program's header read, not its rows: the same paths as
    with the table decoded. An index past the header decodes the rows, where a DWARF 2-4
    program may define more files."""
    info, whole = _dwarf(path), _dwarf(path)
    checked = 0
    for off in info._units():
        cu, full = info._unit(off), whole._unit(off)
        if not info._top_usable(cu) or not whole._top_usable(full):
            continue
        whole._line_table(full)
        names = [info._file_path(cu, i) for i in range(len(full.files) + 1)]
        assert names == [whole._file_path(full, i) for i in range(len(full.files) + 1)]
        assert names[-1] is None and cu.lines is not None  # past the header: rows decoded
        fresh_info = _dwarf(path)
        fresh = fresh_info._unit(off)
        fresh_info._top_usable(fresh)
        fresh_info._file_path(fresh, 1)
        assert fresh.lines is None  # within the header: no rows
        checked += 1
    assert checked
