/*
 * DPDK's P4 software pipeline (SWX, rte_swx_pipeline) run memory to memory: the pipeline
 * comparisons (`pktvec-bench`, bench/src/swx.rs) build and run it.
 *
 * Modes (after the EAL arguments and `--`):
 *
 *   codegen SPEC OUT_C
 *       Translates a pipeline spec into C (rte_swx_pipeline_codegen). On an error prints
 *       "codegen error: line L: MESSAGE" on stderr and exits 1 (line 0: the error was found
 *       after parsing, when the pipeline was configured; the message names the part).
 *       The C file is compiled into a shared object with DPDK's internal pipeline headers
 *       (see README.md).
 *
 *   serve --lib LIB.so --iospec IO [--table NAME=ENTRIES]... [--direct] [--burst-instr K]
 *         --packets N
 *       Creates the mbuf pools that IO names, builds the pipeline from LIB.so and IO
 *       (rte_swx_pipeline_build_from_lib), loads each table's entries file, commits once,
 *       prints its info lines and "ready". Then, for each line "run" on stdin: runs the
 *       pipeline untimed for a quarter of N packets (warm-up), then calls
 *       rte_swx_pipeline_run(p, K) (K = 1000 unless --burst-instr) until input port 0 has
 *       received at least N more packets, and prints
 *           packets P cycles C      (P input packets in C TSC cycles)
 *           out_packets O           (IO's output ports)
 *           drop_packets D          (the port the pipeline adds after them: `drop`)
 *           end
 *       Exits at end of input. IO's input port should be a source with `loop 0` (forever)
 *       and its output ports sinks with `file none`.
 *
 *   once --lib LIB.so --iospec IO [--table NAME=ENTRIES]... [--direct]
 *       For equivalence checks: the same set-up, then runs the pipeline until no input port
 *       has advanced for a long while (IO's sources should have `loop 1`), flushes, frees the
 *       pipeline (so that sink ports close their pcap files) and prints
 *           in X out Y drop Z
 *
 * Entries go in through the control API (rte_swx_ctl_pipeline_table_entry_add, then one
 * commit), as DPDK's own pipeline application does. Its add looks every new entry up in a
 * linked list of the pending ones, so loading n entries takes O(n^2) time: 16K entries take
 * about a second, 1M would take hours. With --direct, the entries of the tables that have
 * an incremental add (the exact-match tables) are parsed by the control API but added, after
 * the commit, with the table's own add operation straight into the table object the
 * pipeline uses: the same operation the commit would call for each entry, minus the list.
 * The other tables (wildcard/lpm, rebuilt from the whole list on a commit) and `default`
 * lines still go through the control API.
 *
 * Info lines of serve and once, before "ready" (serve) or the result (once):
 *   tsc_hz HZ
 *   entries N          table entries added (default entries not counted)
 *   load ctl|direct
 *   mem_bytes B        DPDK heap (rte_malloc) bytes the data path's tables and arrays hold:
 *                      the exact-match tables (allocated at their full `size` when built),
 *                      the wildcard (ACL) tables as built from their entries, selector and
 *                      learner tables, register and meter arrays. The mbuf pools are created
 *                      before and not counted.
 *   ctl_mem_bytes B    DPDK heap bytes of the control API's shadow copies of the tables that
 *                      have an incremental add (it swaps copies on each commit).
 *   libc_bytes B       libc heap (mallinfo2 uordblks) growth over the set-up: the pipeline's
 *                      control structures and the control API's list of every entry it
 *                      loaded (not those loaded --direct).
 *   ports_in N / ports_out N
 *
 * Entries files: one rte_swx_ctl_pipeline_table_entry_read line per entry
 * ("match V1 V2 ... [priority P] action NAME ARG VAL ..."), comments and blank lines
 * allowed; a line "default action NAME ARG VAL ..." sets the table's default entry
 * (only allowed when the spec's default_action is not const).
 *
 * Build: cc -O3 $(pkg-config --cflags libdpdk) benches/dpdk/swx_bench.c \
 *            -o /tmp/swx_bench $(pkg-config --libs libdpdk)
 * Run:   /tmp/swx_bench --no-huge -m 512 --no-pci -l 0 --log-level=1 -- MODE ...
 */
