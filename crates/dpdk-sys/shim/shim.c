/* See shim.h: exported wrappers around DPDK's static inline fast-path functions. */
#include <rte_config.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_ring.h>
#include <rte_eth_ring.h>
#include <rte_thash.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <stddef.h>
#include "shim.h"

uint16_t pktvec_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id,
                                 struct rte_mbuf **rx_pkts, uint16_t nb_pkts)
{
	return rte_eth_rx_burst(port_id, queue_id, rx_pkts, nb_pkts);
}

uint16_t pktvec_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id,
                                 struct rte_mbuf **tx_pkts, uint16_t nb_pkts)
{
	return rte_eth_tx_burst(port_id, queue_id, tx_pkts, nb_pkts);
}

int pktvec_rte_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs,
                                  unsigned int count)
{
	return rte_pktmbuf_alloc_bulk(pool, mbufs, count);
}

uint16_t pktvec_rte_pktmbuf_data_room_size(struct rte_mempool *mp)
{
	return rte_pktmbuf_data_room_size(mp);
}

uint16_t pktvec_rte_pktmbuf_priv_size(struct rte_mempool *mp)
{
	return rte_pktmbuf_priv_size(mp);
}

int pktvec_rte_errno(void)
{
	return rte_errno;
}

unsigned int pktvec_rte_lcore_id(void)
{
	return rte_lcore_id();
}

unsigned int pktvec_rte_mbuf_size(void)
{
	return (unsigned int)sizeof(struct rte_mbuf);
}

void pktvec_rte_mbuf_offsets(unsigned int out[10])
{
	out[0] = offsetof(struct rte_mbuf, buf_addr);
	out[1] = offsetof(struct rte_mbuf, data_off);
	out[2] = offsetof(struct rte_mbuf, nb_segs);
	out[3] = offsetof(struct rte_mbuf, port);
	out[4] = offsetof(struct rte_mbuf, ol_flags);
	out[5] = offsetof(struct rte_mbuf, pkt_len);
	out[6] = offsetof(struct rte_mbuf, data_len);
	out[7] = offsetof(struct rte_mbuf, buf_len);
	out[8] = offsetof(struct rte_mbuf, pool);
	out[9] = offsetof(struct rte_mbuf, next);
}

struct obj_addrs {
	uintptr_t *out;
	unsigned int max;
	unsigned int n;
};

static void collect_obj(struct rte_mempool *mp, void *opaque, void *obj, unsigned int idx)
{
	struct obj_addrs *a = opaque;
	(void)mp;
	(void)idx;
	if (a->n < a->max)
		a->out[a->n] = (uintptr_t)obj;
	a->n++;
}

unsigned int pktvec_rte_mempool_obj_addrs(struct rte_mempool *mp, uintptr_t *out,
                                          unsigned int max)
{
	struct obj_addrs a = { out, max, 0 };
	rte_mempool_obj_iter(mp, collect_obj, &a);
	return a.n;
}

void pktvec_rte_pktmbuf_init_all(struct rte_mempool *mp)
{
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
}

/* Rings of ring ports carry this prefix, so that `pktvec_ring_port` can only ever find the
   rings it created itself: never a mempool's free ring ("MP_...") or another library's. */
#define RING_PORT_PREFIX "pktvec:"

/* The ring ring ports call `name`, created with `size` slots if it does not exist yet;
   NULL with rte_errno set on failure (ENAMETOOLONG for a name too long). */
static struct rte_ring *ring_by_name(const char *name, unsigned int size)
{
	char full[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	if ((unsigned int)snprintf(full, sizeof(full), RING_PORT_PREFIX "%s", name) >= sizeof(full)) {
		rte_errno = ENAMETOOLONG;
		return NULL;
	}
	r = rte_ring_lookup(full);
	if (r == NULL)
		r = rte_ring_create(full, size, (int)rte_socket_id(), 0);
	return r;
}

int pktvec_ring_port(const char *name, const char *rx_ring, const char *tx_ring,
                     unsigned int size)
{
	struct rte_ring *rx, *tx;
	int port;

	rx = ring_by_name(rx_ring, size);
	if (rx == NULL)
		return -rte_errno;
	tx = ring_by_name(tx_ring, size);
	if (tx == NULL)
		return -rte_errno;
	port = rte_eth_from_rings(name, &rx, 1, &tx, 1, rte_socket_id());
	return port < 0 ? -rte_errno : port;
}

uint32_t pktvec_rte_softrss(const uint32_t *input, uint32_t input_len, const uint8_t *key)
{
	return rte_softrss((uint32_t *)input, input_len, key);
}
