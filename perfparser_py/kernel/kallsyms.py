"""A kallsyms file (SEMANTICS §10.6), plain or gzip-compressed, read and parsed: the sorted
table of its symbols (`Kallsyms`), looked up by address or name; a copy the kernel wrote,
searched where it lies (`SortedKallsyms`); and their answers kept in the persistent cache
(`RecordedKallsyms`)."""

from __future__ import annotations

import bisect
import mmap
import os
import stat
import struct
import zlib
from array import array

from .. import probes
from ..mergesort import stable_order
from ..regular import open_regular, read_bounded

# A kallsyms file (a kernel's has 10-20 MB) is read up to this size, decompressed too
MAX_KALLSYMS = 256 << 20
LIVE = "/proc/kallsyms"  # the running kernel's, which the kernel formats on each read
# upstream's error text for a kallsyms without one non-zero address: what a file read without
# the right to see kernel addresses (kptr_restrict) gives
EMPTY_MAPPING = "Mapping is empty."


class KallsymsError(Exception):
    """The kallsyms file cannot be used; the message is upstream's text."""


def _split_line(line: bytes) -> tuple[list[bytes], bytes]:
    """The whitespace fields before the first TAB and the module text after it."""
    main, _, module = line.partition(b"\t")
    return main.split(), module


def _address(token: bytes) -> int:
    """A first field that is not 1-16 hex digits as an address: `(null)` is 0 (kptr_restrict),
    any other what int(..., 16) makes of it (a negative one 0 too: no entry), within 64 bits."""
    if token == b"(null)":
        return 0
    try:
        value = int(token, 16)
    except ValueError:
        value = 1 << 64
    if value >= 1 << 64:
        raise KallsymsError("Invalid address: " + token.decode("utf-8", "replace"))
    return max(value, 0)


# what each byte is to the parse: a hex digit's value, _END (it ends a field: the blanks " \v\f",
# TAB, LF, CR) or _OTHER
_END = 16
_OTHER = 17
_CLASS = bytes(int(chr(b), 16) if chr(b) in "0123456789abcdefABCDEF"
               else _END if b in b" \t\n\v\f\r" else _OTHER for b in range(256))


def _zeroed(n: int) -> tuple[array, array]:
    """Arrays of addresses and line spans for n entries, all 0: repeated from one, which
    writes each page once (array("Q", bytes(8 * n)) zeroes a bytes, then copies it: ~1-5 ms
    more in a fresh process for a 120 k-line kallsyms)."""
    zero = array("Q", [0])
    return zero * n, zero * (2 * n)


def _entries(data: bytes) -> tuple[array, array]:
    """(Addresses, line spans) of the entries of kallsyms text `data`, in file order.

    A line ends at LF, CR or the text's end. Its fields are the blank-separated words before
    its first TAB (the module follows the TAB); a line without fields is skipped, the first
    field must be an address (else KallsymsError), and a line of at least `address type name`
    with an address above 0 is an entry. Entry i is the line data[spans[2i]:spans[2i + 1]].
    """
    cap = len(data) // 32 + 16  # entries the arrays have room for: a line has ~45 bytes
    addrs, spans = _zeroed(cap)
    out_addrs = addrs
    out_spans = spans
    text = data
    classes = _CLASS
    end = len(data)
    n = 0
    pos = 0
    while pos < end:
        i = pos
        while i < end:  # blanks before the address
            c = text[i]
            if c != 32 and c != 11 and c != 12:  # " \v\f"
                break
            i += 1
        # the address: hex digits up to a blank, the TAB or the line's end
        first = i
        value = 0
        plain = True
        while i < end:
            digit = classes[text[i]]
            if digit == _END:
                break
            if digit == _OTHER or i - first == 16:
                plain = False
            else:
                value = value << 4 | digit
            i += 1
        fields = 0
        if i > first:
            if not plain:
                value = _address(data[first:i])
            fields = 1
        # the type and the start of the name: two more fields before the TAB
        while 0 < fields < 3 and i < end:
            c = text[i]
            if c == 32 or c == 11 or c == 12:
                i += 1
            elif c == 9 or c == 10 or c == 13:
                break
            else:
                fields += 1
                while fields < 3 and i < end and classes[text[i]] != _END:
                    i += 1
        while i < end:  # the rest of the line
            c = text[i]
            if c <= 13 and (c == 10 or c == 13):  # most bytes are above
                break
            i += 1
        if value and fields == 3:
            if n == cap:  # room for twice as many; no view may hold the arrays meanwhile
                out_addrs = out_spans = None
                more_addrs, more_spans = _zeroed(cap)
                addrs.extend(more_addrs)
                spans.extend(more_spans)
                cap *= 2
                out_addrs = addrs
                out_spans = spans
            out_addrs[n] = value
            out_spans[2 * n] = pos
            out_spans[2 * n + 1] = i
            n += 1
        pos = i + 1
    out_addrs = out_spans = None
    del addrs[n:], spans[2 * n:]
    return addrs, spans


