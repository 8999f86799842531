"""The perf.data grammar: headers, attributes, features, records (construct declarations),
fast decoders for the hot records, and PerfReader that turns an input into events."""

from ..standins import import_without

import_without("construct", ("pdb", "pickle", "traceback", "inspect"))

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
