"""The perf.data grammar: headers, attributes, features, records (construct declarations),
fast decoders for the hot records, and PerfReader that turns an input into events."""

from .attr import PerfEventAttr, generated_name
from .errors import PerfDataError
from .events import (
    AttrEvent,
    CommEvent,
    DataStartEvent,
    ExitEvent,
    FeaturesEvent,
    FinishedInitEvent,
    FinishedRoundEvent,
    ForkEvent,
    JitCodeEvent,
    KsymbolEvent,
    LostEvent,
    LostSamplesEvent,
    MmapEvent,
    ProgressEvent,
    SampleEvent,
    SwitchEvent,
    TimeConvEvent,
    TracingDataEvent,
)
from .features import HeaderFeatures
from .reader import PerfReader

__all__ = [
    "AttrEvent", "CommEvent", "DataStartEvent", "ExitEvent", "FeaturesEvent", "HeaderFeatures",
    "FinishedInitEvent", "FinishedRoundEvent", "ForkEvent", "JitCodeEvent", "KsymbolEvent",
    "LostEvent", "LostSamplesEvent", "MmapEvent", "PerfDataError", "PerfEventAttr",
    "PerfReader", "ProgressEvent", "SampleEvent", "SwitchEvent", "TimeConvEvent",
    "TracingDataEvent", "generated_name",
]
