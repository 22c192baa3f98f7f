/* Deterministic cost of DPDK's rte_lpm_lookup_bulk for `valgrind --tool=cachegrind`: the
 * rte_lpm tables (tbl24 + tbl8 groups, rte_lpm's own struct and entry layout) are filled
 * here directly from the route file, since rte_lpm_add takes minutes for 1M routes natively
 * (hours under valgrind); the lookups are DPDK's inline rte_lpm_lookup_bulk (or
 * rte_lpm_lookup), unchanged. The answers' checksum is the one lpm4_bench.c and
 * `pktvec-bench lpm4` print, so the table is checked against both.
 *
 * Build (no DPDK library is linked: the lookups are header-only):
 *   cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/lpm4_count.c -o /tmp/lpm4_count
 * Run (files kept by `pktvec-bench lpm4 --tables T --files DIR`, or with
 * `--count METHOD --passes N`):
 *   valgrind --tool=cachegrind --cache-sim=yes /tmp/lpm4_count DIR/lpm4_routes.txt \
 *       DIR/lpm4_keys.txt PASSES [bulk|single]
 * and take the difference of two PASSES counts.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lpm.h>

#include "lpm4_fill.h"

#define VEC 256

static uint64_t fnv(const uint32_t *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		for (int s = 0; s < 32; s += 8) {
			h ^= (v[i] >> s) & 0xff;
			h *= 0x100000001b3ULL;
		}
	return h;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: lpm4_count ROUTES KEYS PASSES [bulk|single]\n");
		return 2;
	}
	int passes = atoi(argv[3]);
	int single = argc > 4 && strcmp(argv[4], "single") == 0;
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	size_t n;
	struct lpm4_route *r = lpm4_read_routes(f, &n);
	fclose(f);
	if (!r) {
		fprintf(stderr, "%s: route %zu: bad prefix length\n", argv[1], n);
		return 2;
	}
	lpm4_sort_by_len(r, n);
	/* rte_lpm's struct with as many tbl8 groups as the routes need (no rte_lpm_create:
	 * nothing here needs the EAL). */
	struct rte_lpm *lpm = aligned_alloc(64, sizeof(*lpm));
	memset(lpm, 0, sizeof(*lpm));
	uint32_t groups = lpm4_groups_needed(r, n);
	lpm->tbl8 = calloc((size_t)(groups ? groups : 1) * 256, sizeof(struct rte_lpm_tbl_entry));
	if (lpm4_fill(lpm, r, n, groups, NULL) < 0) {
		fprintf(stderr, "tbl8 groups miscounted\n");
		return 1;
	}
	free(r);

	f = fopen(argv[2], "r");
	if (!f) {
		perror(argv[2]);
		return 2;
	}
	size_t cap = 1 << 20, nk = 0;
	unsigned a, b, c, d;
	uint32_t *keys = malloc(cap * sizeof(*keys));
	while (fscanf(f, " %u.%u.%u.%u", &a, &b, &c, &d) == 4) {
		if (nk == cap)
			keys = realloc(keys, (cap *= 2) * sizeof(*keys));
		keys[nk++] = (a << 24) | (b << 16) | (c << 8) | d;
	}
	fclose(f);
	nk -= nk % VEC;
	uint32_t *out = malloc(nk * sizeof(*out));
	for (int p = 0; p < passes; p++) {
		if (single) {
			for (size_t i = 0; i < nk; i++) {
				uint32_t hop;
				out[i] = rte_lpm_lookup(lpm, keys[i], &hop) == 0 ? hop : 0xffffffffu;
			}
		} else {
			for (size_t i = 0; i < nk; i += VEC)
				rte_lpm_lookup_bulk(lpm, keys + i, out + i, VEC);
		}
	}
	if (!single)
		for (size_t i = 0; i < nk; i++)
			out[i] = (out[i] & RTE_LPM_LOOKUP_SUCCESS) ? (out[i] & 0xffffff) : 0xffffffffu;
	printf("routes %zu groups %" PRIu32 " keys %zu passes %d: checksum %016" PRIx64 "\n", n,
	       groups, nk, passes, fnv(out, nk));
	return 0;
}
