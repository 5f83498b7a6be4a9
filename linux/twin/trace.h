/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Det boots' timed regions as the trace plugin sees them (docs/trace.md "Regions",
 * docs/linux-twin.md "Det boots and trace regions (module side)"): the same marker NOPs and
 * console lines as numalab's kernel/src/bench/region.rs, from C, plus the det quantum (HPET
 * timer 2 periodic, its interrupt off) and the names of Linux's dynamic objects.
 */
#ifndef NUMALAB_TWIN_TRACE_H
#define NUMALAB_TWIN_TRACE_H

#include "twin.h"

/* clock=det: every online CPU under -icount shift=0,sleep=off (harness.c). */
static inline bool det(void)
{
	return strcmp(twin_clock, "det") == 0;
}

/* det_quantum= (instructions per vCPU turn inside regions; 0: none). */
extern unsigned long twin_det_quantum;

/*
 * A fresh region of experiment `bench`, case `case_name` on `cpus` CPUs: prints
 * "# trace region 0xKEY: BENCH CASE cpus K" (and "# trace kernel ..." once) and returns the
 * key, or NULL outside det boots or once every slot is used (nothing is marked then).
 */
const u8 *twin_region_open(const char *bench, const char *case_name, unsigned int cpus);
/* "# trace ops 0xKEY N" (nothing for a NULL key). */
void twin_region_ops(const u8 *key, u64 ops);
/* Marks the calling CPU into the region `key` (NULL: nothing), interrupts off around it. */
void twin_mark_in(const u8 *key);
/* Marks the calling CPU out of the region `key` (to twin_outside; NULL key: nothing). */
void twin_mark_out(const u8 *key);

/* The det quantum around a region (no-ops outside det boots or with det_quantum=0). */
void twin_quantum_start(void);
void twin_quantum_stop(void);
/* "# bench: det quantum ..." once: how the quantum is set, or why it is not. */
void twin_quantum_setup(void);

/* "# trace name 0xADDR BYTES: LABEL" and watch markers over its lines (det boots only). */
void twin_name(const void *addr, size_t bytes, const char *fmt, ...) __printf(3, 4);
/*
 * Names cache `s` (called `cache_name`): the struct kmem_cache, each node's kmem_cache_node
 * and its list_lock, 7.x's barn where reachable. Prints "# bench: names: ..." the first time.
 */
void twin_name_cache(struct kmem_cache *s, const char *cache_name);

/* sheaves_vs_partial's det boot: slub_list_lock's workload, case "linux" (slub_list_lock.c). */
int sll_det_sheaves_vs_partial(void);

#endif
