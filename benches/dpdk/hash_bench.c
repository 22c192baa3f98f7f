/*
 * rte_hash side of pktvec's hash benchmark (`pktvec-bench hash` runs it).
 *
 * Reads the keys (6-byte MAC addresses) and the lookup sequence that pktvec-bench hash wrote,
 * builds an rte_hash with the same number of entries (key_len 6, rte_hash_crc, no extra
 * flags: DPDK's fastest single-writer configuration), adds every key with its index as
 * data, then times rte_hash_lookup_bulk_data over the sequence in bursts of BURST keys
 * (the sequence is vectors of 256 packets: 256 source MACs, then 256 destination MACs),
 * and rte_hash_lookup_data one key at a time. Prints one "RESULT key=value ..." line.
 *
 * With a sixth argument "serve" the table is built once, then the harness prints "ready"
 * and reads commands on stdin until end of input: "run" does the measurement above,
 * "bulk" one untimed and one timed pass of rte_hash_lookup_bulk_data over the sequence
 * ("result rte_hash_lookup_bulk_data CYCLES_PER_LOOKUP HITS"), each answer ending with
 * "end": pktvec-bench pairs single passes of both sides back to back with it.
 *
 * Build: cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/hash_bench.c \
 *            -o /tmp/hash_bench $(pkg-config --libs libdpdk)
 * Run:   /tmp/hash_bench --no-huge -m 512 --no-pci -l 0 --log-level=1 -- \
 *            KEYS_FILE LOOKUPS_FILE ENTRIES BURST REPS [serve]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#define KEY_LEN 6
#define MAX_BURST 64 /* RTE_HASH_LOOKUP_BULK_MAX */

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* One pass of rte_hash_lookup_bulk_data over the sequence in bursts of `burst` through each
 * half-vector of 256: its TSC cycles; the hits in *hits, the data's sum added to *sum. */
static uint64_t bulk_pass(const struct rte_hash *h, const uint8_t *seq, size_t nseq,
			  unsigned burst, uint64_t *hits, uint64_t *sum)
{
	const void *kp[MAX_BURST];
	void *data[MAX_BURST];
	uint64_t n_hits = 0;
	uint64_t s = rte_rdtsc_precise();
	for (size_t base = 0; base < nseq; base += 256) {
		for (unsigned off = 0; off < 256; off += burst) {
			unsigned n = 256 - off < burst ? 256 - off : burst;
			for (unsigned j = 0; j < n; j++)
				kp[j] = seq + (base + off + j) * KEY_LEN;
			uint64_t mask = 0;
			rte_hash_lookup_bulk_data(h, kp, n, &mask, data);
			n_hits += (uint64_t)__builtin_popcountll(mask);
			*sum += (uintptr_t)data[0];
		}
	}
	uint64_t c = rte_rdtsc_precise() - s;
	*hits = n_hits;
	return c;
}