def _ascending(addrs: array) -> bool:
    view = addrs
    k = 1
    while k < len(view):
        if view[k - 1] > view[k]:
            return False
        k += 1
    return True


def _reordered(addrs: array, spans: array) -> tuple[array, array]:
    """The entries sorted by address, equal addresses in file order (the last one wins a
    lookup, as in upstream's stable sort): mergesort's, from the text's ascending runs (the
    core kernel's symbols, then each module's)."""
    n = len(addrs)
    keys = addrs
    order = stable_order(keys, keys, keys, n)
    new_addrs, new_spans = _zeroed(n)
    spans_view = spans
    out_addrs = new_addrs
    out_spans = new_spans
    k = 0
    while k < n:
        j = order[k]
        out_addrs[k] = keys[j]
        out_spans[2 * k] = spans_view[2 * j]
        out_spans[2 * k + 1] = spans_view[2 * j + 1]
        k += 1
    return new_addrs, new_spans


class Kallsyms:
    """Sorted kernel symbol table: address -> (name, module), lines decoded on lookup."""

    def __init__(self, addrs: array | memoryview, lines: _Lines) -> None:
        self._addrs = addrs  # ascending; equal addresses keep file order
        self._lines = lines  # the raw line of each entry

    def __len__(self) -> int:
        return len(self._addrs)

    @staticmethod
    def cached_path(debug_paths: list[str], build_id: bytes) -> str | None:
        """First `D/[kernel.kallsyms]/<hex id>/kallsyms` (perf's build-id cache) that exists."""
        for d in debug_paths:
            cand = os.path.join(d, "[kernel.kallsyms]", build_id.hex(), "kallsyms")
            if d and probes.isfile(cand):
                return cand
        return None

    @staticmethod
    def load(path: str, worker=None, own=None,
             in_place: bool = False) -> Kallsyms | SortedKallsyms | RecordedKallsyms:
        """Parse `path` (or take `worker`'s table of it: a worker.KallsymsWorker, not imported
        here, as it imports this module); raises KallsymsError with upstream's message on
        failure. The text of a file read here is offered to `own` (a symbols.OwnCopy).
        `in_place`: the file is a copy the kernel wrote, searched where it lies when it looks
        as the kernel writes (SortedKallsyms)."""
        _depend_on(path)
        done = worker.table(path) if worker is not None else None
        if done is None and in_place:
            found = _in_place(path)
            if found is not None:
                table, identity = found
                return Kallsyms._answers(table._data, identity, None, table)
        if done is None:
            data, identity = read(path)
            key, table = None, None
        else:
            data = identity = None
            key, table = done
        loaded = Kallsyms._answers(data, identity, key, table)
        if data is not None and own is not None:
            own.keep_from(path, data)
        return loaded

    @staticmethod
    def _answers(data: bytes | None, identity: str | None, key: str | None,
                 table: Kallsyms | None) -> Kallsyms | RecordedKallsyms:
        """The table of kallsyms text `data` (or `table`, its parse), its answers kept in the
        run's persistent cache under `key` (else one made from `data` and `identity`)."""
        from ..cache import current

        cache = current()
        if cache is None:
            return Kallsyms.parse(data) if table is None else table
        # the persistent cache keeps the answers per content: a warm run parses nothing
        if key is None:
            key = cache_key(data, identity)
        rec = cache.record("kallsyms", key)
        if rec.data.get("parsed") is not True:
            if table is None:
                table = Kallsyms.parse(data)  # raises for a bad file: nothing is recorded
            rec.data["parsed"] = True
            rec.dirty = True
        return RecordedKallsyms(rec, data, table)

    @staticmethod
    def parse(data: bytes) -> Kallsyms:
        """The table of a kallsyms text; raises KallsymsError with upstream's message."""
        return Kallsyms(*Kallsyms._sorted(data))

    @staticmethod
    def _sorted(data: bytes) -> tuple[array, _Lines]:
        """(Ascending addresses, their lines in `data`) of a kallsyms text; raises
        KallsymsError."""
        addrs, spans = _entries(data)
        if not addrs:
            raise KallsymsError(EMPTY_MAPPING)
        in_order = _ascending(addrs)
        if not in_order:  # /proc/kallsyms lists the modules in load order
            addrs, spans = _reordered(addrs, spans)
        return addrs, _Lines(data, 0, spans, in_order)

    @staticmethod
    def write_table(f, data: bytes) -> None:
        """The table of kallsyms text `data` as `from_buffer` reads it (count, addresses,
        line spans, the text); raises KallsymsError."""
        addrs, lines = Kallsyms._sorted(data)
        f.write(_TABLE_HEAD.pack(len(addrs), lines._in_order))
        f.write(addrs)
        f.write(lines._spans)
        f.write(data)

    @staticmethod
    def from_buffer(buf) -> Kallsyms:
        """The table `write_table` wrote into `buf` (an mmap), used in place: no line is split or
        address converted until a lookup reads it."""
        n, in_order = _TABLE_HEAD.unpack_from(buf)
        view = memoryview(buf)
        at = _TABLE_HEAD.size
        addrs = view[at:at + 8 * n].cast("Q")
        spans = view[at + 8 * n:at + 24 * n].cast("Q")
        lines = _Lines(buf, at + 24 * n, spans, bool(in_order))  # type: ignore[arg-type]
        return Kallsyms(addrs, lines)

    def address_of(self, name: bytes) -> int | None:
        """The address of the core-kernel symbol `name` (a line without module), else None."""
        lines = self._lines
        return _symbol_address(lines._buf, lines._base, name, lines._in_order)

    def in_image(self, addr: int) -> bool:
        """Whether `addr` lies between two symbols of the kernel image (lines without a
        module): where what a boot loads (modules, BPF programs, trampolines) never is."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        lines = self._lines
        return (0 <= i < len(self._addrs) - 1
                and b"\t" not in lines[i] and b"\t" not in lines[i + 1])

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """(symbol start, name, module or "") of the last symbol at or below `addr`."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        return None if i < 0 else _answer(self._addrs[i], self._lines[i])


