/* rte_lpm (IPv4) lookup cost on a given route table and key list, for a like-for-like
 * comparison with pktvec's Lpm4 (`pktvec-bench lpm4` writes both files and runs this).
 *
 * Build:
 *   cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/lpm4_bench.c -o /tmp/lpm4_bench \
 *      $(pkg-config --libs libdpdk)
 * Run:
 *   /tmp/lpm4_bench --no-huge -m 2048 --no-pci -l 0 -- ROUTES KEYS [REPS] [TBL8S] [serve] [fill]
 *
 * ROUTES: one "a.b.c.d/len next_hop" per line; KEYS: one "a.b.c.d" per line.
 * Prints one "result <name> <cycles per lookup> <checksum>" line per method (the best of
 * REPS passes over all keys; checksum = FNV-1a over the per-key answers, a miss counted as
 * 0xffffffff, so the Rust side can check both tables gave the same answers), and
 * "memory <bytes>" for the table as configured.
 *
 * The table is created by rte_lpm_create. By default the routes go in with rte_lpm_add,
 * which scans every rule of the same length on each add and so takes minutes for 1M
 * routes. With "fill" the same tbl24 entries and tbl8 groups (rte_lpm's own structs and
 * entry layout, in the memory rte_lpm_create allocated) are written directly from the
 * route file, shortest prefixes first, in a second or two; the lookups are DPDK's inline
 * rte_lpm_lookup / _bulk / x4 either way, and the answers' checksum shows that both
 * builds hold the same table. (Only the order of the tbl8 groups may differ.)
 *
 * With "serve" the table is built once, then the harness prints "ready" and times the
 * methods each time it reads a line "run" on stdin (printing the result lines and "end"),
 * until end of input: pktvec-bench uses this to alternate pktvec and rte_lpm rounds on one
 * table without building it again. A line "bulk" times one pass of rte_lpm_lookup_bulk
 * alone, after an untimed one (pktvec's pass just before may have evicted the table's
 * lines), for pairs of single passes with pktvec's.
 *
 * Only DPDK's public API and structs are used (rte_lpm_create/add/lookup/lookup_bulk/
 * lookupx4, struct rte_lpm's tbl24 and tbl8).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_malloc.h>

#include "lpm4_fill.h"

#define VEC 256

static uint32_t *read_keys(const char *path, size_t *n_out)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(2);
	}
	size_t cap = 1 << 20, n = 0;
	uint32_t *k = malloc(cap * sizeof(*k));
	unsigned a, b, c, d;
	while (fscanf(f, " %u.%u.%u.%u", &a, &b, &c, &d) == 4) {
		if (n == cap) {
			cap *= 2;
			k = realloc(k, cap * sizeof(*k));
		}
		k[n++] = (a << 24) | (b << 16) | (c << 8) | d;
	}
	fclose(f);
	*n_out = n;
	return k;
}

static uint64_t fnv(const uint32_t *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		for (int s = 0; s < 32; s += 8) {
			h ^= (v[i] >> s) & 0xff;
			h *= 0x100000001b3ULL;
		}
	}
	return h;
}

/* One untimed pass, then REPS passes of each method over all N keys; prints the best cycles per lookup and the
 * answers' checksum of each method. */
/* One timed pass of rte_lpm_lookup_bulk over all keys (vectors of VEC): cycles a key; the
 * answers' checksum in *sum. */
static double bulk_pass(const struct rte_lpm *lpm, const uint32_t *keys, size_t n, uint32_t *out,
			uint64_t *sum)
{
	uint64_t s = rte_rdtsc();
	for (size_t i = 0; i < n; i += VEC)
		rte_lpm_lookup_bulk(lpm, keys + i, out + i, VEC);
	double cyc = (double)(rte_rdtsc() - s) / n;
	for (size_t i = 0; i < n; i++)
		out[i] = (out[i] & RTE_LPM_LOOKUP_SUCCESS) ? (out[i] & 0xffffff) : 0xffffffffu;
	*sum = fnv(out, n);
	return cyc;
}

