"""The perf.data grammar: headers, attributes, features, records (construct declarations),
fast decoders for the hot records, and PerfReader that turns an input into events."""

import sys
import types


class _PdbOnFirstUse(types.ModuleType):
    """Stands in for pdb while construct is imported: construct.debug imports pdb (with bdb,
    cmd, code, glob and pprint: ~5 ms of every start) for its Debugger, which the parser never
    uses. The real module is imported if that Debugger ever calls it."""

    def __getattr__(self, name):
        import importlib

        return getattr(importlib.import_module("pdb"), name)


if "construct" not in sys.modules and "pdb" not in sys.modules:
    sys.modules["pdb"] = _PdbOnFirstUse("pdb")
    try:
        import construct  # noqa: F401
    finally:
        del sys.modules["pdb"]

from .attr import PerfEventAttr, generated_name  # noqa: E402
from .errors import PerfDataError  # noqa: E402
from .events import (  # noqa: E402
    AttrEvent,
    CommEvent,
    DataStartEvent,
    ExitEvent,
    FeaturesEvent,
    FinishedInitEvent,
    FinishedRoundEvent,
    ForkEvent,
    LostEvent,
    LostSamplesEvent,
    MmapEvent,
    ProgressEvent,
    SampleEvent,
    SwitchEvent,
    TracingDataEvent,
)
from .features import Features  # noqa: E402
from .reader import PerfReader  # noqa: E402

__all__ = [
    "AttrEvent", "CommEvent", "DataStartEvent", "ExitEvent", "Features", "FeaturesEvent",
    "FinishedInitEvent", "FinishedRoundEvent", "ForkEvent", "LostEvent", "LostSamplesEvent",
    "MmapEvent", "PerfDataError", "PerfEventAttr", "PerfReader", "ProgressEvent", "SampleEvent",
    "SwitchEvent", "TracingDataEvent", "generated_name",
]
