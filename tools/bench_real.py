"""tools/bench's real set: programs nobody here wrote, recorded at bench time.

Each workload runs an installed program on input made here: Debian's sqlite3 (an SQL script),
python3 (pure-Python json, re and difflib) and xz (compressing generated text), a g++ compile
and link (cc1plus, as, collect2, ld: fork/exec and deep stacks), a Rust program built here
with rustc, and `perf record -a` over busy processes started before it. What is committed is
the few KB of sources below, never a recording of a third-party binary.

Every recording is `env -i PATH=/usr/bin:/bin perf record -N -F 1999 ...` (issue 19's recipe):
the caller's environment cannot pick other programs or change what they do, and -N keeps
perf's build-id cache out of it. A workload's size is a number of units (SQL blocks, Python
rounds, copies of a file to compress, translation units, Rust rounds); the CPU time of one unit is
measured once per --work directory (calibration.json), so that a tier's nominal sample count
(5k, 30k, 100k) holds roughly on machines of different speed.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

FREQ = 1999
SEARCH_PATH = "/usr/bin:/bin"
RECORD_ENV = ["env", "-i", f"PATH={SEARCH_PATH}"]
TIERS = {"1k": 1_000, "5k": 5_000, "30k": 30_000, "100k": 100_000}
DEFAULT_TIERS = ("5k", "30k")
LARGE_TIERS = ("100k",)
GRAPH_FLAGS = {"dwarf": ["--call-graph", "dwarf"], "fp": ["-g"]}
# a calibration run lasts at least this long, so that start-up does not dominate a unit's cost
CALIBRATION_CPU_S = 0.5

SQL_UNIT = """\
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<200000)
SELECT count(*), sum(x*x%97) FROM c;
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<60000)
INSERT INTO t SELECT x, hex(randomblob(8)) FROM c;
CREATE INDEX ti ON t(b);
SELECT b, count(*) FROM t GROUP BY substr(b,1,2) ORDER BY 2 DESC LIMIT 3;
SELECT count(*) FROM t t1 JOIN t t2 ON t1.a = t2.a+1 WHERE t1.b < t2.b;
SELECT a, b FROM t ORDER BY a*7919%60013, b LIMIT 1 OFFSET 3000;
DROP TABLE t;
"""

PY_WORKLOAD = '''\
"""Pure-Python work: json round trips, regular expressions and difflib; argv[1] units."""
import difflib
import json
import random
import re
import sys

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
PATTERN = re.compile(r"(\\w+)=(\\d+)(?:;|$)|\\[(\\w+)\\]")


def document(rng, n):
    return {"items": [{"id": i, "name": " ".join(rng.choices(WORDS, k=4)),
                       "tags": rng.sample(WORDS, 3), "score": rng.random(),
                       "nested": {"depth": [rng.randrange(100) for _ in range(5)]}}
                      for i in range(n)]}


def text(rng, lines):
    return [f"{rng.choice(WORDS)}={rng.randrange(10**6)};[{rng.choice(WORDS)}] "
            + " ".join(rng.choices(WORDS, k=8)) for _ in range(lines)]


def unit(rng):
    back = json.loads(json.dumps(document(rng, 400), sort_keys=True, indent=1))
    found = sum(len(PATTERN.findall(line)) for line in text(rng, 2000))
    a = text(rng, 300)
    b = [line if rng.random() < 0.8 else line.upper() for line in a]
    diff = list(difflib.unified_diff(a, b, lineterm=""))
    ratio = difflib.SequenceMatcher(None, " ".join(a[:40]), " ".join(b[:40])).ratio()
    return len(back["items"]) + found + len(diff) + int(ratio * 100)


rng = random.Random(19)
print(sum(unit(rng) for _ in range(int(sys.argv[1]))))
'''

# one translation unit of the compile; UNIT is replaced by the unit's number
CXX_UNIT = """\
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace unit_UNIT {
template <typename T> struct Node {
    T value;
    std::vector<std::unique_ptr<Node>> kids;
    template <typename F> T fold(F&& f) const {
        T acc = value;
        for (const auto& k : kids) acc = f(acc, k->fold(f));
        return acc;
    }
};
using Value = std::variant<int, double, std::string>;
struct Show {
    std::string operator()(int i) const { return std::to_string(i); }
    std::string operator()(double d) const { std::ostringstream s; s << d; return s.str(); }
    std::string operator()(const std::string& s) const { return '"' + s + '"'; }
};
template <typename K, typename V>
std::map<V, std::vector<K>> invert(const std::unordered_map<K, V>& m) {
    std::map<V, std::vector<K>> out;
    for (const auto& [k, v] : m) out[v].push_back(k);
    for (auto& [v, ks] : out) std::sort(ks.begin(), ks.end());
    return out;
}
template <int N> long series() {
    std::vector<long> xs(N * UNIT + 7);
    std::iota(xs.begin(), xs.end(), 1L);
    std::transform(xs.begin(), xs.end(), xs.begin(), [](long x) { return x * x % 1009; });
    return std::accumulate(xs.begin(), xs.end(), 0L, std::plus<>());
}
}  // namespace unit_UNIT

