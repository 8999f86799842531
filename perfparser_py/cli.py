"""Command line, exit codes and the top-level run, as spec/CLI.md describes upstream's.

Option syntax follows Qt's QCommandLineParser (what hotspot and scripts already use):
`--name value` or `--name=value`, last one wins. Upstream ignores positional arguments; the
first one is taken as the input file when --input is not given (hotspot never passes one, but
`perfparser perf.data` is the first command people type).
"""

from __future__ import annotations

import gc
import os
import sys

from .exitcodes import CANNOT_OPEN, DATA_ERROR, INVALID_OPTION, NO_ERROR, TCP_SOCKET_ERROR

APP_VERSION = "10.0"  # upstream's, whose command line and stream this follows

_VALUE_OPTIONS = {
    "input": "Path to perf data file to be parsed (or the first argument). If not given, "
    "stdin is read.",
    "host": "Host to connect to for reading perf data; port defaults to 9327.",
    "port": "Port to connect to on the host given by --host.",
    "output": "Path to output file. If not given, stdout is written.",
    "sysroot": "Path to sysroot which is used to find libraries (default: /).",
    "debug": "Colon-separated paths to debug information "
    "(default: <sysroot>/usr/lib/debug:$HOME/.debug:.debug).",
    "extra": "Colon-separated paths searched recursively for libraries (default: none).",
    "app": "Path to the application binary and its libraries, searched recursively.",
    "arch": "Architecture of the recorded machine, when the data does not say.",
    "kallsyms": "Path to kallsyms mapping (default: <sysroot>/proc/kallsyms).",
    "perf-map-path": "Directory checked first for perf-<pid>.map JIT maps.",
    "buffer-size": "Size of event buffer in kilobytes (default: 32768; 0 = rounds only).",
    "max-buffer-size": "Maximum size of event buffer in kilobytes (default: 1048576).",
    "max-frames": "Maximum number of frames that will be unwound (default: 64, -1 = no limit).",
    "protocol": "Output protocol flavour: auto, current (hotspot >= 1.6), 1.5, 1.4, 1.3 "
    "(those hotspot releases). Default: $PERFPARSER_PROTOCOL, else auto.",
}
_FLAG_OPTIONS = {
    "print-stats": "Print statistics instead of the protocol stream.",
    "no-cache": "Do not read or write the persistent cache of symbols and of whole runs "
    "(also: $PERFPARSER_NO_CACHE).",
    "help": "Displays help on commandline options.",
    "help-all": "Displays help including Qt specific options.",
    "version": "Displays version information.",
}


class UsageError(Exception):
    """Command-line syntax error: exit 1 like Qt's parser."""


class Options:
    """A run's settings; the class attributes are the defaults (a plain class: the options
    are read before the worker fork, which wants few modules imported)."""

    input: str | None = None
    host: str | None = None
    port: int = 9327
    output: str | None = None
    sysroot: str = "/"
    debug: str | None = None
    extra: str = ""
    app: str = ""
    arch: str | None = None
    kallsyms: str | None = None
    perf_map_path: str | None = None
    buffer_size: int = 32768 * 1024
    max_buffer_size: int = 1048576 * 1024
    max_frames: int = 64
    print_stats: bool = False
    protocol: str | None = None
    no_cache: bool = False

    def debug_paths(self) -> list[str]:
        """The --debug directories, by default <sysroot>/usr/lib/debug, ~/.debug and .debug."""
        paths = self.debug
        if paths is None:
            paths = self.sysroot + "/usr/lib/debug:" + os.path.expanduser("~/.debug") + ":.debug"
        return [p for p in paths.split(":") if p]


def parse_args(argv: list[str]) -> dict[str, str | bool]:
    """Qt-style parse: returns option name -> value (or True for flags)."""
    values: dict[str, str | bool] = {}
    positional: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "-?"):
            values["help"] = True
        elif arg == "-v":
            values["version"] = True
        elif arg == "--":
            positional.extend(it)
            break
        elif arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in _VALUE_OPTIONS:
                if not eq:
                    try:
                        value = next(it)
                    except StopIteration:
                        raise UsageError(f"Missing value after '{arg}'.") from None
                values[name] = value
            elif name in _FLAG_OPTIONS and not eq:
                values[name] = True
            else:
                raise UsageError(f"Unknown option '{name}'.")
        elif arg.startswith("-") and len(arg) > 1:
            unknown = [c for c in arg[1:] if c not in "hv?"]
            if unknown:
                raise UsageError(f"Unknown option '{unknown[0]}'.")
            for c in arg[1:]:
                values["version" if c == "v" else "help"] = True
        else:
            positional.append(arg)
    if positional and "input" not in values:
        values["input"] = positional[0]
    return values


