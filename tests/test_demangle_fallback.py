"""C++ demangling where libstdc++ cannot be loaded (demangle.py, demangle_fallback.py): the
cpp_demangle library, spelled as __cxa_demangle spells names, said once on stderr; without
the library, names stay mangled, said once with the fix. The expected texts come from the
real __cxa_demangle of this process, before it is made unloadable."""

from __future__ import annotations

import ctypes
import ctypes.util
import subprocess
import sys
from pathlib import Path

import cpp_demangle
import pytest

from perfparser_py import demangle as D
from tests.cxx_programs import INLINE_KINDS, INLINED, build, inline_reference_names
from tests.elf.test_dwarf_names import _inlined_names

CXA = D._load_cxa()


def _reset() -> None:
    D._cxx = None
    for cached in (D.demangle, D.demangle_scope, D.demangle_type):
        cached.cache_clear()


@pytest.fixture
def without_libstdcxx(monkeypatch):
    """demangle.py as on a host without libstdc++: ctypes finds no C++ runtime."""
    real = ctypes.CDLL

    def cdll(name, *args, **kwargs):
        if name is not None and "c++" in name:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setattr(ctypes.util, "find_library", lambda _name: None)
    _reset()
    yield
    _reset()  # the next demangle() loads libstdc++ again


# Names where the library's own text differs from __cxa_demangle's, one per rewriting rule,
# and common ones it spells the same.
REWRITTEN = [
    "_ZNSsC1Ev", "_ZNSoD0Ev",  # Ss, So as the class of a constructor/destructor: long form
    "_ZNKSi6gcountEv", "_ZNSdC1EOSd", "_Z1fSt6vectorISiSaISiEE",  # Si, Sd elsewhere: short
    "_Z1fILj1EEvv", "_Z1fILln5EEvv", "_Z1fILy7EEvv",  # integer literals: a suffix, not a cast
    "_ZNSolsEDn",  # decltype(nullptr)
    "_ZTV1A", "_ZTTSo", "_ZThn8_N1A1fEv", "_ZTv0_n24_N1A1fEv", "_ZTch0_h16_N1A1fEv",
    "_ZZ1fIiEiiENKUlvE_clEv", "_ZZ1fIiEiiE1x",  # the function of a local name: no return type
    "_ZZ1fIiEiiENKUlT_E_clIdEEDaS0_", "_ZZ1fIiEyiE1x",  # ... but the local entity's stays
]
SAME = ["_ZNSt6vectorIiSaIiEE9push_backERKi", "_ZZ4mainENKUliE_clEi", "_ZN12_GLOBAL__N_13fooEv",
        "_ZN1A1fEv.cold", "_ZNSt8functionIFviEEC2ERKS1_", "_Z1fIJidEEvDpT_",
        "_ZZNSirsEPFRSiS_EE1x", "_ZZ4mainENKUlT_E0_clIdEEDaS_", "_ZZ4mainEN1A1gIiEEiT_"]


def test_fallback_spells_names_as_libstdcxx_and_says_so_once(without_libstdcxx, capsys):
    for name in REWRITTEN:
        assert cpp_demangle.demangle(name) != CXA(name), name  # the rule is what closes it
    for name in REWRITTEN + SAME:
        assert D.demangle(name) == CXA(name), name
    # a template function as the scope of a local entity: printed without its return type
    assert D.demangle_scope("_Z6scaledIiET_S0_") == "scaled<int>(int)"
    assert D.demangle_type("5div_t") == "div_t"
    assert D.demangle_type("St6vectorIiSaIiEE") == CXA("St6vectorIiSaIiEE")
    assert D.demangle("_Z1fIXsrSt1AIT_E1vEEvv") == "_Z1fIXsrSt1AIT_E1vEEvv"  # cannot: mangled
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "libstdc++" in err[0] and "cpp-demangle" in err[0], err


