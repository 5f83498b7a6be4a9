// SPDX-License-Identifier: GPL-2.0
/* vmalloc_scaling: one-page vmalloc/vfree pairs on one CPU, lazy purges included (icount). */
#include "twin.h"

static int vmalloc_pairs(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		void *p = vmalloc(PAGE_SIZE);

		if (!p)
			return -ENOMEM;
		vfree(p);
	}
	return 0;
}

int twin_vmalloc_scaling(void)
{
	/* vmalloc.bench_icount_pairs' default, scaled as numalab scales it. */
	u64 n = scaled(20000, 1000), t0, t1;
	int err;

	if (!icount())
		return 1;
	/* vmalloc and vfree may sleep: interrupts stay on (timer ticks are counted). */
	err = vmalloc_pairs(n / 4);
	if (err)
		return err;
	t0 = rdtsc();
	err = vmalloc_pairs(n);
	t1 = rdtsc();
	if (err)
		return err;
	record("vmalloc_scaling", "linux", "instructions_per_pair", t1 - t0, n, "instructions", 1);
	return 0;
}
