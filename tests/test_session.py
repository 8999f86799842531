"""Session (session.py) on its own: the record -> process rules (fork, exec, exit, mmap
placement, the kernel's space) and which mapping events give a process's space a new
generation, which the later stages' per-process slots are checked against."""

from perfparser_py.session import Mapping, Session, is_special


def _map(start: int, end: int, image=None) -> Mapping:
    return Mapping(start, end, 0, b"//anon" if image is None else b"/lib/x.so", None, image, 0,
                   start)


def test_only_mappings_with_an_image_give_a_new_image_generation():
    session = Session()
    image = object()
    session.add_mapping(1, _map(0x1000, 0x2000, image))
    proc = session.process(1)
    generation, image_generation = proc.generation, proc.image_generation
    # data mapped over nothing, then over data: no module lookup answers differently
    session.add_mapping(1, _map(0x5000, 0x6000))
    session.add_mapping(1, _map(0x5800, 0x7000))
    assert proc.image_generation == image_generation
    assert proc.generation != generation  # but the space did change
    # data over the image's tail: lookups there now find no image
    session.add_mapping(1, _map(0x1800, 0x1900))
    assert proc.image_generation != image_generation
    image_generation = proc.image_generation
    session.add_mapping(1, _map(0x8000, 0x9000, image))  # a new image
    assert proc.image_generation != image_generation


def test_the_unwinders_steps_are_kept_across_data_mappings_and_dropped_for_images():
    from perfparser_py.unwind.process import process_unwind

    session = Session()
    image = object()
    session.add_mapping(1, _map(0x1000, 0x2000, image))
    proc = session.process(1)
    steps = process_unwind(proc, {}, None).steps
    steps.add(0x1500, "compiled step")
    session.add_mapping(1, _map(0x5000, 0x6000))
    steps = process_unwind(proc, {}, None).steps
    assert (len(steps), steps.get(0x1500)) == (1, "compiled step")
    session.add_mapping(1, _map(0x1800, 0x1900))
    steps = process_unwind(proc, {}, None).steps
    assert (len(steps), steps.get(0x1500, "none")) == (0, "none")


def test_an_exited_process_keeps_its_stack_history_and_drops_its_steps():
    from perfparser_py.unwind.process import process_unwind

    session = Session()
    session.add_mapping(1, _map(0x1000, 0x2000, object()))
    proc = session.process(1)
    state = process_unwind(proc, {}, None)
    state.steps.add(0x1500, "compiled step")
    state.history.put(0x7FF0, 0x1234)
    session.exit(1)
    assert session.exited[1] is proc
    # the samples of its exit path read the history; the steps are a cache they rebuild
    assert (state.history.word(0x7FF0), len(state.steps)) == (0x1234, 0)
    assert process_unwind(proc, {}, None) is state


def test_generations_are_unique_across_processes_and_an_exec_starts_a_new_one():
    session = Session()
    session.add_mapping(1, _map(0x1000, 0x2000))
    session.add_mapping(2, _map(0x1000, 0x2000))
    seen = {session.process(1).generation, session.process(2).generation}
    assert len(seen) == 2
    session.exec(1)
    seen.add(session.process(1).generation)
    assert len(seen) == 3
    proc = session.process(1)
    proc.before_exec = proc.space
    proc.exec_done()  # the old space names nothing more: the slots' memos are stale
    assert proc.generation not in seen


def test_the_symbolizers_memos_hold_until_an_address_they_looked_up_maps_anew():
    from perfparser_py.symbolize import process_symbols

    session = Session()
    session.add_mapping(1, _map(0x1000, 0x2000))
    proc = session.process(1)
    state = process_symbols(proc)
    state.cache.update({0x1500: 7, 0x9000: 8})
    state.unmapped.append(0x9000)  # looked up outside every mapping
    state.perf_map = False
    # mapped where nothing was and nothing was looked up: every answer holds
    session.add_mapping(1, _map(0x3000, 0x4000))
    assert process_symbols(proc).cache == {0x1500: 7, 0x9000: 8}
    # the same mapping recorded again (a [heap] on every brk) changes nothing at all
    generation = proc.generation
    session.add_mapping(1, _map(0x3000, 0x4000))
    assert proc.generation == generation
    # mapped where an unmapped address was looked up: that answer changes
    session.add_mapping(1, _map(0x8000, 0xA000))
    state = process_symbols(proc)
    assert state.cache == {} and state.perf_map is False  # the perf map is no memo
    state.cache[0x1500] = 7
    # mapped over a mapping: what its addresses map to changes
    session.add_mapping(1, _map(0x1800, 0x1900))
    assert process_symbols(proc).cache == {}


