"""perfparser-py: perf.data to hotspot QPERFSTREAM converter."""

__version__ = "0.2.0"
