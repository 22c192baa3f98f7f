/*
 * rte_ring side of pktvec's handoff benchmark (`pktvec-bench handoff` runs it).
 *
 * dpdk-test's ring_perf_autotest "two physical cores" SP/SC bulk test, on demand: one
 * rte_ring of RING_SIZE pointer slots (RING_F_SP_ENQ | RING_F_SC_DEQ, as dpdk-test's
 * legacy ring), the main lcore enqueues ELEMENTS pointers in bulks of BULK
 * (rte_ring_sp_enqueue_bulk, rte_pause() after a try that found no room), the worker lcore
 * dequeues them in bulks of BULK (rte_ring_sc_dequeue_bulk, rte_pause() after a try that
 * found too few). Each side times its own loop with rte_rdtsc(); the answer is both
 * sides' cycles per element, whose sum is dpdk-test's figure.
 *
 * Serve mode: it creates the ring, launches the worker (which sleeps on a semaphore, so
 * that it leaves its core free between runs), prints "ready", then reads commands on stdin
 * until end of input: "run" moves ELEMENTS pointers once and prints
 * "result PRODUCER_CYCLES CONSUMER_CYCLES" (per element), then "end". pktvec-bench
 * alternates these runs with pktvec's ring on the same two cores, pair by pair.
 *
 * Build: cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/ring_bench.c \
 *            -o /tmp/ring_bench $(pkg-config --libs libdpdk)
 * Run:   /tmp/ring_bench --no-huge -m 256 --no-pci -l 0-1 --log-level=1 -- \
 *            RING_SIZE BULK ELEMENTS
 */
#include <inttypes.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>

#define MAX_BULK 256

static struct rte_ring *ring;
static unsigned int bulk;
static uint64_t elements;
static sem_t go, done;
static volatile int quit;
static uint64_t consumer_cycles;
static int consumer_ok;

/* The worker: each run dequeues `elements` pointers and checks they come in order. */
static int consumer(void *arg)
{
	(void)arg;
	void *objs[MAX_BULK];
	for (;;) {
		sem_wait(&go);
		if (quit)
			return 0;
		uint64_t got = 0;
		int ok = 1;
		uint64_t t0 = rte_rdtsc();
		while (got < elements) {
			while (rte_ring_sc_dequeue_bulk(ring, objs, bulk, NULL) == 0)
				rte_pause();
			/* first and last of the bulk: a lost or repeated pointer shifts both */
			ok &= (uintptr_t)objs[0] == got && (uintptr_t)objs[bulk - 1] == got + bulk - 1;
			got += bulk;
		}
		consumer_cycles = rte_rdtsc() - t0;
		consumer_ok = ok;
		sem_post(&done);
	}
}

/* One run: the main lcore produces while the worker consumes. */
static int run(void)
{
	void *objs[MAX_BULK];
	uint64_t sent = 0;
	sem_post(&go);
	uint64_t t0 = rte_rdtsc();
	while (sent < elements) {
		for (unsigned int i = 0; i < bulk; i++)
			objs[i] = (void *)(uintptr_t)(sent + i);
		while (rte_ring_sp_enqueue_bulk(ring, objs, bulk, NULL) == 0)
			rte_pause();
		sent += bulk;
	}
	uint64_t producer_cycles = rte_rdtsc() - t0;
	sem_wait(&done);
	if (!consumer_ok) {
		fprintf(stderr, "ring_bench: the consumer saw pointers out of order\n");
		return -1;
	}
	printf("result %.4f %.4f\n", (double)producer_cycles / (double)elements,
	       (double)consumer_cycles / (double)elements);
	return 0;
}

int main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "ring_bench: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	if (argc != 4) {
		fprintf(stderr, "usage: ring_bench EAL-ARGS -- RING_SIZE BULK ELEMENTS\n");
		return 1;
	}
	unsigned int size = (unsigned int)strtoul(argv[1], NULL, 10);
	bulk = (unsigned int)strtoul(argv[2], NULL, 10);
	elements = strtoull(argv[3], NULL, 10);
	if (bulk == 0 || bulk > MAX_BULK || elements % bulk != 0) {
		fprintf(stderr, "ring_bench: BULK must be 1..%d and divide ELEMENTS\n", MAX_BULK);
		return 1;
	}
	unsigned int worker = rte_get_next_lcore(-1, 1, 0);
	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "ring_bench: needs two lcores (-l 0-1)\n");
		return 1;
	}
	ring = rte_ring_create("pktvec_handoff", size, SOCKET_ID_ANY,
			       RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ring == NULL) {
		fprintf(stderr, "ring_bench: rte_ring_create: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	sem_init(&go, 0, 0);
	sem_init(&done, 0, 0);
	rte_eal_remote_launch(consumer, NULL, worker);
	printf("lcores %u %u\n", rte_lcore_id(), worker);
	printf("ready\n");
	fflush(stdout);
	char line[64];
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "run", 3) != 0)
			continue;
		rc = run();
		printf("end\n");
		fflush(stdout);
	}
	quit = 1;
	sem_post(&go);
	rte_eal_mp_wait_lcore();
	rte_ring_free(ring);
	rte_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
