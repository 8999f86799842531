"""demangle(): C++ as libstdc++/c++filt print it, Rust without hash, others unchanged."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from perfparser_py.demangle import demangle

# c++filt prints the standard abbreviations (Ss, Si, So, Sd) verbosely, __cxa_demangle
# abbreviates them in some positions; both spellings mean the same type.
_LONG = {
    "string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "istream": "std::basic_istream<char, std::char_traits<char> >",
    "ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "iostream": "std::basic_iostream<char, std::char_traits<char> >",
}
_SHORT = re.compile(r"std::(string|istream|ostream|iostream)\b(?!::basic_)")


def expand(name: str) -> str:
    # An expansion followed by `>` needs the space c++filt puts between closing brackets.
    return re.sub(r"> (?=>)", ">", _SHORT.sub(lambda m: _LONG[m.group(1)], name))


def test_cxx_matches_cxxfilt_on_libstdcxx(corpus_dir: Path) -> None:
    lib = corpus_dir / "sysroot/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                        text=True, check=True).stdout
    names = sorted({line.split()[-1].split("@")[0] for line in nm.splitlines()
                    if line.split()[-1].startswith("_Z")})
    names = names[::max(1, len(names) // 400)]
    assert len(names) >= 300
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    mismatches = [(n, demangle(n), o) for n, o in zip(names, out, strict=True)
                  if expand(demangle(n)) != expand(o)]
    assert mismatches == []
    assert demangle("_ZNKSi6gcountEv") == "std::istream::gcount() const"  # libstdc++ spelling


def test_cxx_examples() -> None:
    assert demangle("_ZNSt6vectorIiSaIiEE9push_backERKi") == (
        "std::vector<int, std::allocator<int> >::push_back(int const&)")
    assert demangle("_Z6workerv") == "worker()"
    assert demangle("_ZZ4mainENKUlvE_clEv") == "main::{lambda()#1}::operator()() const"
    assert demangle("_ZN3foo3barE") == "foo::bar"


def test_rust_legacy_without_hash() -> None:
    assert demangle("_ZN1t4main17hc89f1824c9b61e1dE") == "t::main"
    assert demangle("_ZN1t12Foo$LT$T$GT$4show17h61a7d700cafd9053E") == "t::Foo<T>::show"
    assert demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha4cd5f503635a93eE"
                    ) == "std::rt::lang_start::{{closure}}"
    assert demangle("_ZN1t4main17hc89f1824c9b61e1dE.llvm.1234") == "t::main"


def test_rust_legacy_is_told_by_its_last_element() -> None:
    """Legacy Rust: `_ZN`, then `17h` and 16 lowercase hex digits as the last element before
    `E` (and an optional `.suffix`); anything else with `_ZN` is C++."""
    from perfparser_py.demangle import _is_rust_legacy

    for name in ("_ZN1t4main17hc89f1824c9b61e1dE", "_ZN17h0123456789abcdefE",
                 "_ZN1t4main17hc89f1824c9b61e1dE.llvm.1234", "_ZN1a17hx17h0123456789abcdefE",
                 "_ZN1t17h0123456789abcdefE."):
        assert _is_rust_legacy(name), name
    for name in ("_ZN1t4main17hc89f1824c9b61e1DE", "_ZN1t4main17hc89f1824c9b61eE",
                 "_ZN1t4main17hc89f1824c9b61e1dEx", "_ZN1t4main17hc89f1824c9b61e1d",
                 "_Z1t17hc89f1824c9b61e1dE", "_ZN3foo3barE", "_ZN17h"):
        assert not _is_rust_legacy(name), name


def test_rust_v0_without_disambiguators() -> None:
    assert demangle("_RNvC4test4main") == "test::main"
    assert demangle(
        "_RINvMNtCsgEmfK2I1SDS_4core5sliceSh11copy_withinINtNtNtB5_3ops5range"
        "14RangeInclusivejEECsfEOYDRpO4Ta_11miniz_oxide"
    ) == "<[u8]>::copy_within::<core::ops::range::RangeInclusive<usize>>"


def test_unchanged() -> None:
    for name in ("", "a", "_Z", "_R", "main", "_Zfoo", "_Rxyz!", "_D3foo3barFZv",
                 "$a", "printf@plt", "_ZN3foo"):
        assert demangle(name) == name


def test_without_pyderust_legacy_rust_still_demangles_and_v0_warns_once(monkeypatch, capsys):
    from perfparser_py import demangle as D

    monkeypatch.setattr(D, "pyderust", None)
    monkeypatch.setattr(D, "_warned_rust", False)
    assert D._rust_without_pyderust("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE") == \
        "core::fmt::Formatter::pad"
    assert D._rust_without_pyderust("_ZN1t4main17hc89f1824c9b61e1dE.llvm.1") == "t::main"
    assert D._rust_without_pyderust("_RNvCs1234_4main3foo") == "_RNvCs1234_4main3foo"
    assert D._rust_without_pyderust("_RNvCs1234_4main3bar") == "_RNvCs1234_4main3bar"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pyderust is not installed" in err


def test_pyderust_is_imported_on_the_first_rust_name_only():
    import subprocess
    import sys

    code = ("import sys; from perfparser_py.demangle import demangle; "
            "demangle('_ZN3foo3barEv'); print('pyderust' in sys.modules); "
            "demangle('_RNvCs1234_4main3foo'); print('pyderust' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]