#define _GNU_SOURCE
/* The SWX pipeline and control API is still marked experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>
#include <rte_swx_table.h>

#define MAX_TABLES 64
#define MAX_POOLS 16
#define LINE_MAX_LEN 4096
/* The source port reads at most this many packets when its `packets` argument is 0. */
#define SOURCE_PKTS_DEFAULT 1024
/* mbufs beyond the ones the source ports keep their traces in: packets in flight. */
#define POOL_SLACK 4096

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---------------------------------------------------------------------------------------
 * codegen
 */

static int do_codegen(const char *spec_path, const char *out_path)
{
	FILE *spec = fopen(spec_path, "r");
	if (spec == NULL)
		die("cannot open %s: %s", spec_path, strerror(errno));
	FILE *out = fopen(out_path, "w");
	if (out == NULL)
		die("cannot create %s: %s", out_path, strerror(errno));
	uint32_t err_line = 0;
	const char *err_msg = NULL;
	int status = rte_swx_pipeline_codegen(spec, out, &err_line, &err_msg);
	fclose(spec);
	fclose(out);
	if (status) {
		fprintf(stderr, "codegen error: line %u: %s (%s)\n", err_line,
			err_msg ? err_msg : "unknown error", strerror(-status));
		remove(out_path);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * I/O spec: the mbuf pools it names (the pipeline looks them up by name at build time)
 */

struct pool_need {
	char name[RTE_MEMPOOL_NAMESIZE];
	uint64_t mbufs; /* mbufs the source ports keep their traces in */
};

static uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* Number of packets in a pcap file (the classic format; both byte orders). */
static uint64_t pcap_count(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		die("iospec: cannot open pcap %s: %s", path, strerror(errno));
	uint8_t hdr[24];
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr))
		die("iospec: %s: not a pcap file (short header)", path);
	uint32_t magic;
	memcpy(&magic, hdr, 4);
	int swap;
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
		swap = 0;
	else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
		swap = 1;
	else
		die("iospec: %s: not a pcap file (magic %08x; pcapng is not supported)", path,
		    magic);
	uint64_t n = 0;
	uint8_t rec[16];
	while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t incl = rd32(rec + 8, swap);
		if (fseek(f, incl, SEEK_CUR) != 0)
			break;
		n++;
	}
	fclose(f);
	return n;
}

static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *t = strtok_r(line, " \f\n\r\t\v", &save); t != NULL;
	     t = strtok_r(NULL, " \f\n\r\t\v", &save)) {
		if (t[0] == '#' || t[0] == ';' || (t[0] == '/' && t[1] == '/'))
			break;
		if (n == max)
			break;
		tok[n++] = t;
	}
	return n;
}

static struct pool_need *pool_need_get(struct pool_need *pools, int *n_pools, const char *name)
{
	for (int i = 0; i < *n_pools; i++)
		if (strcmp(pools[i].name, name) == 0)
			return &pools[i];
	if (*n_pools == MAX_POOLS)
		die("iospec: more than %d mempools", MAX_POOLS);
	if (strlen(name) >= RTE_MEMPOOL_NAMESIZE)
		die("iospec: mempool name %s too long", name);
	struct pool_need *p = &pools[(*n_pools)++];
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->mbufs = 0;
	return p;
}

/* Creates every mempool the iospec names ("... mempool NAME ..."), each big enough for the
 * packets its source ports load plus POOL_SLACK in flight. */
