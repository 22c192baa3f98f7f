/* DPDK's own IPv4 forwarding graph (librte_graph + librte_node, as examples/l3fwd-graph wires
 * it) memory to memory on one lcore, for a like-for-like comparison with pktvec's l3fwd
 * (`pktvec-bench l3fwd-graph` writes the route and frame files, runs this and pktvec's graph
 * in the same sitting).
 *
 * Build:
 *   cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/graph_l3fwd.c -o /tmp/graph_l3fwd \
 *      $(pkg-config --libs libdpdk) -lrte_net_ring
 * Run:
 *   /tmp/graph_l3fwd --no-huge -m 1024 --no-pci -l 0 --file-prefix gl3 -- \
 *       ROUTES FRAMES PORTS SECS MBUFS TBL8S [serve] [add] [pktmbuf_alloc]
 *
 * ROUTES: one "a.b.c.d/len next_hop" per line, each prefix once; a route sends to port
 *   next_hop % PORTS (pktvec's l3fwd maps next hops to adjacencies the same way).
 * FRAMES: the pre-drawn packet stream, replayed in a loop: records of a 16-bit
 *   little-endian length and that many bytes (Ethernet frames without FCS).
 * PORTS: output ports (1..16); SECS: length of a timed run; MBUFS: mempool size;
 * TBL8S: tbl8 groups of the LPM (256 entries each).
 *
 * The graph: ethdev_rx-0-0 -> pkt_cls -> ip4_lookup -> ip4_rewrite -> ethdev_tx-<port>, with
 * pkt_drop behind pkt_cls (not IPv4), ip4_lookup (no route), ip4_rewrite (unknown next hop)
 * and ethdev_tx (ring full). Every node is librte_node's; the graph is made by
 * rte_node_eth_config and rte_graph_create from the patterns l3fwd-graph uses. Ports are
 * ring-backed ethdevs (rte_eth_from_rings, one rx and one tx ring each; only port 0's rx
 * queue has a node). The ring PMD reports no packet types, so ethdev_rx installs its rx
 * callback that reads each frame's EtherType into mbuf->packet_type, as on such NICs.
 *
 * The LPM. ip4_lookup reads its table through the first field of its node context, a
 * `struct rte_lpm *` that its init copies from the table it creates per socket
 * ("IPV4_L3FWD_LPM_<socket>", room for 1024 rules and 256 tbl8 groups), which is all that
 * rte_node_ip4_route_add can fill. So that the table holds every route, this harness
 * creates its own rte_lpm (max_rules = the routes, TBL8S groups) and, after rte_graph_create,
 * stores its address in the graph's ip4_lookup node context in place of the built-in one.
 * What that relies on (lib/node/ip4_lookup.c, DPDK 22.11): the context starts with the
 * table pointer and is followed by the int offset of the "rte_node_dynfield_priv1" mbuf
 * field; both scalar and SSE process functions read the table from there on every call.
 * Both fields are checked before the swap (the pointer must equal
 * rte_lpm_find_existing("IPV4_L3FWD_LPM_<graph socket>"), the offset must equal
 * rte_mbuf_dynfield_lookup's); the harness stops if either differs. The entries are what
 * rte_node_ip4_route_add would store: (RTE_NODE_IP4_LOOKUP_NEXT_REWRITE << 16) | next hop
 * id, with next hop id = port. By default they are written directly into the tbl24/tbl8
 * arrays rte_lpm_create allocated (as lpm4_bench.c's "fill": rte_lpm_add scans every rule
 * of a depth on each add, tens of seconds for 500k routes); with "add" through rte_lpm_add.
 * Next hop id p is given the rewrite of pktvec's adjacency p (rte_node_ip4_rewrite_add:
 * destination MAC 02:bb:00:00:p, source MAC 02:aa:00:00:p, 12 bytes) to port p.
 *
 * A turn of the loop, what is timed:
 *   1. input: 256 mbufs (RTE_GRAPH_BURST_SIZE) from the mempool as an rx driver takes them
 *      (rte_mempool_get_bulk, then data_off, port, ol_flags, packet_type and the lengths
 *      written; with "pktmbuf_alloc" rte_pktmbuf_alloc_bulk instead), each filled with the
 *      next frame of the stream (one 64-byte copy for frames of up to 64 bytes), enqueued
 *      on port 0's rx ring (pktvec's input allocates a buffer and copies a pre-generated
 *      frame per packet, the same work);
 *   2. rte_graph_walk: the rx node dequeues them through the ring PMD, the nodes forward,
 *      the tx nodes enqueue on the ports' tx rings through the ring PMD;
 *   3. output: every tx ring drained, the mbufs counted per port and freed in bulk
 *      (pktvec's tx node frees).
 * A timed run repeats turns until SECS have passed by the TSC, and prints the cycles of the
 * whole turns and, separately, those of step 1 (input) and of step 2 (inside
 * rte_graph_walk); step 3 is the rest. Three TSC reads a turn (256 packets) split them.
 *
 * Before "ready" the whole stream is sent through once (untimed) and "check" prints the
 * packets each port sent and the drops, which pktvec-bench compares with pktvec's l3fwd on
 * the same frames; every run ends with the mempool's free count, which must be back to
 * MBUFS (no mbuf lost or kept). With "serve" the harness then prints "ready" and does a
 * timed run each time it reads "run" on stdin (result lines, then "end"), until end of
 * input; without it, one timed run.
 *
 * Output lines (fields separated by spaces):
 *   info tsc_hz HZ routes N tbl8s T groups G ports P frames F frame_bytes B mbufs M build BUILD build_cycles_per_route C input INPUT
 *   lpm_swap ok builtin NAME
 *   check packets N drops D tx TX0 TX1 ...
 *   sample PORT HEX      (the first frame the port sent in the check pass, as it left)
 *   result packets N cycles C walk_cycles W input_cycles I drops D tx TX0 TX1 ...
 *   node NAME calls CALLS objs OBJS cycles CYCLES      (rte_graph's per-node stats, this run)
 *   mempool avail A size S
 *
 * Only DPDK's public API and structs are used, plus the two facts about ip4_lookup's node
 * context above (checked at run time).
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_graph.h>
#include <rte_graph_worker.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_memcpy.h>
#include <rte_mempool.h>
#include <rte_node_eth_api.h>
#include <rte_node_ip4_api.h>
#include <rte_ring.h>

#include "lpm4_fill.h"

#define BURST RTE_GRAPH_BURST_SIZE
#define MAX_PORTS 16
#define RING_SIZE 1024
#define MAX_NODES 64
#define SLOT 64
#define GRAPH_NAME "graph_l3fwd"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "graph_l3fwd: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* The frame stream: each frame in its own slot of `slot` bytes (a multiple of 64, zero
 * padded), replayed in a loop from `pos`. */
