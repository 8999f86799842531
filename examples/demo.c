/* Sample workload for the README quick start: most time in spin(), called via two paths. */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin(int n)
{
    for (int i = 0; i < n; i++)
        sink += i * 7;
}

__attribute__((noinline)) void fast_path(void) { spin(200000); }
__attribute__((noinline)) void slow_path(void) { spin(600000); }

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    for (int r = 0; r < rounds; r++) {
        fast_path();
        slow_path();
    }
    return 0;
}
