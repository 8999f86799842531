"""C++ demangling without libstdc++: the cpp_demangle library (Python bindings of the Rust
crate of that name; `pip install 'perfparser-py[cxx]'`), imported by demangle.py only when
libstdc++'s `__cxa_demangle` cannot be loaded.

Its text is rewritten where it differs from `__cxa_demangle`'s (upstream's) by a rule that
follows from the mangled name: the standard abbreviations, integer literals, `nullptr_t`,
vtables and thunks, and the return type of the function that holds a local name. What stays
different (tests/test_demangle_fallback.py measures it over libstdc++'s and cc1plus's
symbols): the library drops the parameters of a template constructor that name its own
template parameters (`C1IPcEET_S1_…`); it misplaces a reference to a nested name of a
substitution (`X&::Y` for `X::Y&`); it writes `&f(int)` for `&(f(int))` in template
arguments and swaps a construction vtable's classes; and it cannot demangle unresolved names
(`sr`, in the return types of some templates), which then stay mangled.
"""

from __future__ import annotations

import re

import cpp_demangle

# __cxa_demangle writes the abbreviations Ss, Si, So, Sd short (`std::string`) except as the
# class of a constructor or destructor, whose name is that of the long form; the library
# writes Ss and So short everywhere, Si and Sd long everywhere.
_LONG = {
    "string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "ostream": "std::basic_ostream<char, std::char_traits<char> >",
}
_SHORT_CTOR = re.compile(r"std::(string|ostream)::(~?)\1\b")
_LONG_STREAM = re.compile(
    r"std::basic_(i|io)stream<char, std::char_traits<char> >(?!::~?basic_\1stream\b)( (?=>))?")
# The long form is also the text of the spelled-out template, which a mangled name holding
# it names in full: then which occurrence is which cannot be told from the text.
_SPELLED_STREAM = re.compile(r"13basic_istream|14basic_iostream")

# Integer literals of these types get a suffix from __cxa_demangle (`1u`, `-5l`), a cast from
# the library (`(unsigned int)1`); both cast the other types (`(char)65`). A cast expression
# puts its operand in parentheses, so a digit after the cast is a literal.
_SUFFIX = {"unsigned int": "u", "long": "l", "unsigned long": "ul", "long long": "ll",
           "unsigned long long": "ull"}
_LITERAL = re.compile(r"\((unsigned int|long|unsigned long|long long|unsigned long long)\)"
                      r"(-?\d+)")

# Special names the library writes as `{vtable(A)}` and `{virtual override thunk(…)}`.
_TABLES = {"_ZTV": "vtable for ", "_ZTT": "VTT for "}
_OFFSET = r"(?:hn?\d+_|vn?\d+_n?\d+_)"  # <call-offset>
_THUNK = re.compile(rf"_ZT(?:{_OFFSET}|c{_OFFSET}{_OFFSET})")
_THUNK_KIND = {"h": "non-virtual thunk to ", "v": "virtual thunk to ",
               "c": "covariant return thunk to "}

# What may follow a space inside a type (`char const*`, `unsigned int` after these): not a
# function name.
_QUALIFIER = re.compile(r"(?:const|volatile|restrict|_Complex|_Imaginary)\b")
_BUILTIN_TAIL = re.compile(r"(?:int|long|short|char|double|__int128)\b")
_BUILTIN_HEAD = re.compile(r"\b(?:unsigned|signed|long|short)$")
_NAME_START = re.compile(r"[A-Za-z_]|\(anonymous namespace\)")
_OPERATOR = re.compile(r'\boperator(?:"")?$')  # `operator new`, `operator int`
# a function template's name ends in template arguments before its parameter list
_TEMPLATE_FUNCTION = re.compile(r">\([^()]*(?:\([^()]*\)[^()]*)*\)( const| volatile| &&?)*"
                                r"( \[clone [^]]*\])*$")
_OPERATOR_GT = re.compile(r"operator(?:>|>>|->|>=|<=>)\([^()]*\)[^()]*$")
_OPERATOR_NAME = re.compile(r"(?<![\w])operator(?:\(\)|\[\]|->\*?|[<>=!+\-*/%^&|~,]+)")


def demangle(mangled: str) -> str | None:
    """`__cxa_demangle`'s text for `mangled` (a `_Z` name or a bare type), or None."""
    prefix = _TABLES.get(mangled[:4])
    if prefix is not None:
        inner = demangle(mangled[4:])
        return None if inner is None else prefix + inner
    thunk = _THUNK.match(mangled)
    if thunk is not None:
        inner = demangle("_Z" + mangled[thunk.end():])
        return None if inner is None else _THUNK_KIND[mangled[3]] + inner
    text = _text(mangled)
    if text is None:
        return None
    text = _SHORT_CTOR.sub(lambda m: f"{_LONG[m[1]]}::{m[2]}basic_{m[1]}", text)
    if not _SPELLED_STREAM.search(mangled):
        text = _LONG_STREAM.sub(lambda m: f"std::{m[1]}stream", text)
    text = _LITERAL.sub(lambda m: m[2] + _SUFFIX[m[1]], text.replace("std::nullptr_t",
                                                                     "decltype(nullptr)"))
    # a local name of a function (`Z <encoding> E`), not of a special name (`GTt`: a clone)
    local = mangled.startswith("_ZZ") and mangled[3:4] not in ("G", "T")
    if not local:
        return text
    cut = _return_type_end(text)
    if _TEMPLATE_FUNCTION.search(text) and not _OPERATOR_GT.search(text):
        # the local entity is itself a function template: both print its return type first,
        # then the library that of the enclosing function
        if cut < 0:
            return text
        rest = text[cut + 1:]
        inner = _return_type_end(rest)
        return text[:cut + 1] + (rest[inner + 1:] if inner >= 0 else rest)
    return text[cut + 1:] if cut >= 0 else text


def _text(mangled: str) -> str | None:
    try:
        return cpp_demangle.demangle(mangled)
    except ValueError:
        return None


def _return_type_end(text: str) -> int:
    """Where the return type that begins `text` ends (the space after it), -1 if none: the
    first space outside brackets that is followed by a name, before the parameter list.
    Operator names (`operator>>`, `operator()`) are not brackets."""
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        op = _OPERATOR_NAME.match(text, i) if ch == "o" else None
        if op is not None:
            i = op.end()
            continue
        if ch in "<([{":
            if (ch == "(" and depth == 0 and not text.startswith("(anonymous namespace)", i)
                    and not text.endswith("decltype ", 0, i)):
                return -1  # the parameter list: there was no return type
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif (ch == " " and depth == 0 and _NAME_START.match(text, i + 1)
              and not _QUALIFIER.match(text, i + 1) and not _OPERATOR.search(text, 0, i)
              and not (_BUILTIN_TAIL.match(text, i + 1) and _BUILTIN_HEAD.search(text, 0, i))):
            return i
        i += 1
    return -1