static void run_passes(const struct rte_lpm *lpm, const uint32_t *keys, size_t n, uint32_t *out,
		       int reps)
{
	double best[3] = {1e18, 1e18, 1e18};
	uint64_t sums[3] = {0, 0, 0};
	const char *names[3] = {"rte_lpm_lookup", "rte_lpm_lookup_bulk", "rte_lpm_lookupx4"};
	/* Untimed warm-up (as on the Rust side): the first touch of the table's pages and
	 * lines is not a lookup's cost. */
	for (size_t i = 0; i < n; i += VEC)
		rte_lpm_lookup_bulk(lpm, keys + i, out + i, VEC);
	for (int r = 0; r < reps; r++) {
		/* single */
		uint64_t s = rte_rdtsc();
		for (size_t i = 0; i < n; i++) {
			uint32_t hop;
			out[i] = rte_lpm_lookup(lpm, keys[i], &hop) == 0 ? hop : 0xffffffffu;
		}
		double cyc = (double)(rte_rdtsc() - s) / n;
		if (cyc < best[0])
			best[0] = cyc;
		sums[0] = fnv(out, n);

		/* bulk, vectors of VEC */
		cyc = bulk_pass(lpm, keys, n, out, &sums[1]);
		if (cyc < best[1])
			best[1] = cyc;

		/* x4 */
		s = rte_rdtsc();
		for (size_t i = 0; i < n; i += 4) {
			xmm_t ip = _mm_loadu_si128((const __m128i *)(keys + i));
			rte_lpm_lookupx4(lpm, ip, out + i, 0xffffffffu);
		}
		cyc = (double)(rte_rdtsc() - s) / n;
		if (cyc < best[2])
			best[2] = cyc;
		sums[2] = fnv(out, n);
	}
	for (int m = 0; m < 3; m++)
		printf("result %s %.3f %016" PRIx64 "\n", names[m], best[m], sums[m]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	argc -= ret;
	argv += ret;
	if (argc < 3) {
		fprintf(stderr,
			"usage: lpm4_bench <EAL args> -- ROUTES KEYS [REPS] [TBL8S] [serve] [fill]\n");
		return 2;
	}
	const char *routes_path = argv[1];
	const char *keys_path = argv[2];
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	uint32_t tbl8s = argc > 4 ? (uint32_t)atoi(argv[4]) : 65536;
	int serve = 0, fill_mode = 0;
	for (int i = 5; i < argc; i++) {
		serve |= strcmp(argv[i], "serve") == 0;
		fill_mode |= strcmp(argv[i], "fill") == 0;
	}

	/* Count routes first so max_rules fits the table. */
	FILE *f = fopen(routes_path, "r");
	if (!f) {
		perror(routes_path);
		return 2;
	}
	uint32_t n_routes = 0;
	int ch;
	while ((ch = fgetc(f)) != EOF)
		if (ch == '\n')
			n_routes++;
	rewind(f);

	struct rte_lpm_config cfg = {
		.max_rules = n_routes + 16,
		.number_tbl8s = tbl8s,
		.flags = 0,
	};
	struct rte_lpm *lpm = rte_lpm_create("lpm4_bench", SOCKET_ID_ANY, &cfg);
	if (!lpm) {
		fprintf(stderr, "rte_lpm_create failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	unsigned a, b, c, d, len;
	uint32_t nh;
	uint32_t added = 0;
	uint64_t t0 = rte_rdtsc();
	if (fill_mode) {
		size_t n_read;
		struct lpm4_route *r = lpm4_read_routes(f, &n_read);
		if (!r) {
			fprintf(stderr, "%s: route %zu: bad prefix length\n", routes_path, n_read);
			return 2;
		}
		lpm4_sort_by_len(r, n_read);
		if (lpm4_fill(lpm, r, n_read, tbl8s, NULL) < 0) {
			fprintf(stderr, "more than %" PRIu32 " tbl8 groups needed\n", tbl8s);
			return 1;
		}
		free(r);
		added = (uint32_t)n_read;
	}
	while (!fill_mode &&
	       fscanf(f, " %u.%u.%u.%u/%u %" SCNu32, &a, &b, &c, &d, &len, &nh) == 6) {
		uint32_t ip = (a << 24) | (b << 16) | (c << 8) | d;
		/* rte_lpm next hops are 24 bits; keep the low 24 (the Rust side does the same). */
		if (rte_lpm_add(lpm, ip, (uint8_t)len, nh & 0xffffff) < 0) {
			fprintf(stderr, "rte_lpm_add %u.%u.%u.%u/%u failed\n", a, b, c, d, len);
			return 1;
		}
		added++;
	}
	uint64_t t_add = rte_rdtsc() - t0;
	fclose(f);

	size_t n;
	uint32_t *keys = read_keys(keys_path, &n);
	n -= n % VEC;
	uint32_t *out = malloc(n * sizeof(*out));
	printf("routes %" PRIu32 " keys %zu tbl8s %" PRIu32 " tsc_hz %" PRIu64
	       " %s_cycles_per_route %.1f\n",
	       added, n, tbl8s, rte_get_tsc_hz(), fill_mode ? "fill" : "add",
	       (double)t_add / added);
	/* rte_lpm's memory as configured: tbl24 (2^24 x 4 B) + tbl8s x 256 x 4 B + rules x 8 B. */
	printf("memory %" PRIu64 "\n",
	       (uint64_t)(1u << 24) * 4 + (uint64_t)tbl8s * 256 * 4 + (uint64_t)cfg.max_rules * 8);

	if (serve) {
		char line[64];
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			if (strncmp(line, "run", 3) == 0) {
				run_passes(lpm, keys, n, out, reps);
			} else if (strncmp(line, "bulk", 4) == 0) {
				uint64_t sum;
				bulk_pass(lpm, keys, n, out, &sum);
				double cyc = bulk_pass(lpm, keys, n, out, &sum);
				printf("result rte_lpm_lookup_bulk %.3f %016" PRIx64 "\n", cyc, sum);
			} else {
				continue;
			}
			printf("end\n");
			fflush(stdout);
		}
	} else {
		run_passes(lpm, keys, n, out, reps);
	}
	rte_lpm_free(lpm);
	free(keys);
	free(out);
	rte_eal_cleanup();
	return 0;
}
