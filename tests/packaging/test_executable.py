"""The frozen executable runs without Python, the project or any environment."""

import os
import subprocess

# Start-up time is measured by packaging/README.md's benchmark, not asserted here.


def run_clean(exe, *args):
    """Run with an empty environment from /: nothing of the build machine's Python leaks in."""
    done = subprocess.run([str(exe), *args], env={}, cwd="/", capture_output=True, timeout=60)
    return done, None


def test_version_from_clean_environment(perfparser_exe):
    done, _ = run_clean(perfparser_exe, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"perfparser 10.0\n"


def test_hotspot_perfparser_name(perfparser_exe):
    link = perfparser_exe.parent / "hotspot-perfparser"
    # The build script makes the link; a prebuilt PERFPARSER_EXE may come without it.
    if link.exists() or "PERFPARSER_EXE" not in os.environ:
        done, _ = run_clean(link, "--version")
        assert done.stdout == b"perfparser 10.0\n"


def test_unknown_option_exit_code(perfparser_exe):
    done, _ = run_clean(perfparser_exe, "--no-such-option")
    assert done.returncode == 1
    assert b"Unknown option 'no-such-option'" in done.stderr
    assert b"Traceback" not in done.stderr
