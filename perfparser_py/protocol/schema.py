"""QPERFSTREAM message layouts (spec/PROTOCOL.md §2, §3, §5): SCHEMA below, one source of truth
for the writer and the reader. Data written as a Python literal (in JSON's syntax, which it
is too), compiled with the module: parsing a JSON file took the json module's import, ~1.7 ms
of every start on the writing side's path (TOML's tomllib ~5 ms).

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

SCHEMA = {
  "flavours": ["1.3", "1.4", "1.5", "current"],
  "structs": {
    "BuildId": {"fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "id", "type": "QByteArray"},
      {"name": "file_name", "type": "QByteArray"}
    ]},
    "NumaNode": {"fields": [
      {"name": "node_id", "type": "quint32"},
      {"name": "mem_total", "type": "quint64"},
      {"name": "mem_free", "type": "quint64"},
      {"name": "cpus", "type": "QByteArray"}
    ]},
    "Pmu": {"fields": [
      {"name": "type", "type": "quint32"},
      {"name": "name", "type": "QByteArray"}
    ]},
    "GroupDesc": {"fields": [
      {"name": "name", "type": "QByteArray"},
      {"name": "leader_index", "type": "quint32"},
      {"name": "num_members", "type": "quint32"}
    ]}
  },
  "messages": [
    {"id": 0, "name": "ThreadStart", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "ppid", "type": "qint32"}
    ]},
    {"id": 1, "name": "ThreadEnd", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"}
    ]},
    {"id": 2, "name": "Command", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "comm", "type": "qint32"}
    ]},
    {"id": 3, "name": "Location", "spec_name": "LocationDefinition", "fields": [
      {"name": "id", "type": "qint32"},
      {"name": "address", "type": "quint64"},
      {"name": "file", "type": "qint32"},
      {"name": "pid", "type": "quint32"},
      {"name": "line", "type": "qint32"},
      {"name": "column", "type": "qint32"},
      {"name": "parent_location_id", "type": "qint32"},
      {"name": "rel_addr", "type": "quint64", "since": "1.4"}
    ]},
    {"id": 4, "name": "Symbol", "spec_name": "SymbolDefinition", "fields": [
      {"name": "id", "type": "qint32"},
      {"name": "name", "type": "qint32"},
      {"name": "binary", "type": "qint32"},
      {"name": "path", "type": "qint32"},
      {"name": "is_kernel", "type": "bool"},
      {"name": "rel_addr", "type": "quint64", "since": "1.4"},
      {"name": "size", "type": "quint64", "since": "1.4"},
      {"name": "actual_path", "type": "qint32", "since": "1.4", "default": -1},
      {"name": "is_inline", "type": "bool", "since": "1.5"}
    ]},
    {"id": 5, "name": "String", "spec_name": "StringDefinition", "fields": [
      {"name": "id", "type": "qint32"},
      {"name": "string", "type": "QByteArray"}
    ]},
    {"id": 6, "name": "Lost", "spec_name": "LostDefinition", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "lost", "type": "quint64", "since": "1.4"}
    ]},
    {"id": 7, "name": "Features", "spec_name": "FeaturesDefinition", "fields": [
      {"name": "host_name", "type": "QByteArray"},
      {"name": "os_release", "type": "QByteArray"},
      {"name": "version", "type": "QByteArray"},
      {"name": "arch", "type": "QByteArray"},
      {"name": "nr_cpus_online", "type": "quint32"},
      {"name": "nr_cpus_available", "type": "quint32"},
      {"name": "cpu_desc", "type": "QByteArray"},
      {"name": "cpu_id", "type": "QByteArray"},
      {"name": "total_mem", "type": "quint64"},
      {"name": "cmdline", "type": "QList<QByteArray>"},
      {"name": "build_ids", "type": "QList<BuildId>"},
      {"name": "sibling_cores", "type": "QList<QByteArray>"},
      {"name": "sibling_threads", "type": "QList<QByteArray>"},
      {"name": "numa_topology", "type": "QList<NumaNode>"},
      {"name": "pmu_mappings", "type": "QList<Pmu>"},
      {"name": "group_descs", "type": "QList<GroupDesc>"}
    ]},
    {"id": 8, "name": "Error", "fields": [
      {"name": "code", "type": "qint32"},
      {"name": "message", "type": "QString"}
    ]},
    {"id": 9, "name": "Progress", "fields": [
      {"name": "percent", "type": "float"}
    ]},
    {"id": 10, "name": "TracePointFormat", "fields": [
      {"name": "id", "type": "qint32"},
      {"name": "system", "type": "qint32"},
      {"name": "name", "type": "qint32"},
      {"name": "flags", "type": "quint32"},
      {"name": "format", "type": "qint32", "since": "current", "default": -1}
    ]},
    {"id": 11, "name": "Attributes", "spec_name": "AttributesDefinition", "fields": [
      {"name": "id", "type": "qint32"},
      {"name": "attr_type", "type": "quint32"},
      {"name": "config", "type": "quint64"},
      {"name": "name", "type": "qint32"},
      {"name": "uses_frequency", "type": "bool"},
      {"name": "frequency_or_period", "type": "quint64"}
    ]},
    {"id": 12, "name": "ContextSwitch", "spec_name": "ContextSwitchDefinition", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "switch_out", "type": "bool"}
    ]},
    {"id": 13, "name": "Sample", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "frames", "type": "QVector<qint32>"},
      {"name": "guessed_frames", "type": "quint8"},
      {"name": "values", "type": "QVector<QPair<qint32,quint64>>"}
    ]},
    {"id": 14, "name": "TracePointSample", "fields": [
      {"name": "pid", "type": "qint32"},
      {"name": "tid", "type": "qint32"},
      {"name": "time", "type": "quint64"},
      {"name": "cpu", "type": "quint32"},
      {"name": "frames", "type": "QVector<qint32>"},
      {"name": "guessed_frames", "type": "quint8"},
      {"name": "values", "type": "QVector<QPair<qint32,quint64>>"},
      {"name": "event_format_id", "type": "quint32", "since": "current"},
      {"name": "trace_data", "type": "QHash<qint32,QVariant>"}
    ]},
    {"id": 15, "name": "DebugInfoDownloadProgress", "since": "1.4", "fields": [
      {"name": "module", "type": "qint32", "since": "1.5", "default": -1},
      {"name": "url", "type": "qint32"},
      {"name": "numerator", "type": "qint64"},
      {"name": "denominator", "type": "qint64"}
    ]}
  ]
}
