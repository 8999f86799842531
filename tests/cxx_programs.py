"""C++ programs whose frames carry the names DWARF spells badly, and their symbols' names as
c++filt prints them (tests/e2e/test_cxx_names.py records them, tests/elf/test_dwarf_names.py
reads their DWARF)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

# The round count is parsed with strtol, not atoi: glibc's <stdlib.h> defines atoi as an
# extern inline at -O, so a sample in it would show an inlined frame of a header's function.
PROLOGUE = r"""
#include <cstdlib>
static volatile unsigned long sink;
#define NOINLINE __attribute__((noinline))
#define SPIN(k) for (int i_ = 0; i_ < 3000; i_++) sink = sink + (i_ ^ (k))
struct Foo { int v; };
"""

CALLS = PROLOGUE + r"""
namespace {
NOINLINE void helper(const Foo& f) { SPIN(f.v); }
struct Hidden { NOINLINE void run(int k) const { SPIN(k); } };
}
namespace ns {
template <typename T> struct Box {
    T t;
    template <typename U> NOINLINE U get(U u) const { SPIN(t); return u + (U)t; }
};
template <typename T> NOINLINE T twice(T x) { SPIN(x); return x + x; }
}
NOINLINE static int clone_me(int n, int k) {  // constant arguments: .constprop, .isra
    for (int i = 0; i < n; i++) sink = sink + i * k;
    return (int)sink;
}
static int part_me(int n) {  // called twice: GCC splits the unlikely body off, .part.0
    if (__builtin_expect(n < 10, 1)) return n;
    for (int i = 0; i < n; i++) sink = sink + i * 3;
    for (int i = 0; i < n; i++) sink = sink ^ (i * 5);
    for (int i = 0; i < n; i++) sink = sink + i * 7;
    return (int)sink;
}
NOINLINE int tail2(int n) { SPIN(n); return (int)sink; }
// the call of a cold function goes to cold_me.cold; not a leaf, so frame pointers show it
__attribute__((cold)) NOINLINE void cold_callee(int n) { SPIN(n); tail2(n); sink = sink + 1; }
NOINLINE int cold_me(int n) { if (n > 0) { sink = sink + 1; cold_callee(n); } return (int)sink; }
NOINLINE int tail(int n) { sink = sink + 1; return tail2(n + 1); }  // a tail call
int main(int argc, char** argv) {
    int rounds = argc > 1 ? (int)strtol(argv[1], nullptr, 10) : 1000;
    auto lam = [](int x) NOINLINE { SPIN(x); return x; };
    auto gen = [](auto x) NOINLINE {
        auto inner = [x](int y) NOINLINE { SPIN(y); return x + y; };
        return inner(1);
    };
    Foo foo{3};
    ns::Box<long> box{2};
    for (int r = 0; r < rounds; r++) {
        lam(r); gen(r); gen(2.5); helper(foo); Hidden{}.run(r); box.get<int>(r);
        box.get<double>(r); ns::twice<int>(r); ns::twice<unsigned long>(r);
        clone_me(3000, 7); sink = sink + part_me(3000 + argc) + part_me(2000 + argc);
        cold_me(r + 1); tail(r);
    }
}
"""

# FORCE is always_inline for the profiled build and noinline for the reference build
INLINED = PROLOGUE + r"""
#ifndef FORCE
#define FORCE __attribute__((always_inline))
#endif
namespace {
FORCE inline void helper(const Foo& f) { SPIN(f.v); }
struct Local { FORCE void run(int k) const { SPIN(k); } };
}
namespace ns {
template <typename T> struct Box {
    T t;
    template <typename U> FORCE U get(U u) const { SPIN(t); return u + (U)t; }
};
}
template <typename T> FORCE inline T scaled(T x) {
    struct Scaler { FORCE T go(T v) const { SPIN((int)v); return v * 2; } };
    return Scaler{}.go(x);
}
FORCE static inline int internal(int n) {
    auto twice = [](int y) FORCE { SPIN(y); return y * 2; };
    return twice(n);
}
NOINLINE void outer(int r) {
    Foo foo{3};
    helper(foo);
    Local{}.run(r);
    ns::Box<long> box{2};
    box.get<int>(r);
    auto lam = [](int x) FORCE { SPIN(x); return x; };
    lam(r);
    auto gen = [](auto x) FORCE {
        auto in = [x](int y) FORCE { SPIN(y); return x + y; };
        return in(1);
    };
    gen(r); gen(1.5);
    auto other = [](double d) FORCE { SPIN((int)d); return d; };  // GCC 12: #3, else #1
    other(r);
    sink = sink + scaled<int>(r) + internal(r);
}
int main(int argc, char** argv) {
    int rounds = argc > 1 ? (int)strtol(argv[1], nullptr, 10) : 1000;
    for (int r = 0; r < rounds; r++) outer(r);
}
"""

# Names each program must show, so every kind of name above is checked (the compilers name
# lambdas differently: GCC `{lambda(int)#1}` and clang `$_0` in a function like main).
CALL_KINDS = {
    "g++": ["main::{lambda(int)#1}::operator()(int) const",
            "main::{lambda(auto:1)#2}::operator()<int>(int) const::{lambda(int)#1}::operator()"
            "(int) const", "(anonymous namespace)::helper(Foo const&)",
            "(anonymous namespace)::Hidden::run(int) const",
            "int ns::Box<long>::get<int>(int) const",
            "unsigned long ns::twice<unsigned long>(unsigned long)", "tail2(int)",
            "[clone .constprop.0]", "[clone .isra.0]", "[clone .part.0]", "[clone .cold]"],
    "clang++": ["::operator()(int) const", "(anonymous namespace)::helper(Foo const&)",
                "(anonymous namespace)::Hidden::run(int) const",
                "int ns::Box<long>::get<int>(int) const", "tail2(int)"],
}
INLINE_KINDS = {
    "g++": ["(anonymous namespace)::helper", "(anonymous namespace)::Local::run",
            "int ns::Box<long>::get<int>(int) const", "outer(int)::{lambda(int)#1}::operator()",
            "outer(int)::{lambda(auto:1)#2}::operator()<double>",
            "outer(int)::{lambda(double)#",
            "operator()<int>(int) const::{lambda(int)#1}::operator()",
            "scaled<int>(int)::Scaler::go", "internal(int)::{lambda(int)#1}::operator()"],
    "clang++": ["(anonymous namespace)::helper(Foo const&)",
                "(anonymous namespace)::Local::run(int) const",
                "int ns::Box<long>::get<int>(int) const", "scaled<int>(int)::Scaler::go"],
}

CLONE = re.compile(r"( \[clone [^]]*\])+$")


def build(tmp: Path, compiler: str, source: str, name: str, flags: list[str]) -> Path:
    src = tmp / f"{name}.cpp"
    src.write_text(source)
    exe = tmp / name
    subprocess.run([compiler, "-O2", "-g", *flags, "-o", str(exe), str(src)], check=True,
                   capture_output=True, cwd=tmp)  # where clang writes -gsplit-dwarf's .dwo
    return exe


def symbol_names(exe: Path) -> list[tuple[str, str]]:
    """(c++filt, c++filt -p) of every function symbol of `exe`."""
    nm = subprocess.run(["nm", "--defined-only", str(exe)], capture_output=True, text=True,
                        check=True).stdout
    mangled = [p[2] for p in (line.split() for line in nm.splitlines())
               if len(p) == 3 and p[1] in "tTwW"]
    text = "\n".join(mangled) + "\n"
    full = subprocess.run(["c++filt"], input=text, capture_output=True, text=True,
                          check=True).stdout.splitlines()
    short = subprocess.run(["c++filt", "-p"], input=text, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return list(zip(full, short, strict=True))


def inline_reference_names(tmp: Path, compiler: str) -> set[str]:
    """What c++filt and c++filt -p print for the symbols INLINED's inline functions get when
    built `noinline`, without clone suffixes: the names their inlined frames must have."""
    ref = build(tmp, compiler, INLINED, "reference", ["-DFORCE=__attribute__((noinline))"])
    names = set()
    for full, short in symbol_names(ref):
        names.update((CLONE.sub("", full), CLONE.sub("", short)))
    return names
