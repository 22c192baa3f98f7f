/*
 * pktvec's C shim over DPDK: DPDK implements its fast path (rx/tx burst, mbuf bulk
 * allocation, rte_errno, the lcore id) as `static inline` functions or macros, which have no
 * symbol to link against. Each function here is a real, exported wrapper around one of them.
 */
#ifndef PKTVEC_DPDK_SHIM_H
#define PKTVEC_DPDK_SHIM_H

#include <stdint.h>

struct rte_mbuf;
struct rte_mempool;

/* rte_eth_rx_burst */
uint16_t pktvec_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id,
                                 struct rte_mbuf **rx_pkts, uint16_t nb_pkts);
/* rte_eth_tx_burst */
uint16_t pktvec_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id,
                                 struct rte_mbuf **tx_pkts, uint16_t nb_pkts);
/* rte_pktmbuf_alloc_bulk: 0 on success (all or nothing), negative errno otherwise */
int pktvec_rte_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs,
                                  unsigned int count);
/* rte_pktmbuf_data_room_size */
uint16_t pktvec_rte_pktmbuf_data_room_size(struct rte_mempool *mp);
/* rte_pktmbuf_priv_size */
uint16_t pktvec_rte_pktmbuf_priv_size(struct rte_mempool *mp);
/* rte_errno (a per-lcore thread-local variable behind a macro) */
int pktvec_rte_errno(void);
/* rte_lcore_id */
unsigned int pktvec_rte_lcore_id(void);
/* Writes the addresses of the pool's objects (mbufs) to out[0..max]; returns how many
   objects the pool has (rte_mempool_obj_iter with a C callback, so no Rust callback). */
unsigned int pktvec_rte_mempool_obj_addrs(struct rte_mempool *mp, uintptr_t *out,
                                          unsigned int max);
/* rte_pktmbuf_init on every object of the pool (rte_mempool_obj_iter). */
void pktvec_rte_pktmbuf_init_all(struct rte_mempool *mp);
/* offsetof of buf_addr, data_off, nb_segs, port, ol_flags, pkt_len, data_len, buf_len,
   pool, next in struct rte_mbuf, in that order (checked against MbufHeader in tests) */
void pktvec_rte_mbuf_offsets(unsigned int out[10]);
/* sizeof(struct rte_mbuf), checked against the Rust layout in tests */
unsigned int pktvec_rte_mbuf_size(void);
/* An ethdev port over two rte_rings (net_ring's rte_eth_from_rings; its device name is
   "net_ring_<name>"): it receives what is enqueued on the ring named `rx_ring` and
   transmits into the ring named `tx_ring`. The rings live in a namespace of their own (a
   private prefix), so only rings made by this function are ever found; one that does not
   exist yet is created with `size` slots (a power of two; it holds size - 1 mbufs),
   multi-producer and multi-consumer, so several ports may share one. Returns the port id,
   or a negative errno (-ENAMETOOLONG for a ring name over 21 bytes). Rings are never
   freed: they live as long as the EAL (closing a port made from rings leaves them). */
int pktvec_ring_port(const char *name, const char *rx_ring, const char *tx_ring,
                     unsigned int size);
/* rte_softrss (rte_thash.h): the Toeplitz hash of `input_len` 32-bit words (host order)
   under a 40-byte key. */
uint32_t pktvec_rte_softrss(const uint32_t *input, uint32_t input_len, const uint8_t *key);

#endif