struct stream {
	uint8_t *arena;
	uint16_t *len;
	size_t n, pos, slot;
};

static struct rte_mempool *mp;
static struct rte_ring *rx_ring[MAX_PORTS], *tx_ring[MAX_PORTS];
static uint16_t n_ports;
static struct rte_graph *graph;
static struct stream s;
static uint64_t tx_count[MAX_PORTS];
/* The first frame each port sent during the check pass (hex), for comparison with pktvec's. */
static int sampling;
static char sample[MAX_PORTS][2 * RTE_MBUF_DEFAULT_DATAROOM + 1];

static void read_frames(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die("%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0, max_len = 0;
	uint8_t **frames = malloc(cap * sizeof(*frames));
	uint16_t *len = malloc(cap * sizeof(*len));
	uint8_t hdr[2];
	while (fread(hdr, 1, 2, f) == 2) {
		if (n == cap) {
			cap *= 2;
			frames = realloc(frames, cap * sizeof(*frames));
			len = realloc(len, cap * sizeof(*len));
		}
		len[n] = (uint16_t)(hdr[0] | hdr[1] << 8);
		frames[n] = malloc(len[n] ? len[n] : 1);
		if (fread(frames[n], 1, len[n], f) != len[n])
			die("%s: truncated record %zu", path, n);
		if (len[n] > max_len)
			max_len = len[n];
		n++;
	}
	fclose(f);
	if (n == 0)
		die("%s: no frames", path);
	if (max_len > RTE_MBUF_DEFAULT_DATAROOM)
		die("%s: a frame of %zu bytes does not fit an mbuf", path, max_len);
	s.slot = (max_len + SLOT - 1) / SLOT * SLOT;
	s.arena = aligned_alloc(SLOT, n * s.slot);
	memset(s.arena, 0, n * s.slot);
	for (size_t i = 0; i < n; i++) {
		memcpy(s.arena + i * s.slot, frames[i], len[i]);
		free(frames[i]);
	}
	free(frames);
	s.len = len;
	s.n = n;
	s.pos = 0;
}

/* Input: n fresh mbufs with the next n frames, onto port 0's rx ring. By default the mbufs
 * are taken as an rx driver takes them: rte_mempool_get_bulk (a free mbuf already has
 * refcnt 1, one segment and no next) and the fields an rx burst writes, all in the mbuf's
 * first cache line; with `pktmbuf_alloc`, rte_pktmbuf_alloc_bulk (rte_pktmbuf_reset of
 * every mbuf, which also writes its second line). */
static int pktmbuf_alloc;

static inline void refill(unsigned n)
{
	struct rte_mbuf *m[BURST];
	if (unlikely(pktmbuf_alloc ? rte_pktmbuf_alloc_bulk(mp, m, n) != 0
				   : rte_mempool_get_bulk(mp, (void **)m, n) != 0))
		die("mempool empty (%u free)", rte_mempool_avail_count(mp));
	size_t pos = s.pos;
	for (unsigned i = 0; i < n; i++) {
		if (!pktmbuf_alloc) {
			m[i]->data_off = RTE_PKTMBUF_HEADROOM;
			m[i]->port = 0;
			m[i]->ol_flags = 0;
			m[i]->packet_type = 0;
		}
		const uint8_t *src = s.arena + pos * s.slot;
		uint8_t *dst = rte_pktmbuf_mtod(m[i], uint8_t *);
		if (s.slot == SLOT)
			rte_mov64(dst, src);
		else
			rte_memcpy(dst, src, s.len[pos]);
		m[i]->data_len = s.len[pos];
		m[i]->pkt_len = s.len[pos];
		if (++pos == s.n)
			pos = 0;
	}
	s.pos = pos;
	if (unlikely(rte_ring_sp_enqueue_burst(rx_ring[0], (void **)m, n, NULL) != n))
		die("rx ring full");
}

/* Output: every tx ring emptied, its mbufs counted and freed. */
static inline void drain(void)
{
	struct rte_mbuf *m[BURST];
	for (uint16_t p = 0; p < n_ports; p++) {
		unsigned k;
		while ((k = rte_ring_sc_dequeue_burst(tx_ring[p], (void **)m, BURST, NULL)) > 0) {
			if (unlikely(sampling) && sample[p][0] == 0) {
				const uint8_t *d = rte_pktmbuf_mtod(m[0], const uint8_t *);
				for (unsigned i = 0; i < m[0]->data_len; i++)
					sprintf(sample[p] + 2 * i, "%02x", d[i]);
			}
			tx_count[p] += k;
			rte_pktmbuf_free_bulk(m, k);
		}
	}
}

/* rte_graph's per-node counters of every node of the graph. */
struct node_stats {
	int n;
	char name[MAX_NODES][RTE_NODE_NAMESIZE];
	uint64_t calls[MAX_NODES], objs[MAX_NODES], cycles[MAX_NODES];
};

static void node_snapshot(struct node_stats *st)
{
	struct rte_node *node;
	rte_graph_off_t off;
	rte_node_t count;
	st->n = 0;
	rte_graph_foreach_node(count, off, graph, node)
	{
		if (st->n == MAX_NODES)
			break;
		snprintf(st->name[st->n], RTE_NODE_NAMESIZE, "%s", node->name);
		st->calls[st->n] = node->total_calls;
		st->objs[st->n] = node->total_objs;
		st->cycles[st->n] = node->total_cycles;
		st->n++;
	}
}

/* The packets pkt_drop freed between two snapshots. */
static uint64_t drops_between(const struct node_stats *a, const struct node_stats *b)
{
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->name[i], "pkt_drop") == 0)
			return b->objs[i] - a->objs[i];
	return 0;
}

