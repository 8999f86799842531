"""One command line's run: the stages (pipeline.Run) fed serially or by a split run
(split.py, parallel.py), and what ends it either way."""

from __future__ import annotations

import sys

from .perfdata.errors import PerfDataError


def run(options, out, kallsyms_worker=None, keep: list | None = None) -> int:
    """Process one input according to `options`, writing to the binary stream `out`;
    `kallsyms_worker` (a kernel.worker.KallsymsWorker) may be parsing the kernel's symbols; the
    run's state goes into `keep` when given (the caller frees it, or exits without)."""
    from . import split
    from .source import open_source

    source = started = failure = None
    try:
        source = open_source(options.input, options.host, options.port)
        # a split run's reading process starts before this one imports and makes its stages
        started = split.start(options, source)
    except PerfDataError as err:
        failure = err  # reported once the stream has its header, as any input error
    try:
        from .pipeline import Run

        r = Run(options, out, kallsyms_worker)
    except BaseException:
        if started is not None:
            split.abandon(started)
        raise
    if keep is not None:
        keep.append(r)
    code = 0
    try:
        try:
            if failure is not None:
                raise failure
            if started is not None:
                from .parallel import replay

                code = replay(r, *started)
            else:
                r.read(source)
        except PerfDataError as err:
            print(f"perfparser: {err}", file=sys.stderr)
            code = err.exit_code
        return r.finish(code)
    except Exception:
        r.salvage()  # the samples before a bug of ours are not lost; cli.main reports it
        raise
    finally:
        r.done()
