/*
 * lpm6_bench: DPDK rte_lpm6 on the same routes and keys as pktvec's IPv6 LPM benchmark.
 *
 * Reads the files `pktvec-bench lpm6` writes (routes: "addr/len next_hop" per line,
 * keys: one IPv6 address per line), builds an rte_lpm6 table sized for them, and times
 * rte_lpm6_lookup (one key at a time) and rte_lpm6_lookup_bulk_func (vectors of BULK keys)
 * with the TSC. Prints "key=value" lines that pktvec-bench parses, including a checksum
 * of the results so both sides can be checked to answer the same.
 *
 * Build: cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/lpm6_bench.c \
 *            -o /tmp/lpm6_bench $(pkg-config --libs libdpdk)
 * Run:   /tmp/lpm6_bench --no-huge -m 2048 --no-pci -l 0 -- ROUTES KEYS [REPS [BULK [serve]]]
 *
 * With "serve", after those lines it prints "ready" and reads commands on stdin until end
 * of input: "bulk" times one pass of rte_lpm6_lookup_bulk_func after an untimed one
 * ("result rte_lpm6_lookup_bulk_func CYCLES_PER_LOOKUP HITS", then "end"), so that
 * pktvec-bench can pair single passes of both sides back to back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm6.h>
#include <rte_malloc.h>

struct route {
	uint8_t ip[16];
	uint8_t len;
	uint32_t nh;
};

static int read_routes(const char *path, struct route **out, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t cap = 1 << 16, cnt = 0;
	struct route *v = malloc(cap * sizeof(*v));
	char line[256], addr[128];
	unsigned len;
	unsigned long nh;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *slash = strchr(line, '/');
		if (slash == NULL)
			continue;
		*slash = ' ';
		if (sscanf(line, "%127s %u %lu", addr, &len, &nh) != 3)
			continue;
		if (cnt == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
		}
		if (inet_pton(AF_INET6, addr, v[cnt].ip) != 1 || len > 128) {
			fprintf(stderr, "bad route line: %s\n", line);
			fclose(f);
			return -1;
		}
		v[cnt].len = (uint8_t)len;
		v[cnt].nh = (uint32_t)nh;
		cnt++;
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

static int read_keys(const char *path, uint8_t (**out)[16], size_t *n)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t cap = 1 << 16, cnt = 0;
	uint8_t(*v)[16] = malloc(cap * 16);
	char line[256], addr[128];
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%127s", addr) != 1)
			continue;
		if (cnt == cap) {
			cap *= 2;
			v = realloc(v, cap * 16);
		}
		if (inet_pton(AF_INET6, addr, v[cnt]) != 1) {
			fprintf(stderr, "bad key line: %s\n", line);
			fclose(f);
			return -1;
		}
		cnt++;
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

/* Top `bits` bits of an address as a 128-bit value (for counting trie groups). */
static unsigned __int128 top_bits(const uint8_t ip[16], unsigned bits)
{
	unsigned __int128 v = 0;
	for (int i = 0; i < 16; i++)
		v = (v << 8) | ip[i];
	if (bits == 0)
		return 0;
	return v >> (128 - bits);
}

static int cmp_u128(const void *a, const void *b)
{
	unsigned __int128 x = *(const unsigned __int128 *)a, y = *(const unsigned __int128 *)b;
	return x < y ? -1 : x > y;
}

/*
 * Number of tbl8 groups a table of these routes needs in rte_lpm6's layout (a 24-bit first
 * level, then 8-bit groups): one group per distinct top-b-bit path (b = 24, 32, ..., 120)
 * under which some route is longer than b.
 */
