"""Single-message byte vectors per flavour (vectors.toml beside this file) in both directions."""

import tomllib
from pathlib import Path

import pytest

from perfparser_py import protocol as P

VECTORS = tomllib.loads((Path(__file__).with_name("vectors.toml")).read_text())["vectors"]
CASES = [(v, f) for v in VECTORS for f in v["flavours"]]


def message(v: dict):
    fields = dict(v["fields"])
    if "string" in fields:
        fields["string"] = fields["string"].encode()
    if "values" in fields:
        fields["values"] = [tuple(p) for p in fields["values"]]
    return getattr(P, v["message"])(**fields)


@pytest.mark.parametrize(("vector", "flavour"), CASES,
                         ids=[f"{v['message']}-{f}" for v, f in CASES])
def test_vector(vector, flavour):
    raw = bytes.fromhex(vector["hex"])
    msg = message(vector)
    assert P.encode(msg, flavour) == raw
    stream = P.read_stream(P.HEADER + raw, flavour)
    assert len(stream.messages) == 1 and stream.trailing_bytes == b""
    assert P.encode(stream.messages[0], flavour) == raw
    if flavour != "1.3":  # 1.3 drops fields; the reader fills in defaults
        assert stream.messages[0] == msg


def test_every_flavour_and_sized_message_has_a_vector():
    covered = {(v["message"], f) for v, f in CASES}
    for name in ("Location", "Symbol", "Lost", "TracePointFormat"):
        for flavour in P.FLAVOURS:
            assert (name, flavour) in covered, (name, flavour)


@pytest.mark.parametrize(("type_id", "sizes"), [
    (P.Location.TYPE, {"1.3": 33, "1.4": 41, "1.5": 41, "current": 41}),
    (P.Symbol.TYPE, {"1.3": 18, "1.4": 38, "1.5": 39, "current": 39}),  # 1.4: PROTOCOL §5.2 says 34, but 18 + 8 + 8 + 4 = 38
    (P.Lost.TYPE, {"1.3": 21, "1.4": 29, "1.5": 29, "current": 29}),
    (P.TracePointFormat.TYPE, {"1.3": 17, "1.4": 17, "1.5": 17, "current": 21}),
    (P.DebugInfoDownloadProgress.TYPE, {"1.3": None, "1.4": 21, "1.5": 25, "current": 25}),
    (P.ThreadStart.TYPE, {"1.3": 25, "1.5": 25, "current": 25}),
    (P.Attributes.TYPE, {"1.3": 30, "1.5": 30, "current": 30}),
    (P.ContextSwitch.TYPE, {"1.3": 22, "1.5": 22, "current": 22}),
])
def test_documented_sizes(type_id, sizes):
    for flavour, size in sizes.items():
        assert P.message_size(type_id, flavour) == size
