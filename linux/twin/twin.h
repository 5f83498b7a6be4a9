/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What numalab_twin's files share: the harness's parameters and BENCH output (harness.c),
 * numalab's smoke scaling, and one declaration per experiment (experiments.h).
 */
#ifndef NUMALAB_TWIN_H
#define NUMALAB_TWIN_H

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/utsname.h>
#include <linux/nodemask.h>
#include <linux/cpumask.h>
#include <linux/string.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/fs.h>
#include <linux/topology.h>
#include <linux/atomic.h>
#include <linux/wait.h>
#include <linux/spinlock.h>
#include <asm/tsc.h>
#include <asm/msr.h>
#include <asm/io.h>

#define TWIN_OUT(fmt, ...) printk(KERN_INFO fmt "\n", ##__VA_ARGS__)

/* The module's parameters (harness.c). */
extern char *twin_clock;
extern bool twin_smoke;
extern bool twin_sll_order4;
/* "linux-6.1.192": the kernel field of every BENCH line (harness.c). */
extern char kernel_name[64];

/* rdtsc counts instructions: the one-CPU icount boot or a det boot (trace.h's det()). */
static inline bool icount(void)
{
	return strcmp(twin_clock, "icount") == 0 || strcmp(twin_clock, "det") == 0;
}

/* numalab's smoke_scaled: a tenth of full in a smoke run, at least floor. */
static inline u64 scaled(u64 full, u64 floor)
{
	u64 tenth = full / 10;

	if (!twin_smoke)
		return full;
	return tenth > floor ? tenth : floor;
}

void record_signed(const char *bench, const char *case_name, const char *metric, bool negative,
		   u64 num, u64 den, const char *unit, unsigned int cpus);
void record(const char *bench, const char *case_name, const char *metric, u64 num, u64 den,
	    const char *unit, unsigned int cpus);
const char *tick_unit(void);
long long sysfs_number(const char *path);

#define TWIN_EXPERIMENT(name, skip_reason) int twin_##name(void);
#include "experiments.h"
#undef TWIN_EXPERIMENT

#endif