static void print_tx(const uint64_t *before)
{
	printf(" tx");
	for (uint16_t p = 0; p < n_ports; p++)
		printf(" %" PRIu64, tx_count[p] - before[p]);
	printf("\n");
}

static void print_mempool(void)
{
	printf("mempool avail %u size %u\n", rte_mempool_avail_count(mp), mp->size);
}

/* Sends exactly `packets` frames through (untimed) and prints the check line. */
static void check_pass(uint64_t packets)
{
	struct node_stats a, b;
	uint64_t before[MAX_PORTS];
	memcpy(before, tx_count, sizeof(before));
	node_snapshot(&a);
	sampling = 1;
	for (uint64_t done = 0; done < packets;) {
		unsigned n = packets - done < BURST ? (unsigned)(packets - done) : BURST;
		refill(n);
		rte_graph_walk(graph);
		drain();
		done += n;
	}
	sampling = 0;
	node_snapshot(&b);
	printf("check packets %" PRIu64 " drops %" PRIu64, packets, drops_between(&a, &b));
	print_tx(before);
	for (uint16_t p = 0; p < n_ports; p++)
		if (sample[p][0])
			printf("sample %u %s\n", p, sample[p]);
	print_mempool();
}

/* One timed run of whole turns for `secs` seconds. */
static void timed_run(double secs)
{
	struct node_stats a, b;
	uint64_t before[MAX_PORTS];
	const uint64_t budget = (uint64_t)(secs * (double)rte_get_tsc_hz());
	uint64_t packets = 0, walk = 0, input = 0, cycles;
	memcpy(before, tx_count, sizeof(before));
	node_snapshot(&a);
	const uint64_t t0 = rte_rdtsc();
	uint64_t turn = t0;
	for (;;) {
		refill(BURST);
		const uint64_t w = rte_rdtsc();
		rte_graph_walk(graph);
		const uint64_t w_end = rte_rdtsc();
		input += w - turn;
		walk += w_end - w;
		drain();
		packets += BURST;
		turn = rte_rdtsc();
		cycles = turn - t0;
		if (cycles >= budget)
			break;
	}
	node_snapshot(&b);
	printf("result packets %" PRIu64 " cycles %" PRIu64 " walk_cycles %" PRIu64
	       " input_cycles %" PRIu64 " drops %" PRIu64,
	       packets, cycles, walk, input, drops_between(&a, &b));
	print_tx(before);
	for (int i = 0; i < b.n; i++)
		printf("node %s calls %" PRIu64 " objs %" PRIu64 " cycles %" PRIu64 "\n", b.name[i],
		       b.calls[i] - a.calls[i], b.objs[i] - a.objs[i], b.cycles[i] - a.cycles[i]);
	print_mempool();
	fflush(stdout);
}

