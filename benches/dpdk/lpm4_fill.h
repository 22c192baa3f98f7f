/* Route files into rte_lpm tables without rte_lpm_add, for the IPv4 LPM harnesses
 * (lpm4_bench.c, lpm4_count.c, graph_l3fwd.c).
 *
 * rte_lpm_add scans every rule of the prefix's length on each add, which takes minutes for
 * a million routes natively and hours under valgrind. lpm4_fill writes the same tbl24
 * entries and tbl8 groups that rte_lpm_add would leave (rte_lpm's own structs and entry
 * layout, DPDK 22.11) straight into an empty table; the lookups stay DPDK's, unchanged.
 * Routes must be sorted shortest first (lpm4_sort_by_len) so that longer prefixes overwrite
 * the shorter ones they lie in; a route file holds each prefix once.
 *
 *   size_t n;
 *   struct lpm4_route *r = lpm4_read_routes(f, &n);   // "a.b.c.d/len next_hop" lines
 *   lpm4_sort_by_len(r, n);
 *   long groups = lpm4_fill(lpm, r, n, tbl8s, NULL);   // -1: more than tbl8s groups
 */
#ifndef PKTVEC_LPM4_FILL_H
#define PKTVEC_LPM4_FILL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_lpm.h>

struct lpm4_route {
	uint32_t ip, nh;
	uint8_t len;
};

/* Reads "a.b.c.d/len next_hop" lines until the first that does not parse; host bits are
 * cleared. Returns NULL (and *n_out = the line's index) at a length above 32. */
static inline struct lpm4_route *lpm4_read_routes(FILE *f, size_t *n_out)
{
	size_t cap = 1 << 16, n = 0;
	struct lpm4_route *r = malloc(cap * sizeof(*r));
	unsigned a, b, c, d, len;
	uint32_t nh;
	while (r && fscanf(f, " %u.%u.%u.%u/%u %" SCNu32, &a, &b, &c, &d, &len, &nh) == 6) {
		if (len > 32) {
			free(r);
			*n_out = n;
			return NULL;
		}
		if (n == cap)
			r = realloc(r, (cap *= 2) * sizeof(*r));
		uint32_t ip = (a << 24) | (b << 16) | (c << 8) | d;
		r[n++] = (struct lpm4_route){len ? ip & ~(uint32_t)0 << (32 - len) : 0, nh,
					     (uint8_t)len};
	}
	*n_out = n;
	return r;
}

static inline int lpm4_by_len(const void *a, const void *b)
{
	const struct lpm4_route *x = a, *y = b;
	return (int)x->len - (int)y->len;
}

/* Shortest prefixes first, the order lpm4_fill needs. */
static inline void lpm4_sort_by_len(struct lpm4_route *r, size_t n)
{
	qsort(r, n, sizeof(*r), lpm4_by_len);
}

/* tbl8 groups the routes need: one per /24 that holds a prefix longer than /24. */
static inline uint32_t lpm4_groups_needed(const struct lpm4_route *r, size_t n)
{
	uint8_t *seen = calloc(1u << 21, 1); /* a bit per /24 */
	uint32_t groups = 0;
	for (size_t i = 0; seen && i < n; i++) {
		uint32_t s = r[i].ip >> 8;
		if (r[i].len > 24 && !(seen[s >> 3] & (1u << (s & 7)))) {
			seen[s >> 3] |= (uint8_t)(1u << (s & 7));
			groups++;
		}
	}
	free(seen);
	return groups;
}

static inline struct rte_lpm_tbl_entry lpm4_entry(uint32_t value, uint8_t depth, int group)
{
	struct rte_lpm_tbl_entry e = {0};
	e.next_hop = value;
	e.valid = 1;
	e.valid_group = group;
	e.depth = depth;
	return e;
}

/* Writes routes `r` (sorted by lpm4_sort_by_len) into the tbl24 and the first tbl8 groups
 * of an empty `lpm`; a route's stored value is value(nh), or its low 24 bits (rte_lpm's
 * next-hop width) when `value` is NULL. Returns the tbl8 groups used, or -1 when more
 * than `tbl8s` are needed. */
static inline long lpm4_fill(struct rte_lpm *lpm, const struct lpm4_route *r, size_t n,
			     uint32_t tbl8s, uint32_t (*value)(uint32_t nh))
{
	uint32_t groups = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t ip = r[i].ip, v = value ? value(r[i].nh) : r[i].nh & 0xffffff;
		if (r[i].len <= 24) {
			uint32_t first = ip >> 8, count = 1u << (24 - r[i].len);
			for (uint32_t s = first; s < first + count; s++)
				lpm->tbl24[s] = lpm4_entry(v, r[i].len, 0);
			continue;
		}
		struct rte_lpm_tbl_entry *t = &lpm->tbl24[ip >> 8];
		if (!(t->valid && t->valid_group)) {
			if (groups == tbl8s)
				return -1;
			struct rte_lpm_tbl_entry *g = &lpm->tbl8[(size_t)groups * 256];
			for (int s = 0; s < 256; s++) {
				g[s] = *t;
				g[s].valid_group = t->valid; /* rte_lpm: "in use" in tbl8 */
			}
			*t = lpm4_entry(groups++, 24, 1);
		}
		struct rte_lpm_tbl_entry *g = &lpm->tbl8[(size_t)t->next_hop * 256];
		uint32_t first = ip & 255, count = 1u << (32 - r[i].len);
		for (uint32_t s = first; s < first + count; s++)
			g[s] = lpm4_entry(v, r[i].len, 1);
	}
	return (long)groups;
}

#endif