static void create_pools(const char *iospec_path)
{
	FILE *f = fopen(iospec_path, "r");
	if (f == NULL)
		die("cannot open %s: %s", iospec_path, strerror(errno));
	struct pool_need pools[MAX_POOLS];
	int n_pools = 0;
	char line[LINE_MAX_LEN];
	while (fgets(line, sizeof(line), f)) {
		char *tok[64];
		int n = tokenize(line, tok, 64);
		for (int i = 0; i + 1 < n; i++) {
			if (strcmp(tok[i], "mempool") != 0)
				continue;
			struct pool_need *p = pool_need_get(pools, &n_pools, tok[i + 1]);
			/* port in ID source mempool NAME file PCAP loop L packets M */
			if (n == 12 && strcmp(tok[3], "source") == 0 && i == 4 &&
			    strcmp(tok[6], "file") == 0 && strcmp(tok[10], "packets") == 0) {
				uint64_t have = pcap_count(tok[7]);
				uint64_t max = strtoull(tok[11], NULL, 0);
				if (max == 0)
					max = SOURCE_PKTS_DEFAULT;
				p->mbufs += have < max ? have : max;
			}
		}
	}
	fclose(f);
	for (int i = 0; i < n_pools; i++) {
		uint64_t want = pools[i].mbufs + POOL_SLACK;
		/* rte_mempool is most memory-efficient at 2^q - 1 elements. */
		uint64_t n = 1;
		while (n < want + 1)
			n <<= 1;
		struct rte_mempool *mp = rte_pktmbuf_pool_create(
			pools[i].name, (unsigned int)(n - 1), 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
			(int)rte_socket_id());
		if (mp == NULL)
			die("rte_pktmbuf_pool_create(%s, %" PRIu64 " mbufs) failed: %s (raise -m)",
			    pools[i].name, n - 1, rte_strerror(rte_errno));
	}
}

/* ---------------------------------------------------------------------------------------
 * Pipeline set-up shared by serve and once
 */

struct table_arg {
	char name[RTE_SWX_NAME_SIZE];
	const char *file;
	/* Filled in by do_setup: */
	uint32_t id;
	struct rte_swx_table_ops ops;
	int direct; /* regular entries go straight into the table object */
};

struct setup {
	struct rte_swx_pipeline *p;
	struct rte_swx_ctl_pipeline *ctl;
	uint32_t n_ports_in, n_ports_out;
	uint64_t entries;
	uint64_t mem_bytes, ctl_mem_bytes;
	int64_t libc_bytes;
};

static uint64_t heap_in_use(void)
{
	uint64_t total = 0;
	for (unsigned int i = 0; i < rte_socket_count(); i++) {
		struct rte_malloc_socket_stats s;
		if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &s) == 0)
			total += s.heap_allocsz_bytes;
	}
	return total;
}

/* The control API has no public way to free an entry that
 * rte_swx_ctl_pipeline_table_entry_read returned; its parts are separate libc blocks. */
static void entry_free(struct rte_swx_table_entry *e)
{
	if (e == NULL)
		return;
	free(e->key);
	free(e->key_mask);
	free(e->action_data);
	free(e);
}

/* Whether `action_id` may be a regular entry's action in table `table_id`: the check the
 * control API makes, which the direct path has to make itself. */
static int action_allowed(struct rte_swx_pipeline *p, uint32_t table_id, uint64_t action_id)
{
	struct rte_swx_ctl_table_info info;
	if (rte_swx_ctl_table_info_get(p, table_id, &info))
		return 0;
	for (uint32_t i = 0; i < info.n_actions; i++) {
		struct rte_swx_ctl_table_action_info a;
		if (rte_swx_ctl_table_action_info_get(p, table_id, i, &a) == 0 &&
		    a.action_id == action_id)
			return a.action_is_for_table_entries;
	}
	return 0;
}

/*
 * One pass over a table's entries file. Pass 0 (before the commit) hands the control API
 * every line, or only the `default` lines of a direct table; pass 1 (after the commit) adds
 * a direct table's regular lines with the table's own add operation into the table object
 * the pipeline uses (ts). Returns the regular entries added.
 */