def _answer(addr: int, line: bytes) -> tuple[int, str, str]:
    """Kallsyms.lookup's answer for the entry `line` at `addr`."""
    fields, module = _split_line(line)
    return (addr, b" ".join(fields[2:]).decode("utf-8", "surrogateescape"),
            module.strip().decode("utf-8", "surrogateescape"))


_TABLE_HEAD = struct.Struct("=QQ")  # entries, whether they are in the text's order


def _symbol_address(text, start: int, name: bytes, in_order: bool) -> int | None:
    """The least address above 0 of the lines `<address> <type> <name>` in text[start:] (bytes
    or an mmap; lines end at LF or CR): the first such line of the sorted table, else None.
    A search for the name, not a parse of every line; it ends at the first such line when
    the table is the text's entries in order."""
    needle = b" " + name
    end = len(text)
    found = None
    at = text.find(needle, start)
    while at >= 0:
        after = at + len(needle)
        if after == end or text[after] in b"\n\r":
            line_at = text.rfind(b"\n", start, at) + 1 or start
            line_at = text.rfind(b"\r", line_at, at) + 1 or line_at
            fields = text[line_at:after].split()
            # a line's fields are its words before its first TAB
            if len(fields) == 3 and fields[2] == name and text.find(b"\t", line_at, at) < 0:
                try:
                    addr = int(fields[0], 16)
                except ValueError:
                    addr = 0
                if addr > 0 and (found is None or addr < found):
                    found = addr
                    if in_order:
                        break
        at = text.find(needle, at + 1)
    return found


