/* LD_PRELOAD shim for dpdk-testpmd (used by scripts/dpdk_bench.py): rte_pktmbuf_pool_create
 * with RTE_MEMPOOL_F_NO_IOVA_CONTIG, i.e. mbufs packed back to back (a stride of 2,368 bytes
 * with testpmd's 2,176-byte buffers), as they are with hugepages and as pktvec's Mempool
 * lays them out under IOVA-as-VA, instead of one mbuf per 4 KiB page, which DPDK does under
 * --no-huge (every mbuf header then falls into the same L1 set). Same pool size, cache,
 * ops and mbuf initialisation as rte_pktmbuf_pool_create otherwise.
 *
 *   gcc -O2 -shared -fPIC scripts/dpdk_packed_pool.c $(pkg-config --cflags --libs libdpdk) \
 *       -o /tmp/dpdk_packed_pool.so
 *   LD_PRELOAD=/tmp/dpdk_packed_pool.so dpdk-testpmd --no-huge ...
 */
#include <string.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_mbuf_pool_ops.h>
struct rte_mempool *rte_pktmbuf_pool_create(const char *name, unsigned n, unsigned cache,
    uint16_t priv_size, uint16_t data_room, int socket_id) {
  struct rte_pktmbuf_pool_private p = { .mbuf_data_room_size = data_room, .mbuf_priv_size = priv_size };
  unsigned elt = sizeof(struct rte_mbuf) + priv_size + data_room;
  struct rte_mempool *mp = rte_mempool_create_empty(name, n, elt, cache,
      sizeof(struct rte_pktmbuf_pool_private), socket_id, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (!mp) return NULL;
  if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL) != 0) { rte_mempool_free(mp); return NULL; }
  rte_pktmbuf_pool_init(mp, &p);
  if (rte_mempool_populate_default(mp) < 0) { rte_mempool_free(mp); return NULL; }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
  return mp;
}
