"""The perf.data grammar: headers, attributes, features, records (construct declarations),
fast decoders for the hot records, and PerfReader that turns an input into events."""

import sys
import types


class _OnFirstUse(types.ModuleType):
    """Stands in for a module while construct is imported. construct imports pdb (with bdb,
    cmd, code, glob, pprint), traceback (with textwrap) and pickle for its Debugger and its
    Pickled field, which the parser never uses: ~8 ms of every start. The real module is
    imported if one of those is ever used."""

    def __getattr__(self, attr):
        import importlib

        name = self.__name__
        if sys.modules.get(name) is self:  # used while construct is still being imported
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)


def _import_construct() -> None:
    stand_ins = [n for n in ("pdb", "pickle", "traceback") if n not in sys.modules]
    for name in stand_ins:
        sys.modules[name] = _OnFirstUse(name)
    try:
        import construct  # noqa: F401
    finally:
        for name in stand_ins:
            if isinstance(sys.modules.get(name), _OnFirstUse):
                del sys.modules[name]


if "construct" not in sys.modules:
    _import_construct()

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