static uint64_t load_entries(struct setup *s, const struct table_arg *t, int pass,
			     struct rte_swx_table_state *ts)
{
	FILE *f = fopen(t->file, "r");
	if (f == NULL)
		die("cannot open %s: %s", t->file, strerror(errno));
	char line[LINE_MAX_LEN];
	uint64_t n = 0;
	for (uint32_t line_no = 1; fgets(line, sizeof(line), f); line_no++) {
		const char *l = line;
		while (*l == ' ' || *l == '\t')
			l++;
		int is_default = strncmp(l, "default", 7) == 0 && (l[7] == ' ' || l[7] == '\t');
		if (is_default)
			l += 7;
		int via_ctl = !t->direct || is_default;
		if (via_ctl != (pass == 0))
			continue;
		int blank = 0;
		struct rte_swx_table_entry *e =
			rte_swx_ctl_pipeline_table_entry_read(s->ctl, t->name, l, &blank);
		if (e == NULL) {
			if (blank && !is_default)
				continue;
			die("%s:%u: table %s: entry not accepted (unknown table or action, wrong "
			    "number of match fields or args, arg names out of order, or a bad "
			    "number): %s",
			    t->file, line_no, t->name, line);
		}
		int status;
		const char *what;
		if (is_default) {
			what = "default_entry_add";
			status = rte_swx_ctl_pipeline_table_default_entry_add(s->ctl, t->name, e);
		} else if (!t->direct) {
			what = "entry_add";
			status = rte_swx_ctl_pipeline_table_entry_add(s->ctl, t->name, e);
		} else {
			what = "the table's add";
			status = action_allowed(s->p, t->id, e->action_id)
					 ? t->ops.add(ts[t->id].obj, e)
					 : -EINVAL;
		}
		entry_free(e);
		if (status)
			die("%s:%u: table %s: %s failed (%s): %s", t->file, line_no, t->name, what,
			    strerror(-status), line);
		if (!is_default)
			n++;
	}
	fclose(f);
	return n;
}

/* Finds table `t` and decides how its entries go in. */
static void table_resolve(struct rte_swx_pipeline *p, uint32_t n_tables, struct table_arg *t,
			  int direct)
{
	for (uint32_t i = 0; i < n_tables; i++) {
		struct rte_swx_ctl_table_info info;
		if (rte_swx_ctl_table_info_get(p, i, &info) == 0 && strcmp(info.name, t->name) == 0) {
			int is_stub = 0;
			t->id = i;
			memset(&t->ops, 0, sizeof(t->ops));
			if (rte_swx_ctl_table_ops_get(p, i, &t->ops, &is_stub))
				die("table %s: rte_swx_ctl_table_ops_get failed", t->name);
			/* Only tables with an incremental add (the exact-match ones) can take entries
			 * directly; the wildcard (ACL) tables are rebuilt from the whole list on a
			 * commit, which the control API does. */
			t->direct = direct && !is_stub && t->ops.add != NULL;
			return;
		}
	}
	die("--table %s: the pipeline has no such table", t->name);
}

/*
 * Builds the pipeline and loads the entries. The DPDK heap is read four times: before the
 * build (h0), after it (h1: the pipeline's tables, created at their full size, and register
 * and meter arrays), after creating the control API (h2: it keeps a second, shadow copy of
 * every table that has an incremental add, and swaps copies on each commit), and at the end
 * (h3). mem_bytes = (h3 - h0) - (h2 - h1): what the data path's tables and arrays hold;
 * ctl_mem_bytes = h2 - h1: the control API's shadow copies.
 */
static void do_setup(struct setup *s, const char *lib, const char *iospec_path,
		     struct table_arg *tables, int n_tables, int direct)
{
	memset(s, 0, sizeof(*s));
	create_pools(iospec_path);

	FILE *io = fopen(iospec_path, "r");
	if (io == NULL)
		die("cannot open %s: %s", iospec_path, strerror(errno));
	uint64_t h0 = heap_in_use();
	struct mallinfo2 mi0 = mallinfo2();

	(void)dlerror();
	int status = rte_swx_pipeline_build_from_lib(&s->p, "PIPELINE0", lib, io,
						     (int)rte_socket_id());
	fclose(io);
	if (status) {
		const char *dl = dlerror();
		die("rte_swx_pipeline_build_from_lib(%s, %s) failed: %s%s%s\n"
		    "(EIO: the library did not load; EINVAL: a bad I/O spec line (port syntax, "
		    "unknown mempool or ring, unreadable pcap), a symbol missing from the "
		    "library, or a library built from another spec)",
		    lib, iospec_path, strerror(-status), dl ? "; dlerror: " : "", dl ? dl : "");
	}
	uint64_t h1 = heap_in_use();
	s->ctl = rte_swx_ctl_pipeline_create(s->p);
	if (s->ctl == NULL)
		die("rte_swx_ctl_pipeline_create failed");
	uint64_t h2 = heap_in_use();

	struct rte_swx_ctl_pipeline_info info;
	if (rte_swx_ctl_pipeline_info_get(s->p, &info))
		die("rte_swx_ctl_pipeline_info_get failed");
	for (int i = 0; i < n_tables; i++)
		table_resolve(s->p, info.n_tables, &tables[i], direct);