class _Lines:
    """Line i of the text in `buf` from `base`, as bytes: `spans` holds the start and end
    offset of each line (a `Kallsyms.write_table` table, or a text as it is)."""

    __slots__ = ("_buf", "_base", "_spans", "_in_order")

    def __init__(self, buf, base: int, spans: memoryview | array, in_order: bool) -> None:
        self._buf = buf
        self._base = base
        self._spans = spans
        self._in_order = in_order  # the entries are in the text's order

    def __getitem__(self, i: int) -> bytes:
        base, spans = self._base, self._spans
        return self._buf[base + spans[2 * i]:base + spans[2 * i + 1]]


def _line_from(data, pos: int, end: int) -> int:
    """The first line start at or after `pos` in data[:end] (its lines end at LF), else
    `end`."""
    if pos == 0 or pos >= end:
        return min(pos, end)
    at = data.find(b"\n", pos - 1, end)
    return end if at < 0 else at + 1


def _line_end(data, pos: int, end: int) -> int:
    """Where the line holding `pos` ends in data[:end]: its LF, else `end`."""
    at = data.find(b"\n", pos, end)
    return end if at < 0 else at


def _kernel_line(data, pos: int, end: int) -> tuple[int, int]:
    """(Address, kind) of the line of `data` starting at `pos`, its head read only as the
    kernel writes it (`%016lx %c %s`, then a TAB and the module): kind 1 for an entry, 0
    for a line that is none (empty, or at address 0: what kptr_restrict and per-CPU symbols
    show), -1 for any other line, which _entries must read."""
    text = data
    classes = _CLASS
    if pos >= end or text[pos] == 10:
        return 0, 0
    # the address, a blank, the type, a blank and the name's first byte
    if pos + 19 >= end or text[pos + 16] != 32 or text[pos + 18] != 32:
        return 0, -1
    value = 0
    i = pos
    while i < pos + 16:
        digit = classes[text[i]]
        if digit >= 16:
            return 0, -1
        value = value << 4 | digit
        i += 1
    if classes[text[pos + 17]] == _END or classes[text[pos + 19]] == _END:
        return 0, -1
    return value, 1 if value else 0


def _last_entry(data, lo: int, hi: int, addr: int) -> tuple[int, int, int]:
    """(Start, end, address) of the last entry at or below `addr` among the lines of
    data[lo:hi] (lo: a line's start), whose entries are in address order; start -1 for none,
    -2 when a line read is not as the kernel writes it (_kernel_line).

    A binary search over the bytes, as look(1) does over a sorted file: each step reads the
    head of the first line starting in the second half of what is left, ~log2 of the bytes
    in all."""
    left = lo
    right = hi
    # the line at `left` is at or below addr (or is lo's), or is none; lines from `right`
    # are above addr
    while right - left > 1:
        mid = left + (right - left) // 2
        at = _line_from(data, mid, right)
        if at == right:
            right = mid  # no line starts in [mid, right)
            continue
        value, kind = _kernel_line(data, at, hi)
        if kind < 0:
            return -2, 0, 0
        if value <= addr:
            left = at
        else:
            right = at
    # the last entry from there back: lines that are none sort anywhere
    while True:
        value, kind = _kernel_line(data, left, hi)
        if kind < 0:
            return -2, 0, 0
        if kind and value <= addr:
            end = _line_end(data, left, hi)
            if not _plain(data, left, end):
                return -2, 0, 0
            return left, end, value
        if left == lo:
            return -1, 0, 0
        left = data.rfind(b"\n", lo, left - 1) + 1 or lo


