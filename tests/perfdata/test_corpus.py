"""Every corpus perf.data decodes to the end with exactly the samples perf (or upstream) sees."""

from __future__ import annotations

import collections
import tomllib

import pytest
from tests.perfdata.perfdata_corpus import CORPUS, corpus_id, good_files, read_file

from perfparser_py.perfdata.attr import generated_name
from perfparser_py.perfdata.events import AttrEvent, CommEvent, DataStartEvent, FeaturesEvent, ForkEvent, ProgressEvent, SampleEvent


def _expected_total(path) -> int | None:
    """Sample count from the case's ground truth or upstream's expected text dump."""
    if path.parent.parent.name == "recorded":
        truth = tomllib.loads((path.parent / "case.toml").read_text())["truth"]
        for counts in truth.values():
            if counts["data"] == path.name:
                return counts["total_samples"]
        return None
    expected = path.with_name(path.name + ".expected.txt")
    if expected.exists():
        return sum(1 for line in expected.read_text().splitlines()
                   if line and not line[0].isspace())
    return {"probe.data.file": 1, "probe.data.stream": 1, "contentsize.data": 69,
            "cpp-inlining.perf.data": None}[path.name]


@pytest.mark.parametrize("path", good_files(), ids=corpus_id)
def test_parses_to_the_end(path):
    events = read_file(path)
    samples = [e for e in events if isinstance(e, SampleEvent)]
    expected = _expected_total(path)
    if expected is not None:
        assert len(samples) == expected
    assert samples
    if any(isinstance(e, FeaturesEvent) for e in events):  # file mode: fixed header order
        kinds = [type(e) for e in events]
        start = kinds.index(DataStartEvent)
        assert kinds[start + 1] is ProgressEvent
        assert events[start + 1].fraction == 0.0
        assert FeaturesEvent in kinds[:start] and AttrEvent in kinds[:start]
        assert all(k is not AttrEvent for k in kinds[start:])


def _truth_cases():
    for toml in sorted(CORPUS.glob("recorded/*/case.toml")):
        truth = tomllib.loads(toml.read_text()).get("truth", {})
        for counts in truth.values():
            yield pytest.param(toml.parent / counts["data"], counts,
                               id=f"{toml.parent.name}/{counts['data']}")


@pytest.mark.parametrize(("path", "counts"), list(_truth_cases()))
def test_counts_by_comm_and_event(path, counts):
    """perf's view: comm of the sample's thread at sample time; event = EVENT_DESC name (file)
    or, in pipe mode, the EVENT_UPDATE / EVENT_DESC record's name (`cpu-clock:ppp`)."""
    names: dict[int, str] = {}
    first_name = None
    timeline = []
    events = read_file(path)
    for n, e in enumerate(events):
        if isinstance(e, AttrEvent):
            name = e.name or generated_name(e.attr)
            first_name = first_name or name
            for i in e.ids:
                names.setdefault(i, name)
        elif isinstance(e, (SampleEvent, CommEvent, ForkEvent)):
            timeline.append((e.time, n, e))
    comm: dict[int, str | None] = {}
    by_comm: collections.Counter = collections.Counter()
    by_event: collections.Counter = collections.Counter()
    for _, _, e in sorted(timeline, key=lambda t: t[:2]):
        if isinstance(e, CommEvent):
            comm[e.tid] = e.comm.decode()
        elif isinstance(e, ForkEvent):
            comm.setdefault(e.tid, comm.get(e.ptid))
        else:
            by_comm[comm.get(e.tid)] += 1
            by_event[names.get(e.id, first_name)] += 1
    assert dict(by_comm) == counts["by_comm"]
    assert dict(by_event) == counts["by_event"]
