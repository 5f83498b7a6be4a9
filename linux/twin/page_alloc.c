// SPDX-License-Identifier: GPL-2.0
/* page_alloc: order-0 alloc_pages/__free_pages pairs on the local node (icount). */
#include "twin.h"

int twin_page_alloc(void)
{
	u64 pairs = scaled(100000, 10000), t0, t1, i;
	unsigned long flags;
	struct page *p;

	if (!icount())
		return 1; /* instruction counts only, as numalab's page_alloc */
	local_irq_save(flags);
	/* Warm up: the first pair refills the per-CPU list. */
	p = alloc_pages(GFP_ATOMIC, 0);
	if (p)
		__free_pages(p, 0);
	t0 = rdtsc();
	for (i = 0; i < pairs; i++) {
		p = alloc_pages(GFP_ATOMIC, 0);
		OPTIMIZER_HIDE_VAR(p);
		if (p)
			__free_pages(p, 0);
	}
	t1 = rdtsc();
	local_irq_restore(flags);
	record("page_alloc", "linux", "instructions_per_pair", t1 - t0, pairs, "instructions", 1);
	return 0;
}