long run_UNIT() {
    using namespace unit_UNIT;
    Node<long> root{1, {}};
    for (int i = 0; i < 8; ++i)
        root.kids.push_back(std::make_unique<Node<long>>(Node<long>{i, {}}));
    long folded = root.fold([](long a, long b) { return a * 31 + b; });
    std::vector<Value> values{1, 2.5, std::string("three")};
    std::string shown;
    for (const auto& v : values) shown += std::visit(Show{}, v);
    std::unordered_map<std::string, int> counts;
    std::istringstream words("a b c a b a " + shown);
    for (std::string w; words >> w;) ++counts[w];
    auto inverted = invert(counts);
    std::function<long(int)> fib = [&](int n) { return n < 2 ? long(n) : fib(n - 1) + fib(n - 2); };
    return folded + long(inverted.size()) + fib(UNIT % 5 + 10) + series<13>() + series<UNIT + 1>();
}
"""

RUST_WORKLOAD = """\
// Generic containers, trait objects, closures and iterator chains over std; argv[1] units.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

trait Shape {
    fn area(&self) -> f64;
}
struct Rect<T> { w: T, h: T }
struct Circle { r: f64 }
impl<T: Copy + Into<f64>> Shape for Rect<T> {
    fn area(&self) -> f64 { self.w.into() * self.h.into() }
}
impl Shape for Circle {
    fn area(&self) -> f64 { std::f64::consts::PI * self.r * self.r }
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn tree_sum<K: Ord + Clone, F: Fn(&K) -> u64>(keys: &[K], weigh: &F, depth: u32) -> u64 {
    if keys.len() < 2 || depth == 0 {
        return keys.iter().map(weigh).sum();
    }
    let (left, right) = keys.split_at(keys.len() / 2);
    tree_sum(left, weigh, depth - 1) ^ tree_sum(right, weigh, depth - 1).rotate_left(7)
}

fn unit(rng: &mut Lcg) -> u64 {
    let shapes: Vec<Box<dyn Shape>> = (0..2000)
        .map(|i| -> Box<dyn Shape> {
            if i % 3 == 0 { Box::new(Circle { r: (rng.next() % 100) as f64 }) }
            else if i % 3 == 1 { Box::new(Rect { w: (rng.next() % 50) as u32, h: 3u32 }) }
            else { Box::new(Rect { w: (rng.next() % 9) as f32, h: 0.5f32 }) }
        })
        .collect();
    let total: f64 = shapes.iter().map(|s| s.area()).filter(|a| *a > 10.0).sum();
    let mut words: HashMap<String, Vec<u64>> = HashMap::new();
    let mut line = String::new();
    for _ in 0..20000 {
        line.clear();
        write!(line, "w{:x}", rng.next() % 4096).unwrap();
        words.entry(line.clone()).or_default().push(rng.next());
    }
    let mut keys: Vec<String> = words.keys().cloned().collect();
    keys.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    let by_len: BTreeMap<usize, usize> = keys.iter().fold(BTreeMap::new(), |mut m, k| {
        *m.entry(k.len()).or_insert(0) += 1;
        m
    });
    let weigh = |k: &String| words[k].iter().copied().fold(0u64, u64::wrapping_add);
    tree_sum(&keys, &weigh, 24) ^ total as u64 ^ by_len.len() as u64
}

fn main() {
    let units: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut rng = Lcg(19);
    let result = (0..units).map(|_| unit(&mut rng)).fold(0, |a, b| a ^ b);
    println!("{result}");
}
"""


def _write(path: Path, text: str) -> Path:
    """Write `text` unless the file holds it already (keeps mtimes for the rebuild checks)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


class Program:
    """A workload: the command that runs `units` units of it (argv, file for stdin or None)."""

