"""perfparser-py: perf.data to hotspot QPERFSTREAM converter."""
