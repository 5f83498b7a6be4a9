// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_peers: kmalloc and a kmem_cache against the harness, as
 * kernel/src/bench/alloc_peers.rs (the loops and what they measure: alloc_loops.h).
 */
#include "alloc_loops.h"

static const char *const ap_workloads[AP_WORKLOADS] = { "fast64", "random", "burst256" };
static const u64 ap_pairs[AP_WORKLOADS] = { FAST_PAIRS, RANDOM_STEPS, BURST_ROUNDS * BURST };

/* One figure of `bench`: (ticks - harness) / pairs, as numalab's emit (v - h). */
void ap_record_in(const char *bench, const char *allocator, int w, u64 ticks, u64 harness)
{
	char case_name[48];
	bool below = ticks < harness;

	snprintf(case_name, sizeof(case_name), "%s/%s", allocator, ap_workloads[w]);
	record_signed(bench, case_name, "instructions_per_pair", below,
		      below ? harness - ticks : ticks - harness, ap_pairs[w], tick_unit(), 1);
}

/* One alloc_peers figure. */
static void ap_record(const char *allocator, int w, u64 ticks, u64 harness)
{
	ap_record_in("alloc_peers", allocator, w, ticks, harness);
}

int twin_alloc_peers(void)
{
	u64 harness[AP_WORKLOADS], kmalloc_ticks[AP_WORKLOADS], cache_ticks;
	struct kmem_cache *c;
	char case_name[48];
	int err, w;

	/* numalab enables interrupts around alloc_peers; a module's init runs with them on. */
	if (irqs_disabled()) {
		TWIN_OUT("    # alloc_peers: interrupts are off in module init");
		return -EINVAL;
	}
	err = ap_run(AP_EMPTY, harness);
	if (err) {
		TWIN_OUT("    # alloc_peers: harness: %d", err);
		return err;
	}
	err = ap_run(AP_KMALLOC, kmalloc_ticks);
	if (err) {
		TWIN_OUT("    # alloc_peers: kmalloc: %d", err);
		return err;
	}
	/* A private 64-byte cache. SLAB_NO_MERGE does not exist in 6.1: a constructor-less cache
	 * may merge with kmalloc-64, which is still kmem_cache_alloc's path. */
	c = kmem_cache_create("numalab_twin_64", 64, 0, 0, NULL);
	if (!c) {
		TWIN_OUT("    # alloc_peers: kmem_cache: %d", -ENOMEM);
		return -ENOMEM;
	}
	err = ap_fast64(AP_CACHE, c, &cache_ticks);
	kmem_cache_destroy(c);
	if (err) {
		TWIN_OUT("    # alloc_peers: kmem_cache: %d", err);
		return err;
	}
	for (w = 0; w < AP_WORKLOADS; w++) {
		snprintf(case_name, sizeof(case_name), "harness/%s", ap_workloads[w]);
		record("alloc_peers", case_name, "harness_instructions_per_pair", harness[w],
		       ap_pairs[w], tick_unit(), 1);
	}
	for (w = 0; w < AP_WORKLOADS; w++)
		ap_record("kmalloc", w, kmalloc_ticks[w], harness[w]);
	ap_record("kmem_cache", AP_FAST64, cache_ticks, harness[AP_FAST64]);
	return 0;
}