    name = ""
    # -g as well where it is a case of its own: g++ (many short processes), the Rust program
    # (built here with frame pointers) and `perf record -a -g`; Debian builds sqlite3, python3
    # and xz without frame pointers
    graphs: tuple[str, ...] = ("dwarf",)
    needs: tuple[tuple[str, str], ...] = ()  # (command in SEARCH_PATH, its Debian package)
    what = ""

    def command(self, work: Path, units: int) -> tuple[list[str], Path | None]:
        raise NotImplementedError


class Sqlite(Program):
    name, needs = "sqlite3", (("sqlite3", "sqlite3"),)
    what = "Debian's sqlite3 CLI on an SQL script: recursive CTE, index, GROUP BY, join, sort"

    def command(self, work, units):
        script = _write(work / "sqlite3" / f"script-{units}.sql", SQL_UNIT * units)
        return ["sqlite3", ":memory:"], script


class Python(Program):
    name, needs = "python3", (("python3", "python3"),)
    what = "Debian's python3 on a pure-Python workload: json, re, difflib"

    def command(self, work, units):
        return ["python3", str(_write(work / "python3" / "work.py", PY_WORKLOAD)), str(units)], None


class Xz(Program):
    name, needs = "xz", (("xz", "xz-utils"),)
    what = "Debian's xz -6 compressing generated text (512 KB a unit)"

