// SPDX-License-Identifier: GPL-2.0
#include "alloc_loops.h"

/*
 * ---- memoryless_sheaves: the burst on a private 64-byte cache, on the boot CPU ----
 *
 * As kernel/src/bench/memoryless_sheaves.rs's icount boot: one CPU (on the 8node-2mem preset
 * it sits on node 0, which has no memory), 40 rounds of 256 allocations and 256 frees of a
 * private 64-byte cache, less the burst harness; instructions_per_pair and its inverse
 * pairs_per_kinstruction (higher is better, as the thread's IOPS). The sheaf counters numalab
 * prints (sheaf_fraction_*, slab_path_per_kop) need CONFIG_SLUB_STATS, which Debian's configs
 * lack. Also prints the cache's sheaf_capacity where sysfs has it (7.x).
 */
int twin_memoryless_sheaves(void)
{
	u64 harness, ticks, per_kilo, net;
	struct kmem_cache *c;
	long long cap;
	int err;

	if (!icount())
		return 1;
	err = ap_burst(AP_EMPTY, NULL, 64, &harness);
	if (err)
		return err;
	c = private_cache("numalab_mls_64", 64);
	if (!c)
		return -ENOMEM;
	err = ap_burst(AP_CACHE, c, 64, &ticks);
	cap = sysfs_number("/sys/kernel/slab/numalab_mls_64/sheaf_capacity");
	kmem_cache_destroy(c);
	if (err) {
		TWIN_OUT("    # memoryless_sheaves: %d", err);
		return err;
	}
	TWIN_OUT("# bench: memoryless_sheaves: cpu %d on node %d (%s), sheaf_capacity %lld (-1: no such file)",
		 smp_processor_id(), numa_node_id(),
		 node_state(numa_node_id(), N_MEMORY) ? "with memory" : "memoryless", cap);
	record_signed("memoryless_sheaves", "linux", "instructions_per_pair", ticks < harness,
		      ticks < harness ? harness - ticks : ticks - harness,
		      BURST_ROUNDS * BURST, tick_unit(), 1);
	if (ticks <= harness)
		return -ERANGE;
	/* 1000 / (net / pairs) = 1000 * pairs / net */
	net = ticks - harness;
	per_kilo = 1000 * BURST_ROUNDS * BURST;
	record("memoryless_sheaves", "linux", "pairs_per_kinstruction", per_kilo, net, "pairs", 1);
	return 0;
}
