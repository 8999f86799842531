"""The values of the stream that are not plain numbers, as the writer is given them: the
QVariant of tracepoint data, the structs of the FeaturesDefinition and that message itself.

The reader gives back the same classes. Their fields are checked against the schema when a
codec is built for them (codec.py). Named tuples, not dataclasses: making these six took
~22 M instructions of every start (dataclass() compiles each class's methods), ~3 % of a
5k-sample run; namedtuple compiles one line per class.
"""

from __future__ import annotations

from ..tuples import TYPE_CHECKING, named_tuple

if TYPE_CHECKING:
    from typing import Any


@named_tuple
class Variant:
    """A QVariant as used in tracepoint data: type id (PROTOCOL §2.1) and the value.

    value is an int for the numeric ids, bytes for 12 (QByteArray), a list of Variant for
    9 (QVariantList) and None for 0 (invalid, which Qt5 writes with is_null set).
    """

    type_id: int
    value: Any = None
    is_null: bool = False


INVALID_VARIANT = Variant(0, None, True)


@named_tuple
class BuildId:
    """A file perf lists with samples: its build id (FEATURES build-id table)."""

    pid: int
    id: bytes | None
    file_name: bytes | None


@named_tuple
class NumaNode:
    """One NUMA node of the recording machine (feature NUMA_TOPOLOGY)."""

    node_id: int
    mem_total: int
    mem_free: int
    cpus: bytes | None


@named_tuple
class Pmu:
    """A PMU type number and its name (feature PMU_MAPPINGS)."""

    type: int
    name: bytes | None


@named_tuple
class GroupDesc:
    """An event group: its leader and size (feature GROUP_DESC)."""

    name: bytes | None
    leader_index: int
    num_members: int


# Features is the one message the run writes from a named tuple; the others are only needed to
# read streams (messages.py). Field order = wire order of the newest flavour.


@named_tuple
class Features:
    """FeaturesDefinition; an absent string feature is None (written as a null QByteArray)."""

    host_name: bytes | None = None
    os_release: bytes | None = None
    version: bytes | None = None
    arch: bytes | None = None
    nr_cpus_online: int = 0
    nr_cpus_available: int = 0
    cpu_desc: bytes | None = None
    cpu_id: bytes | None = None
    total_mem: int = 0
    cmdline: list[bytes] | None = None
    build_ids: list[BuildId] | None = None
    sibling_cores: list[bytes] | None = None
    sibling_threads: list[bytes] | None = None
    numa_topology: list[NumaNode] | None = None
    pmu_mappings: list[Pmu] | None = None
    group_descs: list[GroupDesc] | None = None


Features.TYPE = 7  # the message type id; a class attribute would be a field
