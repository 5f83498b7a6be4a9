// SPDX-License-Identifier: GPL-2.0
/*
 * ---- kfree_rcu_scale: rcuscale's kfree_rcu_test with Linux's own kfree_rcu ----
 *
 * As kernel/src/bench/kfree_rcu_scale.rs: on every online CPU a kthread bound to it
 * allocates rcuscale's struct kfree_obj (8 bytes and an rcu_head, 24 bytes: kfree_mult 1)
 * from a private unmergeable 24-byte cache and frees it after a grace period, 10 x 8000
 * times (2000 under smoke, as numalab), with cond_resched() every 64 (numalab's
 * quiescent_point), then rcu_barrier(). Two cases, the two ways rcuscale has:
 *   linux/kfree_rcu  kfree_rcu(obj, rh): Linux 6.1's batched kfree_rcu_cpu pages; on 7.x the
 *                    cache's rcu_free sheaf first (kvfree_call_rcu -> kfree_rcu_sheaf, for a
 *                    cache with sheaves and an object of the CPU's node), batched otherwise;
 *   linux/call_rcu   kfree_by_call_rcu: call_rcu(&obj->rh, cb), cb frees the object.
 * Which way kfree_rcu took is the kernel's: the line "# kfree_rcu_scale: ... sheaf_capacity"
 * says whether the cache has sheaves (7.x's sysfs; 6.1 has no such file and prints -1).
 *
 * Runs in the one-CPU icount boot and in the tsc boot (every CPU, host time, where
 * numalab's tsc boot prints its counts). Records: instructions_per_op (rdtsc: under icount
 * the loops' instructions over allocations, the barrier not included, as numalab; in the
 * tsc boot cycles of host time), grace_periods_per_kop (rcu_state's
 * gp_seq through rcu_get_gp_seq(), exported GPL by 6.1 and 7.3 but declared only in
 * kernel/rcu/rcu.h: 4 per grace period, RCU_SEQ_CTR_SHIFT 2; counted to after rcu_barrier(),
 * as numalab counts to after its barrier), and for linux/call_rcu peak_waiting_objects (the
 * most callbacks queued by one CPU and not yet run). Not measurable here: the objects waiting
 * in kfree_rcu's batches or rcu_free sheaves (kfree_rcu_cpu and the sheaves are internal to
 * mm/), the call_rcu callbacks kfree_rcu itself queues, list_lock and barn lock acquisitions
 * (no CONFIG_LOCK_STAT, no CONFIG_SLUB_STATS in Debian's configs).
 */
#include "twin.h"
#include <linux/rcupdate.h>
#include <linux/percpu.h>
#include <linux/version.h>

#define KRS_BENCH "kfree_rcu_scale"
#define KRS_CACHE "numalab_krs"
/* rcuscale's kfree_loops x kfree_alloc_num; numalab's smoke count. */
#define KRS_FULL_OPS (10 * 8000)
#define KRS_SMOKE_OPS 2000

/* Exported by kernel/rcu/tree.c (EXPORT_SYMBOL_GPL) in 6.1 and 7.3; no public header. */
unsigned long rcu_get_gp_seq(void);

/* rcuscale's struct kfree_obj with kfree_mult 1. */
struct kfree_obj {
	char kfree_obj[8];
	struct rcu_head rh;
};

struct krs_worker {
	int cpu;
	bool by_call_rcu;
	u64 ops;
	u64 ticks;
	long peak;
	int err;
	struct completion done;
};

static struct kmem_cache *krs_cache;
/* Callbacks of linux/call_rcu run on each CPU (they run where they were queued). */
static DEFINE_PER_CPU(long, krs_invoked);

static void krs_free_cb(struct rcu_head *rh)
{
	kmem_cache_free(krs_cache, container_of(rh, struct kfree_obj, rh));
	this_cpu_inc(krs_invoked);
}

static int krs_work(void *arg)
{
	struct krs_worker *w = arg;
	long *invoked = per_cpu_ptr(&krs_invoked, w->cpu);
	long base = READ_ONCE(*invoked), queued = 0;
	u64 i, t0;

	t0 = rdtsc();
	for (i = 0; i < w->ops; i++) {
		struct kfree_obj *o = kmem_cache_alloc(krs_cache, GFP_KERNEL);

		if (!o) {
			w->err = -ENOMEM;
			break;
		}
		if (w->by_call_rcu) {
			long waiting;

			call_rcu(&o->rh, krs_free_cb);
			waiting = ++queued - (READ_ONCE(*invoked) - base);
			if (waiting > w->peak)
				w->peak = waiting;
		} else {
			kfree_rcu(o, rh);
		}
		if (i % 64 == 63)
			cond_resched();
	}
	w->ticks = rdtsc() - t0;
	complete(&w->done);
	return 0;
}

