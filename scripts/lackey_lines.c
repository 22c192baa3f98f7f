// Code lines in execution order from valgrind lackey's trace (scripts/model_footprints.py).
//
//   lackey_lines LINES BIAS LO HI [BIAS LO HI ...] < lackey-log > lines
//
// Reads `valgrind --tool=lackey --trace-mem=yes` output on stdin and writes, one decimal
// per line, the 64-byte code lines of the instruction fetches ("I  addr,size") in order,
// as object-relative line numbers (the addresses callgrind --dump-instr=yes reports):
// an address in [LO+BIAS, HI+BIAS) of one of the given objects (hex: load bias, text
// start and end as in the ELF file) becomes (addr - BIAS) / 64. Only the line numbers
// listed in the file LINES (decimal, one per line: the calibration's executed lines) are
// kept, and consecutive touches of the same line are collapsed.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define HB 22
static uint64_t *tab;
static const size_t mask = ((size_t)1 << HB) - 1;

static size_t slot(uint64_t k) { return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> (64 - HB)); }
static void insert(uint64_t k) {
    size_t h = slot(k);
    while (tab[h] && tab[h] != k + 1) h = (h + 1) & mask;
    tab[h] = k + 1;
}
static int contains(uint64_t k) {
    for (size_t h = slot(k); tab[h]; h = (h + 1) & mask)
        if (tab[h] == k + 1) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5 || (argc - 2) % 3) {
        fprintf(stderr, "usage: %s LINES BIAS LO HI [BIAS LO HI ...]\n", argv[0]);
        return 2;
    }
    int nobj = (argc - 2) / 3;
    uint64_t bias[16], lo[16], hi[16];
    for (int i = 0; i < nobj && i < 16; i++) {
        bias[i] = strtoull(argv[2 + 3 * i], NULL, 16);
        lo[i] = strtoull(argv[3 + 3 * i], NULL, 16) + bias[i];
        hi[i] = strtoull(argv[4 + 3 * i], NULL, 16) + bias[i];
    }
    tab = calloc(mask + 1, sizeof *tab);
    FILE *f = fopen(argv[1], "r");
    if (!f || !tab) return 1;
    unsigned long long x;
    while (fscanf(f, "%llu", &x) == 1) insert(x);
    fclose(f);
    static char buf[1 << 16];
    uint64_t last = ~0ULL, count = 0;
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);
    while (fgets(buf, sizeof buf, stdin)) {
        if (buf[0] != 'I') continue;
        char *p = buf + 1;
        while (*p == ' ') p++;
        uint64_t a = strtoull(p, NULL, 16), l = ~0ULL;
        for (int i = 0; i < nobj; i++)
            if (a >= lo[i] && a < hi[i]) {
                l = (a - bias[i]) >> 6;
                break;
            }
        if (l == ~0ULL || l == last || !contains(l)) continue;
        last = l;
        printf("%llu\n", (unsigned long long)l);
        count++;
    }
    fprintf(stderr, "lackey_lines: %llu touches\n", (unsigned long long)count);
    return 0;
}