    def command(self, work, units):
        chunk = work / "xz" / "input.txt"
        if not chunk.exists():
            chunk.parent.mkdir(parents=True, exist_ok=True)
            rng = random.Random(19)
            words = [f"w{rng.randrange(5000):x}" for _ in range(20000)]
            lines = (f"{rng.randrange(10**9)} " + " ".join(rng.choices(words, k=12))
                     for _ in range(512 * 1024 // 70))
            chunk.write_text("\n".join(lines) + "\n")
        return ["xz", "-6", "-T1", "-c", *[str(chunk)] * units], None


class Gxx(Program):
    name, graphs, needs = "g++", ("dwarf", "fp"), (("g++", "g++"),)
    what = ("g++ -O2 -std=c++17 compiling and linking 60-line translation units "
            "(cc1plus, as, collect2, ld)")

    def command(self, work, units):
        d = work / "g++"
        sources = [str(_write(d / f"unit{k}.cpp", CXX_UNIT.replace("UNIT", str(k))))
                   for k in range(units)]
        calls = " + ".join(f"run_{k}()" for k in range(units))
        main = "".join(f"long run_{k}();\n" for k in range(units))
        main += f"int main() {{ return int({calls}) & 1; }}\n"
        sources.append(str(_write(d / f"main-{units}.cpp", main)))
        return ["g++", "-O2", "-std=c++17", *sources, "-o", str(d / "prog")], None


NO_RUSTC = "rustc not found (apt-get install rustc, or set $RUSTC)"


def rustc() -> str | None:
    """$RUSTC, else Debian's (what `apt-get install rustc` gives CI), else one on PATH."""
    for candidate in (os.environ.get("RUSTC"), "/usr/bin/rustc", shutil.which("rustc")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class Rust(Program):
    name, graphs = "rust", ("dwarf", "fp")
    what = ("a Rust program built here with rustc (std, generics, closures, trait objects, "
            "-C symbol-mangling-version=v0)")

    def command(self, work, units):
        d = work / "rust"
        src = _write(d / "work.rs", RUST_WORKLOAD)
        exe = d / "work-rs"
        if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
            compiler = rustc()
            if compiler is None:
                raise SystemExit(f"bench: {NO_RUSTC}")
            # frame pointers in our code so that the -g recording has stacks; std is as shipped
            subprocess.run([compiler, "-C", "opt-level=2", "-g", "-C", "symbol-mangling-version=v0",
                            "-C", "force-frame-pointers=yes", str(src), "-o", str(exe)],
                           check=True)
        return [str(exe), str(units)], None


class System(Program):
    """`perf record -a` for a while, over busy processes started before it (their maps come
    from perf's synthesized events, not from the kernel's at exec)."""

    name, graphs = "system", ("dwarf", "fp")
    what = "perf record -a over busy sqlite3, python3 and xz processes started before it"
    busy = (Sqlite(), Python(), Xz())


PROGRAMS = {p.name: p for p in (Sqlite(), Python(), Xz(), Gxx(), Rust(), System())}


def names(tiers: tuple[str, ...]) -> list[str]:
    return [f"{p.name}-{g}-{t}" for t in tiers for p in PROGRAMS.values() for g in p.graphs]


ALL = names(tuple(TIERS))


def split(name: str) -> tuple[Program, str, str]:
    program, graph, tier = name.rsplit("-", 2)
    return PROGRAMS[program], graph, tier


def check_tools(name: str) -> str | None:
    """Why `name` cannot be recorded here, or None."""
    program, _graph, _tier = split(name)
    for p in (program, *getattr(program, "busy", ())):
        for command, package in p.needs:
            if shutil.which(command, path=SEARCH_PATH) is None:
                return f"{command} not found in {SEARCH_PATH} (apt-get install {package})"
    if program is PROGRAMS["rust"] and rustc() is None:
        return NO_RUSTC
    return None


def run_cpu_seconds(argv: list[str], stdin: Path | None) -> float:
    """User+system CPU seconds of one run of argv and its children, in the recording's env."""
    with open(stdin or os.devnull, "rb") as f:
        proc = subprocess.Popen(RECORD_ENV + argv, stdin=f, stdout=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: {' '.join(argv[:3])} ... failed while calibrating")
    return usage.ru_utime + usage.ru_stime


def unit_cpu_seconds(work: Path, program: Program) -> float:
    """CPU seconds of one unit of `program` on this machine, measured once per work dir."""
    store = work / "calibration.json"
    known = json.loads(store.read_text()) if store.exists() else {}
    if program.name not in known:
        units = 1
        while True:
            cpu = run_cpu_seconds(*program.command(work, units))
            if cpu >= CALIBRATION_CPU_S:
                break
            units *= 4
        known[program.name] = cpu / units
        store.write_text(json.dumps(known, indent=1) + "\n")
    return known[program.name]


def perf_record(out: Path, graph: str, target: list[str], stdin: Path | None = None) -> None:
    cmd = [*RECORD_ENV, "perf", "record", "-N", "-F", str(FREQ), *GRAPH_FLAGS[graph],
           "-o", str(out), *target]
    with open(stdin or os.devnull, "rb") as f:
        proc = subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed:\n{proc.stderr.strip()}")


def record(work: Path, name: str) -> Path:
    """work/<name>.data, recorded unless it is there already; work/<name>.json says how."""
    out = work / f"{name}.data"
    if out.exists():
        return out
    program, graph, tier = split(name)
    why_not = check_tools(name)
    if why_not:
        raise SystemExit(f"bench: cannot record {name}: {why_not}")
    target_samples = TIERS[tier]
    tmp = work / f"{name}.tmp"
    if isinstance(program, System):
        seconds = target_samples / FREQ / (os.cpu_count() or 1)
        how = record_system(work, tmp, graph, seconds)
    else:
        units = max(1, round(target_samples / FREQ / unit_cpu_seconds(work, program)))
        argv, stdin = program.command(work, units)
        print(f"recording {name}: {units} units of {program.name}", file=sys.stderr)
        perf_record(tmp, graph, ["--", *argv], stdin)
        how = {"units": units, "command": argv, "stdin": stdin and str(stdin)}
    tmp.rename(out)
    meta = {"program": program.name, "what": program.what, "call_graph": graph, "tier": tier,
            "target_samples": target_samples, **how}
    (work / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out


def record_system(work: Path, out: Path, graph: str, seconds: float) -> dict:
    """Start one busy process more than there are CPUs, each with work for longer than the
    recording, then `perf record -a -- sleep seconds`; stop them after."""
    busy = []
    try:
        for k in range((os.cpu_count() or 1) + 1):
            program = System.busy[k % len(System.busy)]
            units = math.ceil((seconds + 10) / unit_cpu_seconds(work, program))
            argv, stdin = program.command(work, units)
            with open(stdin or os.devnull, "rb") as f:
                busy.append((program.name, subprocess.Popen(
                    RECORD_ENV + argv, stdin=f, stdout=subprocess.DEVNULL)))
        time.sleep(0.5)  # let them start and map their libraries before perf looks
        print(f"recording perf record -a for {seconds:.1f} s over "
              f"{', '.join(n for n, _ in busy)}", file=sys.stderr)
        perf_record(out, graph, ["-a", "--", "sleep", f"{seconds:.2f}"])
    finally:
        for _name, proc in busy:
            proc.kill()
            proc.wait()
    return {"seconds": round(seconds, 2), "busy": [n for n, _ in busy]}


def describe(work: Path, name: str) -> dict:
    path = work / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}