def _lib(start: int, end: int, path: bytes, pgoff: int = 0) -> Mapping:
    return Mapping(start, end, pgoff, path, None, None, 0, start)


def _paths(session: Session, pid: int) -> list[tuple[int, int, bytes]]:
    return [(m.start, m.end, m.path) for m in session.process(pid).space]


def test_a_fork_copies_the_parents_maps_and_a_thread_shares_them():
    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/bin/prog"))
    session.fork(11, 10, time=5, misc=0)
    session.fork(10, 10, time=6, misc=0)  # a thread: the same process
    assert _paths(session, 11) == _paths(session, 10) == [(0x1000, 0x2000, b"/bin/prog")]
    # the copy is the child's own: a later mmap in the parent does not reach it
    session.add_mapping(10, _lib(0x3000, 0x4000, b"/lib/late.so"))
    assert _paths(session, 11) == [(0x1000, 0x2000, b"/bin/prog")]


def test_a_synthesized_fork_keeps_what_perf_synthesized_for_the_child():
    """perf's records for processes that existed before the recording come at time 0, the
    child's maps before or after its FORK: the parent's maps must not replace them."""
    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/bin/parent"))
    session.add_mapping(11, _lib(0x5000, 0x6000, b"/bin/child"))
    session.fork(11, 10, time=0, misc=0)
    assert _paths(session, 11) == [(0x5000, 0x6000, b"/bin/child")]


def test_exec_drops_every_mapping_and_exit_keeps_them_for_late_samples():
    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/bin/old"))
    session.exec(10)
    assert _paths(session, 10) == []
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/bin/new"))
    session.exit(10)
    # a sample in the exit path still names user frames from the maps (as perf does)
    assert _paths(session, 10) == [(0x1000, 0x2000, b"/bin/new")]
    # a reused pid starts anew with its FORK
    session.fork(10, 1, time=99, misc=0)
    assert _paths(session, 10) == []


def test_an_mmap_over_others_cuts_them_and_keeps_the_pieces():
    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x4000, b"/lib/a.so"))
    session.add_mapping(10, _lib(0x2000, 0x3000, b"/lib/b.so"))
    assert _paths(session, 10) == [(0x1000, 0x2000, b"/lib/a.so"), (0x2000, 0x3000, b"/lib/b.so"),
                                   (0x3000, 0x4000, b"/lib/a.so")]
    space = session.process(10).space
    assert space.find(0x2fff).path == b"/lib/b.so" and space.find(0x4000) is None


def test_a_piece_with_an_offset_is_based_at_its_modules_first_piece():
    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/lib/a.so"))
    space = session.process(10).space
    assert space.base_for(b"/lib/a.so", 0x2000, 0) == 0x1000
    assert space.base_for(b"/lib/a.so", 0x2000, 7) == 0x2000  # another placement of the file
    assert space.base_for(b"/lib/other.so", 0x2000, 0) == 0x2000


def test_kernel_mappings_move_the_kernel_range_and_its_generation():
    from perfparser_py.session import KERNEL_PID

    session = Session()
    session.add_mapping(KERNEL_PID, _lib(0xFFFF0000, 0xFFFF8000, b"[kernel.kallsyms]_text"))
    generation = session.kernel.generation
    session.add_mapping(KERNEL_PID, _lib(0xFFFF9000, 0xFFFFA000, b"[bpf_prog]"))
    assert session.kernel_range == (0xFFFF0000, 0xFFFFA000)
    assert session.kernel.generation != generation
    session.remove_kernel_range(0xFFFF9000, 0xFFFFA000)
    assert session.kernel_range == (0xFFFF0000, 0xFFFF8000)


# -- events fed straight in: Session.mmap (the lookup passed in) and Session.task --------

def _mmap(pid: int, addr: int, length: int, pgoff: int, path: bytes, prot: int = 5):
    from perfparser_py.perfdata import events as ev

    return ev.MmapEvent(pid, pid, addr, length, pgoff, path, prot, 0, 0, 0, 0, None, 0, 0, pid,
                        pid, 0, 0)


class _Image:
    """An ELF image whose one PT_LOAD maps file offsets [0, 0x3000) at vaddr 0x400000."""

    def load_bias(self, addr: int, pgoff: int, prot: int) -> int | None:
        return addr - pgoff - 0x400000 if pgoff < 0x3000 else None