def _unsigned(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _signed(text: str) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    return int(text) if body.isdigit() else None


def make_options(values: dict[str, str | bool]) -> Options:
    """Validate values; raises ValueError(message) for exit 7."""
    o = Options()
    for name in ("input", "host", "output", "debug", "arch", "kallsyms", "perf-map-path",
                 "protocol"):
        if name in values:
            setattr(o, name.replace("-", "_"), values[name])
    for name in ("sysroot", "extra", "app"):
        if name in values:
            setattr(o, name, values[name])
    if "port" in values:
        port = _unsigned(str(values["port"]).strip())
        o.port = port if port is not None and port < 65536 else 0
    for name, attr in (("buffer-size", "buffer_size"), ("max-buffer-size", "max_buffer_size")):
        if name in values:
            kib = _unsigned(str(values[name]).strip())
            if kib is None:
                raise ValueError(
                    "Failed to parse buffer-size argument. Expected unsigned integer, "
                    f'got: "{values[name]}"'
                )
            setattr(o, attr, (kib * 1024) & 0xFFFFFFFF)  # upstream's 32-bit arithmetic
    if "max-frames" in values:
        frames = _signed(str(values["max-frames"]).strip())
        if frames is None:
            raise ValueError(
                f'Failed to parse max-frames argument. Expected integer, got: "{values["max-frames"]}"'
            )
        o.max_frames = frames
    o.print_stats = bool(values.get("print-stats"))
    o.no_cache = bool(values.get("no-cache"))
    return o


def usage() -> str:
    rows = [("-h, --help, -?", "Displays help on commandline options."),
            ("--help-all", "Displays help including Qt specific options."),
            ("-v, --version", "Displays version information.")]
    rows += [(f"--{name} <{name}>", text) for name, text in _VALUE_OPTIONS.items()]
    rows += [(f"--{name}", _FLAG_OPTIONS[name]) for name in ("print-stats", "no-cache")]
    width = max(len(o) for o, _ in rows) + 4
    return "\n".join([
        "Usage: perfparser [options] [perf.data]",
        "Perf data parser and unwinder.",
        "perfparser-py (Python replacement of KDAB perfparser)",
        "",
        "Options:",
        *(f"  {o}".ljust(width) + text for o, text in rows),
    ]) + "\n"


def version() -> str:
    from . import __version__, compiled_core

    core = "compiled" if compiled_core() else "interpreted"  # setup.py, PERFPARSER_PY_PURE
    return (f"perfparser-py {__version__}: perfparser {APP_VERSION}'s command line and "
            f"stream, for hotspot 1.3 to 1.6\nperfparser-py core: {core}\n")


def _terminal_refusal(values: dict[str, str | bool]) -> str | None:
    """Why a run would do nothing useful at a terminal: read a perf.data typed on it, or
    write binary to it."""
    if "input" not in values and "host" not in values and sys.stdin.isatty():
        return ("no input: give the perf.data file (perfparser perf.data, or --input FILE), "
                "or pipe one in (perf record -o - ... | perfparser)")
    if "output" not in values and not values.get("print-stats") and sys.stdout.isatty():
        return ("not writing the binary stream to a terminal: give --output FILE or "
                "redirect stdout (perfparser-stream2text --summary FILE shows it as text)")
    return None


def _pass_through(path: str, out, flavour: str) -> int:
    from .protocol import ProtocolError
    from .saved_stream import pass_through

    try:
        note = pass_through(path, out, flavour)
    except ProtocolError as err:
        _error(f"{path}: a damaged saved stream: {err}")
        return DATA_ERROR
    except OSError as err:
        _error(f"Failed to open file {path}: {err.strerror}")
        return CANNOT_OPEN
    if note:
        _error(f"{path}: {note}")
    return NO_ERROR


def _error(message: str) -> None:
    print(f"perfparser: {message}", file=sys.stderr)


# the runs of an exiting process, with all they hold (the persistent cache among it):
# os._exit drops them wholesale (entry)
_LEFT_FOR_EXIT: list = []


def main(argv: list[str] | None = None, exiting: bool = False) -> int:
    """Run the command line `argv`; `exiting`: the process ends with os._exit right after,
    so the run's objects are kept rather than freed one by one (4-9 ms on a small file)."""
    argv = sys.argv[1:] if argv is None else argv
    # A run allocates millions of long-lived objects (locations, cached tuples, DWARF/symbol
    # tables) and hardly any cycles: at the default threshold (700) the collector rescanned
    # them ~140 times on a 10k-sample file (32 ms of 0.35 s) and ~840 times on 1M samples.
    gc.set_threshold(100_000, 50, 100)
    if os.environ.get("PERFPARSER_DEBUG_WAIT"):
        print("PERFPARSER_DEBUG_WAIT is set, halting perfparser.", file=sys.stderr)
        print(f'Continue with "kill -SIGCONT {os.getpid()}" or by attaching a debugger.',
              file=sys.stderr)
        import signal  # not up front: with enum it is ~5 ms before the kallsyms worker fork

        os.kill(os.getpid(), signal.SIGSTOP)
    try:
        values = parse_args(argv)
    except UsageError as err:
        _error(str(err))
        return TCP_SOCKET_ERROR
    if values.get("help") or values.get("help-all"):
        sys.stdout.write(usage())
        return NO_ERROR
    if values.get("version"):
        sys.stdout.write(version())
        return NO_ERROR
    if refusal := _terminal_refusal(values):
        _error(refusal)
        return INVALID_OPTION

    out_path = values.get("output")
    try:
        out = open(out_path, "wb") if out_path else sys.stdout.buffer  # noqa: SIM115
    except OSError as err:
        _error(f"cannot open output file {out_path}: {err.strerror}")
        return CANNOT_OPEN
    worker = None
    try:
        try:
            options = make_options(values)
        except ValueError as err:
            print(err, file=sys.stderr)
            return INVALID_OPTION
        from .flavour import FlavourError, choose_flavour

        try:
            options.protocol = choose_flavour(options.protocol, os.environ)
        except FlavourError as err:
            print(err, file=sys.stderr)
            return INVALID_OPTION
        from .replay import Recorder, replayed

        code = replayed(options, out)  # before the big imports: a replay needs none of them
        if code is not None:
            return code
        if not options.print_stats and os.environ.get("PERFPARSER_PY_SPLIT") != "0":
            # forked before the big imports: a small process to copy; not for a recording of
            # user space only, whose run reads no kallsyms
            from .cache import PersistentCache
            from .kernel.symbols import OwnCopy, parsed_ahead
            from .kernel.worker import KallsymsWorker
            from .perfdata.header import excludes_kernel

            if options.input is None or not excludes_kernel(options.input):
                own = OwnCopy.of_running_kernel(PersistentCache.from_env(not options.no_cache),
                                                options.kallsyms, options.sysroot)
                path = parsed_ahead(options.kallsyms, options.sysroot, options.debug_paths(),
                                    own)
                if path is not None:
                    worker = KallsymsWorker.start(path, own)
        if options.input is not None and not options.print_stats:
            from .saved_stream import is_saved_stream

            if is_saved_stream(options.input):
                return _pass_through(options.input, out, options.protocol)
        from .run import run

        if not gc.get_freeze_count():
            # module-level objects of the imports: never garbage, never rescanned. Once per
            # process: in one that runs main() again (the fuzzer), a later freeze would keep
            # an earlier run's uncollected cycles forever.
            gc.freeze()
        recorder = Recorder(options, out)
        # No collector during the run: what it allocates (line rows, DIE tables, symbols)
        # lives to the end, and at the threshold above each object was still scanned once,
        # ~110 ns each (24 ms in python3-dwarf-5k's symbolizing process with python's debug
        # info, 37 ms in g++-dwarf-30k's two). A run is freed by reference counts
        # (tests/test_memory_bounds.py): the cycles left at its end are 100-250 objects
        # whatever the recording's size (gc.collect() after a run). Turned back on for an
        # in-process caller only: its first allocation then scans the run's objects at once
        # (50 ms after python3-dwarf-5k), which an exiting process has no use for.
        collecting = gc.isenabled() and not exiting
        gc.disable()
        try:
            code = run(options, recorder.out, worker, _LEFT_FOR_EXIT if exiting else None)
            recorder.store(code)
        finally:
            if collecting:
                gc.enable()
            recorder.close()
        return code
    except BrokenPipeError:
        # the reader (hotspot) went away: die quietly the way upstream does, by SIGPIPE
        try:
            import signal

            sys.stdout = None
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGPIPE)
        finally:
            os._exit(141)
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a bug of ours: one clear line, never a traceback for users
        from .protocol import OutputError

        if isinstance(err, OutputError):
            _error(f"cannot write the output: {err}")
            return CANNOT_OPEN
        if os.environ.get("PERFPARSER_TRACEBACK"):
            raise
        if _out_of_memory(err):  # before problem(): its imports would fail the same way
            _error("out of memory: the memory or address space this process may use (ulimit "
                   "-v, cgroup, overcommit) is too small for this recording")
            return DATA_ERROR
        from .dependencies import problem

        if missing := problem():  # a library missing or too old, not a bug of ours
            _error(missing)
            return INVALID_OPTION
        _error(f"internal error, please report: {type(err).__name__}: {err} "
               "(set PERFPARSER_TRACEBACK=1 for details)")
        return DATA_ERROR
    finally:
        if worker is not None:
            worker.close()
        cache = sys.modules.get("perfparser_py.cache")
        if cache is not None:
            cache.set_current(None)  # the next in-process run decides anew
        if out is not sys.stdout.buffer and out is not None:
            try:
                out.close()
            except OSError:
                pass


def _out_of_memory(err: Exception) -> bool:
    """Whether `err` is an allocation refused: MemoryError, ENOMEM from the system (an mmap
    of the input or of an ELF file under an address-space limit), or an extension module
    that could not be mapped (the dynamic loader's words)."""
    import errno

    return (isinstance(err, MemoryError)
            or (isinstance(err, OSError) and err.errno == errno.ENOMEM)
            or (isinstance(err, ImportError) and "failed to map segment" in str(err)))


def entry() -> None:
    """The executables' entry point: main(), then exit without tearing the interpreter down
    (freeing a run's millions of objects one by one only delays the end hotspot waits for)."""
    code = main(exiting=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or set to None
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