	for (int i = 0; i < n_tables; i++)
		s->entries += load_entries(s, &tables[i], 0, NULL);
	status = rte_swx_ctl_pipeline_commit(s->ctl, 1);
	if (status)
		die("rte_swx_ctl_pipeline_commit failed: %s (a table over its size?)",
		    strerror(-status));
	/* After the commit (and never another one, which would swap back to the control API's
	 * copies, which lack these entries): the table objects the pipeline now uses. */
	struct rte_swx_table_state *ts = NULL;
	if (rte_swx_pipeline_table_state_get(s->p, &ts) || ts == NULL)
		die("rte_swx_pipeline_table_state_get failed");
	for (int i = 0; i < n_tables; i++)
		if (tables[i].direct)
			s->entries += load_entries(s, &tables[i], 1, ts);

	struct mallinfo2 mi1 = mallinfo2();
	uint64_t h3 = heap_in_use();
	s->ctl_mem_bytes = h2 - h1;
	s->mem_bytes = (h3 - h0) - (h2 - h1);
	s->libc_bytes = (int64_t)mi1.uordblks - (int64_t)mi0.uordblks;

	s->n_ports_in = info.n_ports_in;
	s->n_ports_out = info.n_ports_out;
	if (s->n_ports_in == 0 || s->n_ports_out == 0)
		die("the I/O spec needs at least one input and one output port");

	printf("tsc_hz %" PRIu64 "\n", rte_get_tsc_hz());
	printf("entries %" PRIu64 "\n", s->entries);
	printf("load %s\n", direct ? "direct" : "ctl");
	printf("mem_bytes %" PRIu64 "\n", s->mem_bytes);
	printf("ctl_mem_bytes %" PRIu64 "\n", s->ctl_mem_bytes);
	printf("libc_bytes %" PRId64 "\n", s->libc_bytes);
	printf("ports_in %u\n", s->n_ports_in);
	printf("ports_out %u\n", s->n_ports_out);
}

static uint64_t in_packets(struct rte_swx_pipeline *p, uint32_t port)
{
	struct rte_swx_port_in_stats st;
	rte_swx_ctl_pipeline_port_in_stats_read(p, port, &st);
	return st.n_pkts;
}

static uint64_t all_in_packets(const struct setup *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->n_ports_in; i++)
		n += in_packets(s->p, i);
	return n;
}

/* Packets an output port took: a sink counts what it frees or writes as dropped, other
 * ports count what they sent as n_pkts and what they could not send as n_pkts_drop. */
static uint64_t out_packets(struct rte_swx_pipeline *p, uint32_t port)
{
	struct rte_swx_port_out_stats st;
	rte_swx_ctl_pipeline_port_out_stats_read(p, port, &st);
	return st.n_pkts + st.n_pkts_drop;
}

static void out_totals(const struct setup *s, uint64_t *out, uint64_t *drop)
{
	*out = 0;
	for (uint32_t i = 0; i + 1 < s->n_ports_out; i++)
		*out += out_packets(s->p, i);
	*drop = out_packets(s->p, s->n_ports_out - 1);
	if (s->n_ports_out == 1) { /* no separate drop port: all of it is output */
		*out = *drop;
		*drop = 0;
	}
}

/* ---------------------------------------------------------------------------------------
 * serve
 */

/* Runs until input port 0 advanced by `n` packets; returns the packets it advanced by. */
static uint64_t run_packets(struct rte_swx_pipeline *p, uint32_t k, uint64_t n)
{
	uint64_t start = in_packets(p, 0), now = start, last = start;
	uint64_t idle = 0;
	while (now - start < n) {
		rte_swx_pipeline_run(p, k);
		now = in_packets(p, 0);
		if (now == last) {
			if (++idle == 1000000)
				die("input port 0 stopped at %" PRIu64 " packets (its source needs "
				    "`loop 0`, or the mempool ran dry)",
				    now);
		} else {
			idle = 0;
			last = now;
		}
	}
	return now - start;
}