def _symbols(lib: Path) -> list[str]:
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                        text=True, check=True).stdout
    return sorted({line.split()[-1].split("@")[0] for line in nm.splitlines()
                   if line.split()[-1].startswith("_Z")})


def _agreement(pairs) -> float:
    pairs = list(pairs)
    return sum(a == b for a, b in pairs) / len(pairs)


def test_fallback_agrees_with_libstdcxx_on_libstdcxx(corpus_dir: Path, without_libstdcxx):
    """Over every C++ symbol of libstdc++: the whole names (demangle), the functions as scopes
    of local entities (demangle_scope) and the types of its typeinfo (demangle_type). What
    stays different is listed in demangle_fallback's docstring."""
    names = _symbols(corpus_dir / "sysroot/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30")
    assert len(names) > 5000
    functions = [n for n in names if not n.startswith(("_ZT", "_ZG"))]
    types = sorted({n[4:] for n in names if n.startswith(("_ZTS", "_ZTI"))})
    assert _agreement((D.demangle(n), CXA(n) or n) for n in names) > 0.99
    assert _agreement((D.demangle_scope(n), CXA("_ZZ" + n[2:] + "E1x")[:-3])
                      for n in functions) > 0.99
    assert _agreement((D.demangle_type(t), CXA(t)) for t in types) == 1


def test_inlined_scopes_of_a_program_are_named_without_libstdcxx(tmp_path: Path,
                                                                 without_libstdcxx):
    """The DWARF scope names of tests/elf/test_dwarf_names (local classes of a template
    function, lambdas, anonymous namespaces) as c++filt prints them, through the fallback."""
    exe = build(tmp_path, "g++", INLINED, "inlined", [])
    want = inline_reference_names(tmp_path, "g++")
    names = _inlined_names(exe, "_Z5outeri")
    assert sorted(n for n in names if n not in want) == []
    for kind in INLINE_KINDS["g++"]:  # scaled<int>(int)::Scaler::go among them
        assert any(kind in n for n in names), (kind, sorted(names))


def test_without_either_names_stay_mangled_and_it_says_how_to_fix(without_libstdcxx,
                                                                  monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cpp_demangle", None)  # import fails
    monkeypatch.delitem(sys.modules, "perfparser_py.demangle_fallback", raising=False)
    name = "_ZNSt6vectorIiSaIiEE9push_backERKi"
    assert D.demangle(name) == name
    assert D.demangle("_ZZ4mainENKUliE_clEi") == "_ZZ4mainENKUliE_clEi"
    assert D.demangle_scope("_Z6scaledIiET_S0_") == "_Z6scaledIiET_S0_"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "stay mangled" in err[0] and "libstdc++6" in err[0], err
    assert "pip install 'perfparser-py[cxx]'" in err[0]


def test_a_run_with_libstdcxx_never_imports_the_library():
    """Startup: the fallback is imported only where libstdc++ is missing."""
    code = ("import sys; from perfparser_py.demangle import demangle; "
            "print(demangle('_ZN3foo3barEv'), 'cpp_demangle' in sys.modules, "
            "'perfparser_py.demangle_fallback' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout == "foo::bar() False False\n" and done.stderr == ""


def test_a_run_without_libstdcxx_stores_no_names_in_the_persistent_cache(without_libstdcxx,
                                                                         tmp_path: Path):
    """Its names are the fallback's: a later run with libstdc++ must not reuse them."""
    from perfparser_py.cache import PersistentCache

    cache = PersistentCache(str(tmp_path / "cache"))
    rec = cache.record("image", "x")
    rec.data["names"] = [D.demangle("_ZN3foo3barEv")]
    rec.dirty = True
    assert D.approximate()
    cache.save()
    assert not any((tmp_path / "cache").glob("*")) if (tmp_path / "cache").exists() else True
    _reset()
    D._cxx, D._exact = CXA, True  # libstdc++ again: the same record is stored
    assert not D.approximate()
    cache.save()
    assert any((tmp_path / "cache").glob("*"))