/* The measurement: `reps` passes of bulk and of single lookups, medians, one RESULT line. */
static void measure(const struct rte_hash *h, const uint8_t *seq, size_t nseq, unsigned burst,
		    int reps, uint32_t entries, size_t nkeys, size_t add_fail, uint64_t mem,
		    uint64_t build_cycles)
{
	uint64_t bulk[64], single[64];
	uint64_t hits_bulk = 0, hits_single = 0, sum = 0;
	for (int r = 0; r < reps; r++) {
		/* Bulk: bursts of `burst` keys through each half-vector of 256. */
		bulk[r] = bulk_pass(h, seq, nseq, burst, &hits_bulk, &sum);

		/* Single: one rte_hash_lookup_data per key. */
		uint64_t hits = 0;
		uint64_t s = rte_rdtsc_precise();
		for (size_t i = 0; i < nseq; i++) {
			void *d;
			if (rte_hash_lookup_data(h, seq + i * KEY_LEN, &d) >= 0) {
				hits++;
				sum += (uintptr_t)d;
			}
		}
		single[r] = rte_rdtsc_precise() - s;
		hits_single = hits;
	}
	printf("RESULT entries=%u keys=%zu lookups=%zu burst=%u reps=%d add_fail=%zu "
	       "mem_bytes=%" PRIu64 " build_cycles=%" PRIu64 " bulk_cycles_per_lookup=%.3f "
	       "single_cycles_per_lookup=%.3f hits_bulk=%" PRIu64 " hits_single=%" PRIu64
	       " tsc_hz=%" PRIu64 " checksum=%" PRIu64 "\n",
	       entries, nkeys, nseq, burst, reps, add_fail, mem, build_cycles,
	       (double)median(bulk, reps) / (double)nseq,
	       (double)median(single, reps) / (double)nseq, hits_bulk, hits_single,
	       rte_get_tsc_hz(), sum);
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
	if (argc != 6 && !(argc == 7 && strcmp(argv[6], "serve") == 0)) {
		fprintf(stderr, "usage: hash_bench EAL-ARGS -- KEYS LOOKUPS ENTRIES BURST REPS [serve]\n");
		return 2;
	}
	int serve = argc == 7;
	size_t keys_len, seq_len;
	uint8_t *keys = read_file(argv[1], &keys_len);
	uint8_t *seq = read_file(argv[2], &seq_len);
	uint32_t entries = (uint32_t)strtoul(argv[3], NULL, 10);
	unsigned burst = (unsigned)strtoul(argv[4], NULL, 10);
	int reps = atoi(argv[5]);
	size_t nkeys = keys_len / KEY_LEN, nseq = seq_len / KEY_LEN;
	if (burst == 0 || burst > MAX_BURST || nseq % 512 != 0 || reps < 1 || reps > 64) {
		fprintf(stderr, "bad BURST (1..64), REPS (1..64) or sequence length\n");
		return 2;
	}

	int socket = (int)rte_socket_id();
	struct rte_malloc_socket_stats before, after;
	rte_malloc_get_socket_stats(socket, &before);
	struct rte_hash_parameters params = {
		.name = "pktvec_hash_bench",
		.entries = entries,
		.reserved = 0,
		.key_len = KEY_LEN,
		.hash_func = rte_hash_crc,
		.hash_func_init_val = 0,
		.socket_id = socket,
		.extra_flag = 0,
	};
	struct rte_hash *h = rte_hash_create(&params);
	if (h == NULL) {
		fprintf(stderr, "rte_hash_create(%u entries) failed: %s (raise -m)\n", entries,
			rte_strerror(rte_errno));
		return 1;
	}
	rte_malloc_get_socket_stats(socket, &after);
	uint64_t mem = after.heap_allocsz_bytes - before.heap_allocsz_bytes;

	uint64_t t0 = rte_rdtsc();
	size_t add_fail = 0;
	for (size_t i = 0; i < nkeys; i++) {
		if (rte_hash_add_key_data(h, keys + i * KEY_LEN, (void *)(uintptr_t)i) < 0)
			add_fail++;
	}
	uint64_t build_cycles = rte_rdtsc() - t0;

	if (serve) {
		char line[64];
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			if (strncmp(line, "run", 3) == 0) {
				measure(h, seq, nseq, burst, reps, entries, nkeys, add_fail, mem,
					build_cycles);
			} else if (strncmp(line, "bulk", 4) == 0) {
				uint64_t hits, sum = 0;
				bulk_pass(h, seq, nseq, burst, &hits, &sum);
				uint64_t c = bulk_pass(h, seq, nseq, burst, &hits, &sum);
				printf("result rte_hash_lookup_bulk_data %.3f %" PRIu64 "\n",
				       (double)c / (double)nseq, hits);
			} else {
				continue;
			}
			printf("end\n");
			fflush(stdout);
		}
	} else {
		measure(h, seq, nseq, burst, reps, entries, nkeys, add_fail, mem, build_cycles);
	}
	rte_hash_free(h);
	free(keys);
	free(seq);
	rte_eal_cleanup();
	return 0;
}