def _next_entry(data, end: int, hi: int) -> int:
    """The address of the first entry in data[:hi] after the line ending at `end`, 0 for
    none, -1 when a line read is not as the kernel writes it."""
    at = end + 1
    while at < hi:
        value, kind = _kernel_line(data, at, hi)
        end = _line_end(data, at, hi)
        if kind:
            return value if kind > 0 and _plain(data, at, end) else -1
        at = end + 1
    return 0


def _plain(data, start: int, end: int) -> bool:
    """Whether data[start:end], a line of the image's part read only by its head, is as the
    kernel writes those: no TAB (a module's line, which the kernel lists after its image's)
    and no CR (a line end the kernel does not write, which Kallsyms.parse honours)."""
    return data.find(b"\t", start, end) < 0 and data.find(b"\r", start, end) < 0


def _tail_start(data) -> int:
    """Where the lines with a TAB start in a text the kernel wrote, which lists its modules'
    after its image's; len(data) for none. A binary search for the least position whose
    next line has a TAB, so that a file of 10-20 MB is not read whole (nor made resident)."""
    n = len(data)
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        at = _line_from(data, mid, n)
        if at < n and data.find(b"\t", at, _line_end(data, at, n)) >= 0:
            hi = mid
        else:
            lo = mid + 1
    return _line_from(data, lo, n)


