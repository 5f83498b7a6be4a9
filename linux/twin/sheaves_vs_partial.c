// SPDX-License-Identifier: GPL-2.0
#include "alloc_loops.h"
#include "trace.h"

/*
 * ---- sheaves_vs_partial: alloc_peers' three workloads on private caches, one design ----
 *
 * numalab runs them on kmalloc-like private caches of each design (partial, sheaves) side by
 * side; a Linux kernel has one design (6.1: per-CPU partial slabs; 7.x: sheaves for every
 * cache). fast64 and burst256 run on private unmergeable caches of 64 and 256 bytes (a
 * whole-object usercopy region, which slab_unmergeable() refuses to merge); random's sizes
 * 8..4096 run on kmalloc's caches. The harness (the same loops around the empty functions) is
 * measured here again and subtracted. Instruction counts: the icount boot only.
 * (private_cache: alloc_loops.h)
 */
int twin_sheaves_vs_partial(void)
{
	u64 harness[AP_WORKLOADS], ticks[AP_WORKLOADS];
	struct kmem_cache *c64, *c256;
	int err, w;

	if (det())
		return sll_det_sheaves_vs_partial();
	if (!icount())
		return 1;
	err = ap_run(AP_EMPTY, harness);
	if (err)
		return err;
	c64 = private_cache("numalab_svp_64", 64);
	c256 = private_cache("numalab_svp_256", 256);
	err = c64 && c256 ? 0 : -ENOMEM;
	if (!err)
		err = ap_fast64(AP_CACHE, c64, &ticks[AP_FAST64]);
	if (!err)
		err = ap_random(AP_KMALLOC, &ticks[AP_RANDOM]);
	if (!err)
		err = ap_burst(AP_CACHE, c256, 256, &ticks[AP_BURST256]);
	if (c64)
		kmem_cache_destroy(c64);
	if (c256)
		kmem_cache_destroy(c256);
	if (err) {
		TWIN_OUT("    # sheaves_vs_partial: %d", err);
		return err;
	}
	for (w = 0; w < AP_WORKLOADS; w++)
		ap_record_in("sheaves_vs_partial", "linux", w, ticks[w], harness[w]);
	return 0;
}
