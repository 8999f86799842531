"""The perf.data grammar: the kernel's numbers (abi), the record layouts declared once
(layout), headers, attributes, features, records (construct declarations), fast decoders for
the hot records, and PerfReader (reader) that turns an input into events. Importers name the
submodule: importing the package loads nothing (stream2text reads abi without construct)."""
