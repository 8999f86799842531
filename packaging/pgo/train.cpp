// Training workload for the PGO build of the bundled interpreter (packaging/build-python.sh):
// a C++ program whose recordings give the parser what real C++ profiles give it - many
// functions, templates and inlined library code (DWARF inline frames, line tables of several
// units), mangled names, recursion, and stacks through libstdc++ and libc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace shapes {

template <typename T>
struct Grid {
    std::vector<T> cells;
    size_t width;
    explicit Grid(size_t w) : cells(w * w), width(w) {}
    T& at(size_t x, size_t y) { return cells[y * width + x]; }
};

template <typename T>
__attribute__((noinline)) T smooth(Grid<T>& g, int rounds) {
    T total{};
    for (int r = 0; r < rounds; ++r)
        for (size_t y = 1; y + 1 < g.width; ++y)
            for (size_t x = 1; x + 1 < g.width; ++x) {
                T v = (g.at(x - 1, y) + g.at(x + 1, y) + g.at(x, y - 1) + g.at(x, y + 1)) / 4;
                g.at(x, y) = v;
                total += v;
            }
    return total;
}

}  // namespace shapes

namespace words {

__attribute__((noinline)) std::string make_word(unsigned seed) {
    std::string s;
    for (int i = 0; i < 8; ++i) {
        s.push_back(static_cast<char>('a' + seed % 26));
        seed = seed * 1103515245u + 12345u;
    }
    return s;
}

__attribute__((noinline)) size_t count_words(unsigned n) {
    std::map<std::string, unsigned> counts;
    for (unsigned i = 0; i < n; ++i)
        ++counts[make_word(i % 4096)];
    return counts.size();
}

__attribute__((noinline)) long sort_words(unsigned n) {
    std::vector<std::string> v;
    for (unsigned i = 0; i < n; ++i)
        v.push_back(make_word(i * 7919u));
    std::sort(v.begin(), v.end());
    return static_cast<long>(v.front().size() + v.back().size());
}

}  // namespace words

__attribute__((noinline)) long descend(int depth, long acc) {
    if (depth == 0) {
        shapes::Grid<double> g(48);
        g.at(3, 3) = static_cast<double>(acc % 97);
        return static_cast<long>(shapes::smooth(g, 2)) + words::sort_words(300);
    }
    if (depth % 3 == 0)
        return descend(depth - 1, acc + static_cast<long>(words::count_words(200)));
    return descend(depth - 1, acc * 31 + depth);
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
    long sink = 0;
    for (int r = 0; r < rounds; ++r)
        sink += descend(4 + r % 9, r);
    std::printf("%ld\n", sink);
    return 0;
}
