"""Session: which mapping events clear a process's unwinder caches."""

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