class SortedKallsyms:
    """A kallsyms text the kernel wrote (perf's build-id cache copy of /proc/kallsyms, or the
    run's own copy, symbols.OwnCopy), looked up where it lies. The kernel lists its image's
    symbols in address order (scripts/kallsyms sorts them when the kernel is built): an
    address is found by a binary search over the text's bytes. Only what follows them, the
    lines with a TAB (modules, BPF programs, trampolines: a few thousand), is parsed. A run
    names ~100-5000 kernel addresses: this reads a few lines each, where a parse reads all
    120 k (~10 ms, and a worker process to hide them in).

    It answers as Kallsyms.parse's table of the same text, trusting the kernel's order (a
    line out of it, in a text made some other way, may go unseen). Should a lookup meet a
    line the kernel does not write (one with a CR, or a module's among the image's), the
    text is parsed whole then and that table answers; if it cannot be parsed, nothing is
    named from it. Nothing here reads the whole text: a mapped file's pages stay out of
    the run's memory but for the few each lookup reads."""

    def __init__(self, data, core_end: int, tail: Kallsyms | None) -> None:
        self._data = data  # bytes or an mmap
        self._core_end = core_end  # where the lines with a TAB start
        self._tail = tail  # their table
        self._parsed: Kallsyms | None = None  # the whole text's, once a line needed it
        # the last _core answer: KernelSymbols asks in_image, then lookup, of one address
        self._core_of: tuple[int, tuple[int, int, int]] = (-1, (-1, 0, 0))

    @staticmethod
    def of(data) -> SortedKallsyms | None:
        """The table of kallsyms text `data` (bytes or an mmap) if it looks as the kernel
        writes it: lines without a TAB first, in the kernel's form and address order where
        sampled (9 lines evenly spread: each read maps a few pages), one an entry; then
        only lines with a TAB. Else None: parse it."""
        core_end = _tail_start(data)
        tail = None
        if core_end < len(data):
            try:
                tail = Kallsyms.parse(bytes(data[core_end:]))
            except KallsymsError:
                return None
            if any(b"\t" not in tail._lines[i] for i in range(len(tail))):
                return None
        last = 0
        for k in range(9):
            value, kind = _kernel_line(data, _line_from(data, core_end * k // 8, core_end),
                                       core_end)
            if kind < 0 or value and value < last:
                return None
            last = value or last
        return SortedKallsyms(data, core_end, tail) if last else None

    def _whole(self) -> Kallsyms | bool:
        """The parse of the whole text, made on first need; False if it cannot be parsed."""
        if self._parsed is None:
            try:
                self._parsed = Kallsyms.parse(bytes(self._data))
            except KallsymsError:
                self._parsed = False
        return self._parsed

    def address_of(self, name: bytes) -> int | None:
        """As Kallsyms.address_of: the first line naming it (the image's lines are sorted)."""
        return _symbol_address(self._data, 0, name, True)

    def _core(self, addr: int) -> tuple[int, int, int]:
        """_last_entry's answer for `addr` among the image's lines; start -2 once the whole
        text's parse answers instead."""
        if self._parsed is not None:
            return -2, 0, 0
        at, found = self._core_of
        if at != addr:
            found = _last_entry(self._data, 0, self._core_end, addr)
            self._core_of = (addr, found)
        return found

    def _tail_at(self, addr: int) -> int:
        """Index of the last entry of the tail at or below addr, -1 for none."""
        return -1 if self._tail is None else bisect.bisect_right(self._tail._addrs, addr) - 1

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """As Kallsyms.lookup: of equal addresses the tail's is the later in the text."""
        start, end, value = self._core(addr)
        if start == -2:
            whole = self._whole()
            return whole.lookup(addr) if whole else None
        j = self._tail_at(addr)
        if j >= 0 and (start < 0 or self._tail._addrs[j] >= value):
            return _answer(self._tail._addrs[j], self._tail._lines[j])
        return None if start < 0 else _answer(value, self._data[start:end])

    def in_image(self, addr: int) -> bool:
        """As Kallsyms.in_image: the entry at or below `addr` and the one after it are both
        lines of the image, no entry of the tail from the first up to the second."""
        start, end, value = self._core(addr)
        following = 0 if start < 0 else _next_entry(self._data, end, self._core_end)
        if start == -2 or following < 0:
            whole = self._whole()
            return bool(whole) and whole.in_image(addr)
        if following == 0:
            return False
        j = self._tail_at(following - 1)
        return j < 0 or self._tail._addrs[j] < value


# what the live /proc/kallsyms shows, kept by content for the replay cache (probes.py): this
# boot (KASLR, the core kernel's symbols), the modules loaded and whether addresses are shown.
# Reading the table itself takes ~80 ms, which is what a replay saves. BPF programs loaded
# since do not count: a recording's samples of BPF code name the programs of its own time,
# which neither run sees.
_LIVE_KALLSYMS = ("/proc/sys/kernel/random/boot_id", "/proc/modules",
                  "/proc/sys/kernel/kptr_restrict")


def _depend_on(path: str) -> None:
    """Note what the names a run takes from the kallsyms file at `path` depend on."""
    if os.path.realpath(path) == LIVE:
        for live in _LIVE_KALLSYMS:
            try:
                probes.content(live)
            except OSError:
                pass
    else:
        probes.exists(path)


def read(path: str) -> tuple[bytes, str | None]:
    """(The text of a kallsyms file, gunzipped; the file's identity (cache.file_identity)
    when it is a regular file of the size that was read, else None); KallsymsError with
    upstream's message. /proc/kallsyms has no identity: its size reads 0 and a module load
    changes its content."""
    f = open_regular(path, max_size=MAX_KALLSYMS)
    if f is None:
        try:
            st = probes.stat(path)
        except OSError as e:
            raise KallsymsError(e.strerror or str(e)) from None
        if not stat.S_ISREG(st.st_mode):
            return b"", None  # a FIFO, a device (/dev/null): never read, nothing in it
        raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB"
                            if st.st_size > MAX_KALLSYMS else "cannot be opened")
    try:
        with f:
            data = read_bounded(f, MAX_KALLSYMS)
            st = os.fstat(f.fileno())
        if len(data) > MAX_KALLSYMS:
            raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB")
        identity = None
        if st.st_size == len(data):
            from ..cache import stat_identity

            identity = stat_identity(os.path.realpath(path), st)
        if data[:2] == b"\x1f\x8b":
            # a gzipped copy: bounded like a plain one (wbits 31: the gzip format)
            inflater = zlib.decompressobj(31)
            data = inflater.decompress(data, MAX_KALLSYMS + 1)
            if len(data) > MAX_KALLSYMS:
                raise KallsymsError(f"larger than {MAX_KALLSYMS >> 20} MB when decompressed")
            if not inflater.eof:
                raise KallsymsError("corrupt gzip data: truncated")
    except OSError as e:
        raise KallsymsError(e.strerror or str(e)) from None
    except zlib.error as e:
        raise KallsymsError(f"corrupt gzip data: {e}") from None
    return data, identity