/* What ip4_lookup finds in the table for a next hop id (rte_node_ip4_route_add's value). */
static uint32_t lookup_value(uint32_t nh)
{
	return (((uint32_t)RTE_NODE_IP4_LOOKUP_NEXT_REWRITE << 16) | (nh % n_ports)) & 0xffffff;
}

/* Puts `lpm` in place of the built-in table in the graph's ip4_lookup node context, after
 * checking that the context holds what ip4_lookup.c puts there (see the header). */
static void swap_lpm(struct rte_lpm *lpm)
{
	struct rte_node *node = rte_graph_node_get_by_name(GRAPH_NAME, "ip4_lookup");
	if (!node)
		die("no ip4_lookup node in the graph");
	char name[RTE_LPM_NAMESIZE];
	snprintf(name, sizeof(name), "IPV4_L3FWD_LPM_%d", graph->socket);
	struct rte_lpm *builtin = rte_lpm_find_existing(name);
	int dyn = rte_mbuf_dynfield_lookup("rte_node_dynfield_priv1", NULL);
	struct rte_lpm *in_ctx;
	int off_in_ctx;
	memcpy(&in_ctx, node->ctx, sizeof(in_ctx));
	memcpy(&off_in_ctx, node->ctx + sizeof(in_ctx), sizeof(off_in_ctx));
	if (builtin == NULL || in_ctx != builtin || dyn < 0 || off_in_ctx != dyn)
		die("ip4_lookup's node context is not {struct rte_lpm *%s, int priv1 offset %d} "
		    "(found %p, %d; %s at %p): the table cannot be replaced in this DPDK",
		    name, dyn, (void *)in_ctx, off_in_ctx, name, (void *)builtin);
	memcpy(node->ctx, &lpm, sizeof(lpm));
	printf("lpm_swap ok builtin %s\n", name);
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		die("rte_eal_init failed");
	argc -= ret;
	argv += ret;
	if (argc < 7)
		die("usage: graph_l3fwd <EAL args> -- ROUTES FRAMES PORTS SECS MBUFS TBL8S [serve] [add] "
		    "[pktmbuf_alloc]");
	const char *routes_path = argv[1], *frames_path = argv[2];
	int ports = atoi(argv[3]);
	double secs = atof(argv[4]);
	unsigned mbufs = (unsigned)atoi(argv[5]);
	uint32_t tbl8s = (uint32_t)atoi(argv[6]);
	int serve = 0, add = 0;
	for (int i = 7; i < argc; i++) {
		serve |= strcmp(argv[i], "serve") == 0;
		add |= strcmp(argv[i], "add") == 0;
		pktmbuf_alloc |= strcmp(argv[i], "pktmbuf_alloc") == 0;
	}
	if (ports < 1 || ports > MAX_PORTS)
		die("PORTS must be 1..%d", MAX_PORTS);
	n_ports = (uint16_t)ports;
	const int socket = (int)rte_socket_id();

	/* As l3fwd-graph: a cache-line private area (rte_node_eth_config's minimum). */
	mp = rte_pktmbuf_pool_create("gl3_mbufs", mbufs, 256, RTE_CACHE_LINE_SIZE,
				     RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (!mp)
		die("rte_pktmbuf_pool_create: %s", rte_strerror(rte_errno));

	struct rte_node_ethdev_config conf[MAX_PORTS];
	for (uint16_t p = 0; p < n_ports; p++) {
		char name[32];
		snprintf(name, sizeof(name), "gl3_rx%u", p);
		rx_ring[p] = rte_ring_create(name, RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "gl3_tx%u", p);
		tx_ring[p] = rte_ring_create(name, RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!rx_ring[p] || !tx_ring[p])
			die("rte_ring_create: %s", rte_strerror(rte_errno));
		snprintf(name, sizeof(name), "gl3_port%u", p);
		int id = rte_eth_from_rings(name, &rx_ring[p], 1, &tx_ring[p], 1, socket);
		if (id != p)
			die("rte_eth_from_rings gave port %d, expected %u (other ports present?)", id, p);
		struct rte_eth_conf ec;
		memset(&ec, 0, sizeof(ec));
		if (rte_eth_dev_configure(p, 1, 1, &ec) < 0 ||
		    rte_eth_rx_queue_setup(p, 0, RING_SIZE, socket, NULL, mp) < 0 ||
		    rte_eth_tx_queue_setup(p, 0, RING_SIZE, socket, NULL) < 0)
			die("port %u: configuration failed", p);
		conf[p] = (struct rte_node_ethdev_config){
			.port_id = p,
			.num_rx_queues = p == 0 ? 1 : 0, /* one input, as pktvec's graph */
			.num_tx_queues = 1,
			.mp = &mp,
			.mp_count = 1,
		};
	}
	if ((ret = rte_node_eth_config(conf, n_ports, 1)) < 0)
		die("rte_node_eth_config: %d", ret);
	for (uint16_t p = 0; p < n_ports; p++)
		if (rte_eth_dev_start(p) < 0)
			die("rte_eth_dev_start %u failed", p);

	/* l3fwd-graph's patterns; pkt_cls comes in as ethdev_rx's next node. */
	const char *patterns[] = {"ethdev_rx-0-0", "ip4*", "ethdev_tx-*", "pkt_drop"};
	struct rte_graph_param gp;
	memset(&gp, 0, sizeof(gp));
	gp.socket_id = socket;
	gp.nb_node_patterns = RTE_DIM(patterns);
	gp.node_patterns = patterns;
	rte_graph_t gid = rte_graph_create(GRAPH_NAME, &gp);
	if (gid == RTE_GRAPH_ID_INVALID)
		die("rte_graph_create: %s", rte_strerror(rte_errno));
	graph = rte_graph_lookup(GRAPH_NAME);
	if (!graph)
		die("rte_graph_lookup failed");

	for (uint16_t p = 0; p < n_ports; p++) {
		uint8_t rw[2 * RTE_ETHER_ADDR_LEN] = {0x02, 0xbb, 0, 0, p >> 8, p & 0xff,
						      0x02, 0xaa, 0, 0, p >> 8, p & 0xff};
		if ((ret = rte_node_ip4_rewrite_add(p, rw, sizeof(rw), p)) < 0)
			die("rte_node_ip4_rewrite_add %u: %d", p, ret);
	}

	size_t n_routes;
	FILE *rf = fopen(routes_path, "r");
	if (!rf)
		die("%s: %s", routes_path, strerror(errno));
	struct lpm4_route *routes = lpm4_read_routes(rf, &n_routes);
	fclose(rf);
	if (!routes)
		die("%s: route %zu: bad prefix length", routes_path, n_routes);
	struct rte_lpm_config lc = {.max_rules = (uint32_t)n_routes + 16,
				    .number_tbl8s = tbl8s,
				    .flags = 0};
	struct rte_lpm *lpm = rte_lpm_create("gl3_lpm", socket, &lc);
	if (!lpm)
		die("rte_lpm_create: %s", rte_strerror(rte_errno));
	long groups = 0;
	const uint64_t t0 = rte_rdtsc();
	if (add) {
		for (size_t i = 0; i < n_routes; i++)
			if ((ret = rte_lpm_add(lpm, routes[i].ip, routes[i].len,
					       lookup_value(routes[i].nh))) < 0)
				die("rte_lpm_add route %zu: %d", i, ret);
	} else {
		/* Shorter prefixes first, so that longer ones overwrite them. */
		lpm4_sort_by_len(routes, n_routes);
		groups = lpm4_fill(lpm, routes, n_routes, tbl8s, lookup_value);
		if (groups < 0)
			die("more than %" PRIu32 " tbl8 groups needed", tbl8s);
	}
	const uint64_t build = rte_rdtsc() - t0;
	free(routes);
	swap_lpm(lpm);

	read_frames(frames_path);
	printf("info tsc_hz %" PRIu64 " routes %zu tbl8s %" PRIu32 " groups %ld ports %u frames %zu"
	       " frame_bytes %zu mbufs %u build %s build_cycles_per_route %.1f input %s\n",
	       rte_get_tsc_hz(), n_routes, tbl8s, add ? -1L : groups, n_ports, s.n, s.slot, mbufs,
	       add ? "rte_lpm_add" : "fill", (double)build / (double)(n_routes ? n_routes : 1),
	       pktmbuf_alloc ? "rte_pktmbuf_alloc_bulk" : "rte_mempool_get_bulk");

	check_pass(s.n);
	if (serve) {
		char line[64];
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			if (strncmp(line, "run", 3) != 0)
				continue;
			timed_run(secs);
			printf("end\n");
			fflush(stdout);
		}
	} else {
		timed_run(secs);
	}

	for (uint16_t p = 0; p < n_ports; p++)
		rte_eth_dev_stop(p);
	rte_graph_destroy(gid);
	rte_lpm_free(lpm);
	rte_eal_cleanup();
	return 0;
}
