"""QPERFSTREAM message layouts (spec/PROTOCOL.md §2, §3, §5): schema.json beside this module,
one source of truth for the writer and the reader, read once at import. It is package data:
in the wheel through pyproject's package-data, in the executable through packaging/perfparser.spec.
JSON, not TOML: tomllib imports typing and datetime, ~5 ms of every start; json ~1 ms.

Flavours, oldest first. A field or message with `"since": F` exists in flavour F and every
newer one; without `since` it exists in all of them. `default` is what the reader fills in
for a field the flavour does not carry (0 when not given).
  1.3      hotspot 1.3.0 (Debian/Ubuntu): perfparser 617194e
  1.4      hotspot 1.4.x: perfparser 4d1c834 (no Symbol.isInline, no DebugInfo module)
  1.5      hotspot 1.5 = upstream f383638 = the golden files
  current  hotspot >= 1.6 (tracepoint format ids)

Field types: qint8 quint8 bool qint16 quint16 qint32 quint32 qint64 quint64 double
float (a C++ float: written widened to an 8-byte double), QByteArray (null = None),
QString (UTF-16BE, null = None), QVariant, QVector<T>/QList<T> (uint32 count + elements),
QPair<A,B>, QHash<K,V> (uint32 count + key/value pairs, kept in wire order), and the
names of the structs.
"""

import json
import os

_FILE = os.path.join(os.path.dirname(__file__), "schema.json")
__datafiles__ = (_FILE,)  # what the stream depends on besides the modules (probes.py)
with open(_FILE, "rb") as _f:
    SCHEMA = json.load(_f)