def _in_place(path: str) -> tuple[SortedKallsyms, str] | None:
    """The in-place table of the kallsyms file `path`, mapped, and the file's identity
    (cache.file_identity); None when it cannot be mapped or is not as the kernel writes it
    (compressed, say): then it is read and parsed."""
    f = open_regular(path, max_size=MAX_KALLSYMS)
    if f is None:
        return None
    with f:
        try:
            st = os.fstat(f.fileno())
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # ValueError: an empty file
            return None
    table = SortedKallsyms.of(buf)
    if table is None:
        buf.close()
        return None
    from ..cache import stat_identity

    return table, stat_identity(os.path.realpath(path), st)


def cache_key(data: bytes, identity: str | None) -> str:
    """The persistent cache's key of a kallsyms text: the identity of the file that held it
    where it has one (perf's build-id cache copy: nothing to hash), else its SHA-256."""
    if identity is not None:
        return "file:" + identity
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


class RecordedKallsyms:
    """Lookups answered from a persistent cache record of this kallsyms content; the text
    is parsed on the first address the record does not know."""

    def __init__(self, rec, data: bytes | None, table: Kallsyms | None) -> None:
        self._rec = rec
        self._data = data
        self._table = table
        hits = rec.data.get("lookups")
        if type(hits) is not dict:
            hits = rec.data["lookups"] = {}
        self._hits: dict[int, tuple[int, str, str] | None] = hits
        image = rec.data.get("image")
        if type(image) is not dict:
            image = rec.data["image"] = {}
        self._image: dict[int, bool] = image  # in_image's answers

    def _parsed(self) -> Kallsyms:
        if self._table is None:
            self._table = Kallsyms.parse(self._data)
        return self._table

    def __len__(self) -> int:
        return len(self._parsed())

    def address_of(self, name: bytes) -> int | None:
        """As Kallsyms.address_of, kept in the record like the lookups."""
        from ..cache import ADDRESS_OF  # loaded already: this record came from it

        key = ADDRESS_OF + name.decode("utf-8", "surrogateescape")
        try:
            return self._rec.data[key]
        except KeyError:
            pass
        addr = self._rec.data[key] = self._parsed().address_of(name)
        self._rec.dirty = True
        return addr

    def in_image(self, addr: int) -> bool:
        """As Kallsyms.in_image, kept in the record like the lookups."""
        try:
            return self._image[addr]
        except KeyError:
            pass
        inside = self._image[addr] = self._parsed().in_image(addr)
        self._rec.dirty = True
        return inside

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """As Kallsyms.lookup."""
        try:
            return self._hits[addr]
        except KeyError:
            pass
        hit = self._hits[addr] = self._parsed().lookup(addr)
        self._rec.dirty = True
        return hit
