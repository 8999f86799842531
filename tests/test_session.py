"""Session (session.py) on its own: the record -> process rules (fork, exec, exit, mmap
placement, the kernel's space) and which mapping events clear a process's unwinder caches."""

from perfparser_py.session import Mapping, Session


def _map(start: int, end: int, image=None) -> Mapping:
    return Mapping(start, end, 0, b"//anon" if image is None else b"/lib/x.so", None, image, 0,
                   start)


def test_only_mappings_with_an_image_clear_the_unwinder_caches():
    session = Session()
    image = object()
    session.add_mapping(1, _map(0x1000, 0x2000, image))
    steps = session.process(1).unwind_steps
    steps[0x1500] = "compiled step"
    # data mapped over nothing, then over data: no module lookup answers differently
    session.add_mapping(1, _map(0x5000, 0x6000))
    session.add_mapping(1, _map(0x5800, 0x7000))
    assert steps == {0x1500: "compiled step"}
    # data over the image's tail: lookups there now find no image
    session.add_mapping(1, _map(0x1800, 0x1900))
    assert steps == {}
    steps[0x1500] = "compiled step"
    session.add_mapping(1, _map(0x8000, 0x9000, image))  # a new image
    assert steps == {}


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
    generation = session.kernel_generation
    session.add_mapping(KERNEL_PID, _lib(0xFFFF9000, 0xFFFFA000, b"[bpf_prog]"))
    assert session.kernel_range == (0xFFFF0000, 0xFFFFA000)
    assert session.kernel_generation > generation
    session.remove_kernel_range(0xFFFF9000, 0xFFFFA000)
    assert session.kernel_range == (0xFFFF0000, 0xFFFF8000)