/*
 * Waits until the cache holds no object: Linux 6.1's kmem_cache_destroy does not wait for
 * kfree_rcu's batches (kvfree_rcu_barrier and its call in kmem_cache_destroy came in 6.12),
 * and rcu_barrier() does not either (a batch is freed by a work item queued after its grace
 * period). So 6.1 polls: shrink, read /sys/kernel/slab/numalab_krs/objects, sleep 20 ms
 * (virtual time under icount) and wait for the callbacks again. 7.x's kmem_cache_destroy
 * waits itself (kvfree_rcu_barrier_on_cache, which also flushes the rcu_free sheaves).
 * Returns the objects left (0 once drained).
 */
static long long krs_drain(void)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
	long long left = -1;
	int tries;

	for (tries = 0; tries < 250; tries++) {
		kmem_cache_shrink(krs_cache);
		left = sysfs_number("/sys/kernel/slab/" KRS_CACHE "/objects");
		if (left == 0)
			break;
		msleep(20);
		rcu_barrier();
	}
	return left;
#else
	return 0;
#endif
}

static int krs_case(const char *case_name, bool by_call_rcu, u64 ops)
{
	unsigned int k = num_online_cpus(), started = 0, i;
	struct krs_worker *workers;
	u64 ticks = 0, total = 0;
	unsigned long gp0, gp1;
	long peak = 0;
	long long left;
	int cpu, err = 0;

	workers = kcalloc(k, sizeof(*workers), GFP_KERNEL);
	krs_cache = kmem_cache_create_usercopy(KRS_CACHE, sizeof(struct kfree_obj), 0, 0, 0,
					       sizeof(struct kfree_obj), NULL);
	if (!workers || !krs_cache) {
		err = -ENOMEM;
		goto out;
	}
	gp0 = rcu_get_gp_seq();
	for_each_online_cpu(cpu) {
		struct krs_worker *w = &workers[started];
		struct task_struct *t;

		if (started == k)
			break;
		w->cpu = cpu;
		w->by_call_rcu = by_call_rcu;
		w->ops = ops;
		init_completion(&w->done);
		t = kthread_create_on_cpu(krs_work, w, cpu, "numalab_krs/%u");
		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			break;
		}
		started++;
		wake_up_process(t);
	}
	for (i = 0; i < started; i++) {
		wait_for_completion(&workers[i].done);
		ticks += workers[i].ticks;
		total += workers[i].ops;
		peak = max(peak, workers[i].peak);
		if (workers[i].err)
			err = workers[i].err;
	}
	rcu_barrier();
	gp1 = rcu_get_gp_seq();
	left = krs_drain();
	TWIN_OUT("# %s: %s: cpus %u, cache %s sheaf_capacity %lld, kmalloc-32 sheaf_capacity %lld (-1: no such file), objects left after the barrier %lld",
		 KRS_BENCH, case_name, started, KRS_CACHE,
		 sysfs_number("/sys/kernel/slab/" KRS_CACHE "/sheaf_capacity"),
		 sysfs_number("/sys/kernel/slab/kmalloc-32/sheaf_capacity"), left);
	if (!err && started < k)
		err = -ECHILD;
	if (!err && left != 0) {
		TWIN_OUT("    # %s: %s: %lld objects still allocated after the barrier and 5 s",
			 KRS_BENCH, case_name, left);
		err = -EBUSY;
	}
	if (err)
		goto out;
	record(KRS_BENCH, case_name, "instructions_per_op", ticks, total, tick_unit(), started);
	/* gp_seq counts 4 per grace period (RCU_SEQ_CTR_SHIFT 2 in kernel/rcu/rcu.h). */
	record(KRS_BENCH, case_name, "grace_periods_per_kop", ((gp1 - gp0) >> 2) * 1000, total,
	       "grace_periods", started);
	if (by_call_rcu)
		record(KRS_BENCH, case_name, "peak_waiting_objects", peak, 1, "objects", started);
out:
	if (krs_cache)
		kmem_cache_destroy(krs_cache);
	krs_cache = NULL;
	kfree(workers);
	return err;
}

int twin_kfree_rcu_scale(void)
{
	u64 ops = twin_smoke ? KRS_SMOKE_OPS : KRS_FULL_OPS;
	int err;

	err = krs_case("linux/call_rcu", true, ops);
	if (!err)
		err = krs_case("linux/kfree_rcu", false, ops);
	if (err)
		TWIN_OUT("    # %s: %d", KRS_BENCH, err);
	return err;
}