static size_t tbl8_groups_needed(const struct route *r, size_t n)
{
	unsigned __int128 *tmp = malloc(n * sizeof(*tmp));
	size_t total = 0;
	for (unsigned b = 24; b < 128; b += 8) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (r[i].len > b)
				tmp[m++] = top_bits(r[i].ip, b);
		qsort(tmp, m, sizeof(*tmp), cmp_u128);
		for (size_t i = 0; i < m; i++)
			if (i == 0 || tmp[i] != tmp[i - 1])
				total++;
	}
	free(tmp);
	return total;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	argc -= ret;
	argv += ret;
	if (argc < 3) {
		fprintf(stderr, "usage: lpm6_bench EAL-ARGS -- ROUTES KEYS [REPS [BULK]]\n");
		return 1;
	}
	int reps = argc > 3 ? atoi(argv[3]) : 7;
	unsigned bulk = argc > 4 ? (unsigned)atoi(argv[4]) : 256;
	if (reps < 1)
		reps = 1;
	if (bulk < 1)
		bulk = 1;

	struct route *routes;
	size_t nr;
	uint8_t(*keys)[16];
	size_t nk;
	if (read_routes(argv[1], &routes, &nr) != 0 || read_keys(argv[2], &keys, &nk) != 0) {
		fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	size_t groups = tbl8_groups_needed(routes, nr);
	struct rte_lpm6_config cfg = {
		.max_rules = (uint32_t)nr + 16,
		.number_tbl8s = (uint32_t)(groups + groups / 16 + 64),
		.flags = 0,
	};
	struct rte_malloc_socket_stats s0, s1;
	rte_malloc_get_socket_stats(0, &s0);
	uint64_t t0 = rte_rdtsc();
	struct rte_lpm6 *lpm = rte_lpm6_create("pktvec_lpm6", 0, &cfg);
	if (lpm == NULL) {
		fprintf(stderr, "rte_lpm6_create failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	for (size_t i = 0; i < nr; i++) {
		int r = rte_lpm6_add(lpm, routes[i].ip, routes[i].len, routes[i].nh);
		if (r != 0) {
			fprintf(stderr, "rte_lpm6_add %zu failed: %d\n", i, r);
			return 1;
		}
	}
	uint64_t t1 = rte_rdtsc();
	rte_malloc_get_socket_stats(0, &s1);

	printf("routes=%zu\nkeys=%zu\nmax_rules=%u\nnumber_tbl8s=%u\ntbl8_groups_needed=%zu\n",
	       nr, nk, cfg.max_rules, cfg.number_tbl8s, groups);
	printf("memory_bytes=%zu\nbuild_cycles=%" PRIu64 "\n",
	       s1.heap_allocsz_bytes - s0.heap_allocsz_bytes, t1 - t0);
	printf("tsc_hz=%" PRIu64 "\n", rte_get_tsc_hz());

	/* Checksum: number of hits and sum of next hops (the Rust side computes the same). */
	uint64_t hits = 0, sum = 0;
	int32_t *out = malloc(nk * sizeof(*out));
	for (size_t i = 0; i < nk; i++) {
		uint32_t nh;
		if (rte_lpm6_lookup(lpm, keys[i], &nh) == 0) {
			hits++;
			sum += nh;
		}
	}
	printf("hits=%" PRIu64 "\nnh_sum=%" PRIu64 "\n", hits, sum);

	double *single = malloc(reps * sizeof(double)), *bulkc = malloc(reps * sizeof(double));
	volatile uint64_t sink = 0;
	for (int r = 0; r < reps; r++) {
		uint64_t acc = 0;
		uint64_t a = rte_rdtsc();
		for (size_t i = 0; i < nk; i++) {
			uint32_t nh = 0;
			rte_lpm6_lookup(lpm, keys[i], &nh);
			acc += nh;
		}
		uint64_t b = rte_rdtsc();
		sink += acc;
		single[r] = (double)(b - a) / (double)nk;

		a = rte_rdtsc();
		for (size_t i = 0; i < nk; i += bulk) {
			unsigned n = (unsigned)(nk - i < bulk ? nk - i : bulk);
			rte_lpm6_lookup_bulk_func(lpm, &keys[i], &out[i], n);
		}
		b = rte_rdtsc();
		bulkc[r] = (double)(b - a) / (double)nk;
	}
	uint64_t bhits = 0, bsum = 0;
	for (size_t i = 0; i < nk; i++)
		if (out[i] >= 0) {
			bhits++;
			bsum += (uint64_t)out[i];
		}
	qsort(single, reps, sizeof(double), cmp_dbl);
	qsort(bulkc, reps, sizeof(double), cmp_dbl);
	printf("bulk_hits=%" PRIu64 "\nbulk_nh_sum=%" PRIu64 "\nbulk=%u\nreps=%d\n", bhits, bsum,
	       bulk, reps);
	printf("single_cycles=%.3f\nbulk_cycles=%.3f\n", single[reps / 2], bulkc[reps / 2]);
	printf("single_cycles_min=%.3f\nbulk_cycles_min=%.3f\n", single[0], bulkc[0]);
	(void)sink;
	if (argc > 5 && strcmp(argv[5], "serve") == 0) {
		char line[64];
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			if (strncmp(line, "bulk", 4) != 0)
				continue;
			uint64_t a = 0, b = 0;
			for (int pass = 0; pass < 2; pass++) {
				a = rte_rdtsc();
				for (size_t i = 0; i < nk; i += bulk) {
					unsigned n = (unsigned)(nk - i < bulk ? nk - i : bulk);
					rte_lpm6_lookup_bulk_func(lpm, &keys[i], &out[i], n);
				}
				b = rte_rdtsc();
			}
			uint64_t h = 0;
			for (size_t i = 0; i < nk; i++)
				h += out[i] >= 0;
			printf("result rte_lpm6_lookup_bulk_func %.3f %" PRIu64 "\nend\n",
			       (double)(b - a) / (double)nk, h);
			fflush(stdout);
		}
	}
	rte_lpm6_free(lpm);
	rte_eal_cleanup();
	return 0;
}
