/* The DPDK headers pktvec binds (bindgen input). */
#include <rte_config.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_dev.h>
#include <rte_bus_vdev.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include "shim/shim.h"
