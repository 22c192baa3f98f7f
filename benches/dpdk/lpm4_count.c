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

#define VEC 256

struct route {
	uint32_t ip, nh;
	uint8_t len;
};

static int by_len(const void *a, const void *b)
{
	const struct route *x = a, *y = b;
	return (int)x->len - (int)y->len;
}

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

static struct rte_lpm_tbl_entry entry(uint32_t nh, uint8_t depth, int group)
{
	struct rte_lpm_tbl_entry e = {0};
	e.next_hop = nh;
	e.valid = 1;
	e.valid_group = group;
	e.depth = depth;
	return e;
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
	size_t cap = 1 << 20, n = 0;
	struct route *r = malloc(cap * sizeof(*r));
	unsigned a, b, c, d, len;
	uint32_t nh;
	while (fscanf(f, " %u.%u.%u.%u/%u %" SCNu32, &a, &b, &c, &d, &len, &nh) == 6) {
		if (n == cap)
			r = realloc(r, (cap *= 2) * sizeof(*r));
		uint32_t ip = (a << 24) | (b << 16) | (c << 8) | d;
		r[n++] = (struct route){len ? ip & ~(uint32_t)0 << (32 - len) : 0, nh & 0xffffff,
					(uint8_t)len};
	}
	fclose(f);
	/* Shorter prefixes first, so that longer ones overwrite them (a route file holds each
	 * prefix once). */
	qsort(r, n, sizeof(*r), by_len);
	struct rte_lpm *lpm = aligned_alloc(64, sizeof(*lpm));
	memset(lpm, 0, sizeof(*lpm));
	uint32_t groups = 0, gcap = 4096;
	lpm->tbl8 = calloc((size_t)gcap * 256, sizeof(struct rte_lpm_tbl_entry));
	for (size_t i = 0; i < n; i++) {
		uint32_t ip = r[i].ip;
		if (r[i].len <= 24) {
			uint32_t first = ip >> 8, count = 1u << (24 - r[i].len);
			for (uint32_t s = first; s < first + count; s++)
				lpm->tbl24[s] = entry(r[i].nh, r[i].len, 0);
			continue;
		}
		struct rte_lpm_tbl_entry *t = &lpm->tbl24[ip >> 8];
		if (!(t->valid && t->valid_group)) {
			if (groups == gcap) {
				lpm->tbl8 = realloc(lpm->tbl8, (size_t)(gcap *= 2) * 256 * sizeof(*t));
			}
			struct rte_lpm_tbl_entry *g = &lpm->tbl8[(size_t)groups * 256];
			for (int s = 0; s < 256; s++) {
				g[s] = *t;
				g[s].valid_group = t->valid; /* rte_lpm: "in use" in tbl8 */
			}
			*t = entry(groups++, 24, 1);
		}
		struct rte_lpm_tbl_entry *g = &lpm->tbl8[(size_t)t->next_hop * 256];
		uint32_t first = ip & 255, count = 1u << (32 - r[i].len);
		for (uint32_t s = first; s < first + count; s++)
			g[s] = entry(r[i].nh, r[i].len, 1);
	}
	free(r);

	f = fopen(argv[2], "r");
	if (!f) {
		perror(argv[2]);
		return 2;
	}
	cap = 1 << 20;
	size_t nk = 0;
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
