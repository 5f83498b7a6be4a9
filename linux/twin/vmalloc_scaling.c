// SPDX-License-Identifier: GPL-2.0
/*
 * vmalloc_scaling: one-page vmalloc/vfree pairs on one CPU, lazy purges included (icount).
 * Det boots (clock=det): numalab's det variant (kernel/src/bench/vmalloc_scaling.rs): every
 * online CPU runs vmalloc.bench_pairs' default (2000, smoke-scaled) pairs from a common start,
 * after a warm-up of a quarter of that (outside the region), as one trace region (trace.c):
 * instructions_per_op (virtual time of the region, every vCPU's instructions, per pair).
 */
#include "twin.h"
#include "trace.h"

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

struct vs_run {
	u64 pairs; /* per CPU */
	unsigned int nr;
	atomic_t ready, done, failed;
	atomic64_t start, end;
	wait_queue_head_t wq;
	const u8 *key;
};

static int vs_work(void *arg)
{
	struct vs_run *run = arg;
	u64 now, prev;

	twin_mark_in(run->key);
	if (vmalloc_pairs(run->pairs / 4))
		atomic_inc(&run->failed);
	atomic_inc(&run->ready);
	while (atomic_read(&run->ready) < run->nr)
		cond_resched();
	now = rdtsc();
	prev = atomic64_read(&run->start);
	while (!prev || now < prev) {
		u64 old = atomic64_cmpxchg(&run->start, prev, now);

		if (old == prev)
			break;
		prev = old;
	}
	if (vmalloc_pairs(run->pairs))
		atomic_inc(&run->failed);
	now = rdtsc();
	prev = atomic64_read(&run->end);
	while (now > prev) {
		u64 old = atomic64_cmpxchg(&run->end, prev, now);

		if (old == prev)
			break;
		prev = old;
	}
	twin_mark_out(run->key);
	atomic_inc(&run->done);
	wake_up(&run->wq);
	return 0;
}

static int vmalloc_det(void)
{
	struct vs_run *run = kzalloc(sizeof(*run), GFP_KERNEL);
	unsigned int cpu, started = 0;
	int err = 0;
	u64 ops;

	if (!run)
		return -ENOMEM;
	run->pairs = scaled(2000, 100);
	run->nr = num_online_cpus();
	init_waitqueue_head(&run->wq);
	run->key = twin_region_open("vmalloc_scaling", "linux", run->nr);
	twin_quantum_start();
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (started == run->nr)
			break;
		t = kthread_create_on_cpu(vs_work, run, cpu, "numalab_vs/%u");
		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			run->nr = started; /* the started workers must not wait for the others */
			break;
		}
		started++;
		wake_up_process(t);
	}
	wait_event(run->wq, atomic_read(&run->done) == started);
	twin_quantum_stop();
	ops = run->pairs * started;
	twin_region_ops(run->key, ops);
	if (!err && atomic_read(&run->failed))
		err = -ENOMEM;
	if (!err)
		record("vmalloc_scaling", "linux", "instructions_per_op",
		       atomic64_read(&run->end) - atomic64_read(&run->start), max_t(u64, ops, 1),
		       "instructions", started);
	kfree(run);
	return err;
}

int twin_vmalloc_scaling(void)
{
	/* vmalloc.bench_icount_pairs' default, scaled as numalab scales it. */
	u64 n = scaled(20000, 1000), t0, t1;
	int err;

	if (det())
		return vmalloc_det();
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