static int do_serve(const struct setup *s, uint32_t burst_instr, uint64_t packets)
{
	printf("ready\n");
	fflush(stdout);
	char line[256];
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "run", 3) != 0)
			continue;
		run_packets(s->p, burst_instr, packets / 4 + 1);
		uint64_t out0, drop0, out1, drop1;
		out_totals(s, &out0, &drop0);
		uint64_t t0 = rte_rdtsc_precise();
		uint64_t got = run_packets(s->p, burst_instr, packets);
		uint64_t t1 = rte_rdtsc_precise();
		out_totals(s, &out1, &drop1);
		printf("packets %" PRIu64 " cycles %" PRIu64 "\n", got, t1 - t0);
		printf("out_packets %" PRIu64 "\n", out1 - out0);
		printf("drop_packets %" PRIu64 "\n", drop1 - drop0);
		printf("end\n");
		fflush(stdout);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * once
 */

static int do_once(struct setup *s)
{
	/* Until no input port has advanced over 2^20 rte_swx_pipeline_run calls: by then every
	 * pipeline thread has finished the packet it held. */
	uint64_t last = all_in_packets(s), idle = 0;
	while (idle < (1u << 20)) {
		rte_swx_pipeline_run(s->p, 64);
		uint64_t now = all_in_packets(s);
		if (now == last) {
			idle++;
		} else {
			idle = 0;
			last = now;
		}
	}
	rte_swx_pipeline_flush(s->p);
	uint64_t in = all_in_packets(s), out, drop;
	out_totals(s, &out, &drop);
	/* Not rte_swx_ctl_pipeline_free: the control API shares the wildcard tables' objects
	 * with the pipeline, so freeing both would free those twice. */
	rte_swx_pipeline_free(s->p); /* closes the sink ports' pcap files */
	printf("in %" PRIu64 " out %" PRIu64 " drop %" PRIu64 "\n", in, out, drop);
	fflush(stdout);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * main
 */

static void usage(void)
{
	die("usage: swx_bench <EAL args> -- codegen SPEC OUT_C\n"
	    "       swx_bench <EAL args> -- serve --lib LIB.so --iospec IO "
	    "[--table NAME=FILE]... [--direct] [--burst-instr K] --packets N\n"
	    "       swx_bench <EAL args> -- once --lib LIB.so --iospec IO [--table NAME=FILE]... "
	    "[--direct]");
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		die("rte_eal_init failed: %s", rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	if (argc < 2)
		usage();
	const char *mode = argv[1];
	if (strcmp(mode, "codegen") == 0) {
		if (argc != 4)
			usage();
		return do_codegen(argv[2], argv[3]);
	}
	if (strcmp(mode, "serve") != 0 && strcmp(mode, "once") != 0)
		usage();

	const char *lib = NULL, *iospec = NULL;
	static struct table_arg tables[MAX_TABLES];
	int n_tables = 0;
	uint32_t burst_instr = 1000;
	uint64_t packets = 0;
	int direct = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--direct") == 0) {
			direct = 1;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (strcmp(a, "--lib") == 0) {
			lib = v;
		} else if (strcmp(a, "--iospec") == 0) {
			iospec = v;
		} else if (strcmp(a, "--table") == 0) {
			const char *eq = strchr(v, '=');
			if (eq == NULL || eq == v || (size_t)(eq - v) >= RTE_SWX_NAME_SIZE ||
			    n_tables == MAX_TABLES)
				die("--table wants NAME=ENTRIES_FILE (at most %d): %s", MAX_TABLES, v);
			memcpy(tables[n_tables].name, v, (size_t)(eq - v));
			tables[n_tables].name[eq - v] = 0;
			tables[n_tables].file = eq + 1;
			n_tables++;
		} else if (strcmp(a, "--burst-instr") == 0) {
			burst_instr = (uint32_t)strtoul(v, NULL, 0);
		} else if (strcmp(a, "--packets") == 0) {
			packets = strtoull(v, NULL, 0);
		} else {
			usage();
		}
	}
	if (lib == NULL || iospec == NULL || burst_instr == 0)
		usage();
	if (strcmp(mode, "serve") == 0 && packets == 0)
		usage();

	struct setup s;
	do_setup(&s, lib, iospec, tables, n_tables, direct);
	if (strcmp(mode, "once") == 0)
		return do_once(&s);
	return do_serve(&s, burst_instr, packets);
}