def test_an_mmap_is_placed_by_the_found_images_segment_and_based_at_its_first_piece():
    image = _Image()
    asked = []

    def find_elf(pid, path, build_id, ino):
        asked.append((pid, path))
        return (b"/local" + path).decode(), image if path == b"/lib/a.so" else None

    session = Session()
    session.mmap(_mmap(10, 0x7000, 0x1000, 0, b"/lib/a.so"), find_elf)
    session.mmap(_mmap(10, 0x8000, 0x1000, 0x1000, b"/lib/a.so"), find_elf)
    session.mmap(_mmap(10, 0x9000, 0x1000, 0x5000, b"/lib/a.so"), find_elf)  # no PT_LOAD
    session.mmap(_mmap(10, 0xA000, 0x1000, 0, b"/lib/gone.so"), find_elf)
    first, second, uncovered, gone = session.process(10).space
    assert asked == [(10, b"/lib/a.so")] * 3 + [(10, b"/lib/gone.so")]
    assert (first.bias, first.base, first.local) == (0x7000 - 0x400000, 0x7000, "/local/lib/a.so")
    assert (second.bias, second.base) == (0x7000 - 0x400000, 0x7000)
    assert (uncovered.image, uncovered.bias, uncovered.base) == (None, None, 0x9000)
    assert (gone.image, gone.local) == (None, "/local/lib/gone.so")
    assert session.process(10).first_image is image


def test_a_ksymbol_maps_kernel_code_and_its_unregistering_unmaps_it():
    from perfparser_py.perfdata import events as ev
    from perfparser_py.session import KERNEL_PID

    def find_elf(pid, path, build_id, ino):
        raise AssertionError("a KSYMBOL names no file")

    session = Session()
    session.mmap(ev.KsymbolEvent(0xFFFF9000, 0x100, 1, 0, b"bpf_prog_1", 5, 0, 0), find_elf)
    assert _paths(session, KERNEL_PID) == [(0xFFFF9000, 0xFFFF9100, b"bpf_prog_1")]
    session.mmap(ev.KsymbolEvent(0xFFFF9000, 0x100, 1, 1, b"bpf_prog_1", 6, 0, 0), find_elf)
    assert _paths(session, KERNEL_PID) == []


def test_only_the_main_threads_exec_and_exit_change_the_process():
    from perfparser_py.perfdata import events as ev
    from perfparser_py.perfdata.abi import RECORD_MISC_COMM_EXEC

    session = Session()
    session.add_mapping(10, _lib(0x1000, 0x2000, b"/bin/prog"))
    session.task(ev.ForkEvent(11, 10, 11, 10, 5, 5, 0, 0, 0))
    session.task(ev.CommEvent(10, 12, b"worker", 6, 0, 0, RECORD_MISC_COMM_EXEC))  # a thread
    session.task(ev.ExitEvent(10, 10, 12, 12, 7, 7, 0, 0, 0))  # a thread ends
    assert 10 in session.processes and _paths(session, 10) == [(0x1000, 0x2000, b"/bin/prog")]
    assert _paths(session, 11) == [(0x1000, 0x2000, b"/bin/prog")]  # the fork's copy
    session.task(ev.CommEvent(11, 11, b"other", 8, 0, 0, RECORD_MISC_COMM_EXEC))
    assert _paths(session, 11) == []
    session.task(ev.ExitEvent(10, 1, 10, 1, 9, 9, 0, 0, 0))
    assert 10 not in session.processes and 10 in session.exited


def test_span_at_is_the_mapping_or_the_gap_around_an_address() -> None:
    from perfparser_py.session import AddressSpace

    a = Mapping(0x1000, 0x2000, 0, b"/a", None, None, 0, 0x1000)
    b = Mapping(0x5000, 0x6000, 0, b"/b", None, None, 0, 0x5000)
    space = AddressSpace([a, b])
    assert space.span_at(0x1000) == (0x1000, 0x2000, a)
    assert space.span_at(0x1FFF) == (0x1000, 0x2000, a)
    assert space.span_at(0x2000) == (0x2000, 0x5000, None)
    assert space.span_at(0x10) == (0, 0x1000, None)
    assert space.span_at(0x6000) == (0x6000, 1 << 64, None)
    assert AddressSpace().span_at(0x1234) == (0, 1 << 64, None)


def test_an_anonymous_inode_is_no_file() -> None:
    """The kernel names an anonymous inode's mapping `anon_inode:[perf_event]` (perf's own
    ring buffer, in a `perf record -a` while another perf records) or `anon_inode:[io_uring]`:
    no ELF file to look for, nor to report missing."""
    assert is_special(b"anon_inode:[perf_event]") and is_special(b"anon_inode:[io_uring]")
    assert not is_special(b"/usr/lib/x86_64-linux-gnu/libc.so.6")
