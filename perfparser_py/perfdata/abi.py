"""The perf.data ABI's numbers, each defined once, by its name in linux/perf_event.h (or perf's
tools/lib/perf/include/perf/event.h for the records perf itself writes) without the PERF_
prefix. The layouts these numbers select are in layout.py."""

# perf_event_attr.type (enum perf_type_id)
TYPE_HARDWARE, TYPE_SOFTWARE, TYPE_TRACEPOINT, TYPE_HW_CACHE, TYPE_RAW, TYPE_BREAKPOINT = range(6)

# perf_event_attr.sample_type (enum perf_event_sample_format)
SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
SAMPLE_TIME = 1 << 2
SAMPLE_ADDR = 1 << 3
SAMPLE_READ = 1 << 4
SAMPLE_CALLCHAIN = 1 << 5
SAMPLE_ID = 1 << 6
SAMPLE_CPU = 1 << 7
SAMPLE_PERIOD = 1 << 8
SAMPLE_STREAM_ID = 1 << 9
SAMPLE_RAW = 1 << 10
SAMPLE_BRANCH_STACK = 1 << 11
SAMPLE_REGS_USER = 1 << 12
SAMPLE_STACK_USER = 1 << 13
SAMPLE_WEIGHT = 1 << 14
SAMPLE_DATA_SRC = 1 << 15
SAMPLE_IDENTIFIER = 1 << 16
SAMPLE_TRANSACTION = 1 << 17
# the weight as a struct of three smaller ones, in the u64 slot SAMPLE_WEIGHT's takes (perf
# record -W on x86 and powerpc since perf 5.12, the plain weight elsewhere):
# PERF_SAMPLE_WEIGHT_TYPE is either
SAMPLE_WEIGHT_STRUCT = 1 << 24

# perf_event_attr.read_format (enum perf_event_read_format)
FORMAT_TOTAL_TIME_ENABLED = 1 << 0
FORMAT_TOTAL_TIME_RUNNING = 1 << 1
FORMAT_ID = 1 << 2
FORMAT_GROUP = 1 << 3
FORMAT_LOST = 1 << 4

# perf_event_attr.branch_sample_type (enum perf_branch_sample_type)
SAMPLE_BRANCH_HW_INDEX = 1 << 17

# perf_event_attr's flags bitfield (disabled is bit 0), little-endian numbering
FLAG_INHERIT = 1 << 1
FLAG_EXCLUDE_USER = 1 << 4
FLAG_EXCLUDE_KERNEL = 1 << 5
FLAG_FREQ = 1 << 10
FLAG_SAMPLE_ID_ALL = 1 << 18
FLAG_USE_CLOCKID = 1 << 25
FLAG_CONTEXT_SWITCH = 1 << 26

# the attr sizes of the ABI's versions (PERF_ATTR_SIZE_VER0 is the smallest there is)
ATTR_SIZE_VER0 = 64

# perf_event_header.type (enum perf_event_type, then perf's user_event_type)
RECORD_MMAP = 1
RECORD_LOST = 2
RECORD_COMM = 3
RECORD_EXIT = 4
RECORD_THROTTLE = 5
RECORD_UNTHROTTLE = 6
RECORD_FORK = 7
RECORD_READ = 8
RECORD_SAMPLE = 9
RECORD_MMAP2 = 10
RECORD_AUX = 11
RECORD_ITRACE_START = 12
RECORD_LOST_SAMPLES = 13
RECORD_SWITCH = 14
RECORD_SWITCH_CPU_WIDE = 15
RECORD_NAMESPACES = 16
RECORD_KSYMBOL = 17
RECORD_BPF_EVENT = 18
RECORD_CGROUP = 19
RECORD_TEXT_POKE = 20
RECORD_AUX_OUTPUT_HW_ID = 21
RECORD_CALLCHAIN_DEFERRED = 22  # a sample's user call chain, taken on its return to user space
RECORD_HEADER_ATTR = 64
RECORD_HEADER_EVENT_TYPE = 65
RECORD_HEADER_TRACING_DATA = 66
RECORD_HEADER_BUILD_ID = 67
RECORD_FINISHED_ROUND = 68
RECORD_ID_INDEX = 69
RECORD_AUXTRACE_INFO = 70
RECORD_AUXTRACE = 71
RECORD_AUXTRACE_ERROR = 72
RECORD_THREAD_MAP = 73
RECORD_CPU_MAP = 74
RECORD_STAT_CONFIG = 75
RECORD_STAT = 76
RECORD_STAT_ROUND = 77
RECORD_EVENT_UPDATE = 78
RECORD_TIME_CONV = 79
RECORD_HEADER_FEATURE = 80
RECORD_COMPRESSED = 81
RECORD_FINISHED_INIT = 82
RECORD_COMPRESSED2 = 83

# perf_event_header.misc
RECORD_MISC_KERNEL = 1
RECORD_MISC_USER = 2
RECORD_MISC_MMAP_DATA = 1 << 13  # MMAP/MMAP2: a non-executable mapping
RECORD_MISC_COMM_EXEC = 1 << 13  # COMM: the comm of an exec
RECORD_MISC_FORK_EXEC = 1 << 13  # FORK: a fork from exec (the same bit, another record type)
RECORD_MISC_SWITCH_OUT = 1 << 13  # SWITCH, SWITCH_CPU_WIDE
RECORD_MISC_MMAP_BUILD_ID = 1 << 14  # MMAP2: a build id in place of maj/min/ino

RECORD_KSYMBOL_FLAGS_UNREGISTER = 1 << 0

# EVENT_UPDATE's type (perf's enum perf_event_update_type)
EVENT_UPDATE__NAME = 2

# the callchain's context markers (enum perf_callchain_context)
CONTEXT_HV = 2**64 - 32
CONTEXT_KERNEL = 2**64 - 128
CONTEXT_USER = 2**64 - 512
# the user part comes later, in the CALLCHAIN_DEFERRED whose cookie follows this marker
CONTEXT_USER_DEFERRED = 2**64 - 640
CONTEXT_MAX = 2**64 - 4095  # values above are context markers

# MMAP2's prot (sys/mman.h)
PROT_READ = 1
PROT_EXEC = 4

# feature bits of the file header (perf's header.h, HEADER_*; SEMANTICS §2.3)
FEAT_TRACING_DATA = 1
FEAT_BUILD_ID = 2
FEAT_HOSTNAME = 3
FEAT_OSRELEASE = 4
FEAT_VERSION = 5
FEAT_ARCH = 6
FEAT_NRCPUS = 7
FEAT_CPUDESC = 8
FEAT_CPUID = 9
FEAT_TOTAL_MEM = 10
FEAT_CMDLINE = 11
FEAT_EVENT_DESC = 12
FEAT_CPU_TOPOLOGY = 13
FEAT_NUMA_TOPOLOGY = 14
FEAT_PMU_MAPPINGS = 16
FEAT_GROUP_DESC = 17
FEAT_DIR_FORMAT = 24  # perf.data directory (perf record --threads): u64 layout version
FEAT_COMPRESSED = 27
