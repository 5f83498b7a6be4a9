// SPDX-License-Identifier: GPL-2.0
#include "twin.h"
#include "trace.h"

/*
 * ---- slub_list_lock: kernel/src/bench/slub_list_lock.rs's mmap1-like load ----
 *
 * k of the online CPUs (25%, 50%, 100%) each bulk-allocate batches of 32 256-byte objects
 * from a private cache, free half themselves and hand the other half to the next CPU, which
 * frees them (remote frees). Four tunings of the cache with Linux's own knobs:
 * linux/default (as Linux sizes the cache), linux/partial_64 (min_partial 64 under
 * /sys/kernel/slab/NAME), linux/order_4 (partial_64 with order-4 slabs) and
 * linux/cpu_partial_x2 (order_4 with cpu_partial raised to twice order_4's per-CPU partial
 * bound in slabs, Linux's DIV_ROUND_UP(2 x cpu_partial, objects per slab)). Linux 6.1's
 * order attribute is read-only, so the slab order comes from the command line: the runner
 * boots a second time with slub_max_order=4 slub_min_objects=256 (global, as on the thread's
 * machines) and sll_order4=1 for the last two tunings. Linux 6.1 has no max_partial knob.
 * Metric: ops_per_cpu (allocations + frees per CPU per second, tsc clock: a trend). Linux's
 * list_lock acquisitions have no counter in Debian's config (no lock_stat, no SLUB_STATS).
 * Det boots (clock=det): the same cases, each a trace region (trace.c) whose workers mark
 * themselves in and out, the cache's nodes named before it, plus instructions_per_op (virtual
 * time of the region, every vCPU's instructions, per operation). sheaves_vs_partial's det
 * boot runs this workload too (sll_det_sheaves_vs_partial, case "linux").
 */

#define SLL_OBJ 256
#define SLL_BATCH 32
#define SLL_NAME "numalab_sll"

struct sll_box {
	spinlock_t lock;
	void *head; /* objects linked through their first word */
};

struct sll_run {
	struct kmem_cache *cache;
	struct sll_box *boxes;
	unsigned int k;
	u64 rounds;
	atomic_t ready;
	atomic_t done;
	atomic64_t ops;
	atomic64_t start;
	atomic64_t end;
	atomic_t failed;
	wait_queue_head_t wq;
	const u8 *key; /* the trace region (det boots), or NULL */
};

struct sll_worker {
	struct sll_run *run;
	unsigned int me;
};

static void sll_free_list(struct kmem_cache *c, void *head, u64 *ops)
{
	while (head) {
		void *next = *(void **)head;

		kmem_cache_free(c, head);
		head = next;
		(*ops)++;
	}
}

static int sll_work(void *arg)
{
	struct sll_worker *w = arg;
	struct sll_run *run = w->run;
	struct sll_box *next = &run->boxes[(w->me + 1) % run->k];
	struct sll_box *mine = &run->boxes[w->me];
	void *batch[SLL_BATCH];
	u64 ops = 0, round, now, prev;
	int n, i;

	twin_mark_in(run->key);
	atomic_inc(&run->ready);
	while (atomic_read(&run->ready) < run->k)
		cond_resched();
	if (w->me == 0)
		atomic64_set(&run->start, rdtsc());
	for (round = 0; round < run->rounds; round++) {
		void *give = NULL, *got;

		/* All or nothing in both kernels: 6.1 returns the count or 0, 7.3's
		 * kmem_cache_alloc_bulk_noprof returns bool (true: all SLL_BATCH). Taking 7.3's
		 * true as a count of 1 and "topping up" the rest overwrote batch[1..] 31 times a
		 * round and leaked 496 objects (docs/linux-twin.md, "Objects remaining"). */
		n = kmem_cache_alloc_bulk(run->cache, GFP_KERNEL, SLL_BATCH, batch) ? SLL_BATCH : 0;
		if (n < SLL_BATCH) {
			atomic_inc(&run->failed);
			n = 0;
		}
		for (i = n / 2; i < n; i++) {
			*(void **)batch[i] = give;
			give = batch[i];
		}
		ops += n + n / 2;
		kmem_cache_free_bulk(run->cache, n / 2, batch);
		if (run->k > 1 && give) {
			void *tail = give;

			while (*(void **)tail)
				tail = *(void **)tail;
			spin_lock(&next->lock);
			*(void **)tail = next->head;
			next->head = give;
			spin_unlock(&next->lock);
		} else {
			u64 uncounted = 0; /* numalab counts frees of sent objects at the receiver */

			sll_free_list(run->cache, give, &uncounted);
		}
		spin_lock(&mine->lock);
		got = mine->head;
		mine->head = NULL;
		spin_unlock(&mine->lock);
		sll_free_list(run->cache, got, &ops);
		cond_resched();
	}
	now = rdtsc();
	prev = atomic64_read(&run->end);
	while (now > prev) {
		u64 old = atomic64_cmpxchg(&run->end, prev, now);

		if (old == prev)
			break;
		prev = old;
	}
	twin_mark_out(run->key);
	atomic64_add(ops, &run->ops);
	atomic_inc(&run->done);
	wake_up(&run->wq);
	return 0;
}

/* Writes a number to /sys/kernel/slab/SLL_NAME/KNOB; 0 or a negative errno. */
static int sll_knob_write(const char *knob, long long v)
{
	char path[96], buf[32];
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/%s", SLL_NAME, knob);
	snprintf(buf, sizeof(buf), "%lld\n", v);
	f = filp_open(path, O_WRONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_write(f, buf, strlen(buf), &pos);
	filp_close(f, NULL);
	return n < 0 ? (int)n : 0;
}

static long long sll_knob(const char *knob)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/%s", SLL_NAME, knob);
	return sysfs_number(path);
}

enum sll_case { SLL_DEFAULT, SLL_PARTIAL_64, SLL_ORDER_4, SLL_CPU_PARTIAL_X2, SLL_CASES };
static const char *const sll_case_names[SLL_CASES] = {
	"linux/default", "linux/partial_64", "linux/order_4", "linux/cpu_partial_x2"
};

/* The cache of one case, its knobs set; x2_objects is cpu_partial_x2's object count. */
static struct kmem_cache *sll_cache(enum sll_case which, long long x2_objects)
{
	struct kmem_cache *c = kmem_cache_create_usercopy(SLL_NAME, SLL_OBJ, 0, 0, 0, SLL_OBJ,
							 NULL);
	int err = 0;

	if (!c)
		return NULL;
	if (which >= SLL_PARTIAL_64)
		err = sll_knob_write("min_partial", 64);
	if (!err && which == SLL_CPU_PARTIAL_X2)
		err = sll_knob_write("cpu_partial", x2_objects);
	if (err) {
		TWIN_OUT("    # slub_list_lock: %s: cannot set a knob under /sys/kernel/slab/%s: %d",
			 sll_case_names[which], SLL_NAME, err);
		kmem_cache_destroy(c);
		return NULL;
	}
	return c;
}

/* Linux 6.1's per-CPU partial bound in slabs (slub_set_cpu_partial). */
static long long sll_cpu_partial_slabs(void)
{
	long long objs = sll_knob("objs_per_slab"), cp = sll_knob("cpu_partial");

	if (objs <= 0 || cp < 0)
		return -1;
	return (2 * cp + objs - 1) / objs;
}

static int sll_run_case(const char *bench, const char *case_name, enum sll_case which,
			long long x2_objects, unsigned int k, u64 rounds)
{
	struct sll_worker *workers = kcalloc(k, sizeof(*workers), GFP_KERNEL);
	struct sll_run *run = kzalloc(sizeof(*run), GFP_KERNEL);
	unsigned int cpu, started = 0, i;
	u64 ops, ticks, rest = 0;
	int err = 0;

	if (!workers || !run) {
		err = -ENOMEM;
		goto out;
	}
	run->cache = sll_cache(which, x2_objects);
	run->boxes = kcalloc(k, sizeof(*run->boxes), GFP_KERNEL);
	if (!run->cache || !run->boxes) {
		err = -ENOMEM;
		goto out;
	}
	TWIN_OUT("# %s: case %s cpus %u: slab order %lld, %lld objects/slab, min_partial %lld, cpu_partial %lld objects = %lld slabs",
		 bench, case_name, k, sll_knob("order"), sll_knob("objs_per_slab"),
		 sll_knob("min_partial"), sll_knob("cpu_partial"), sll_cpu_partial_slabs());
	for (i = 0; i < k; i++)
		spin_lock_init(&run->boxes[i].lock);
	run->k = k;
	run->rounds = rounds;
	init_waitqueue_head(&run->wq);
	twin_name_cache(run->cache, SLL_NAME);
	run->key = twin_region_open(bench, case_name, k);
	twin_quantum_start();
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		if (started == k)
			break;
		workers[started].run = run;
		workers[started].me = started;
		t = kthread_create_on_cpu(sll_work, &workers[started], cpu, "numalab_sll/%u");
		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			break;
		}
		started++;
		wake_up_process(t);
	}
	if (started < k)
		run->k = started; /* the started workers must not wait for the others */
	wait_event(run->wq, atomic_read(&run->done) == started);
	twin_quantum_stop();
	for (i = 0; i < k; i++)
		sll_free_list(run->cache, run->boxes[i].head, &rest);
	if (!err && atomic_read(&run->failed)) {
		TWIN_OUT("    # slub_list_lock: %s: %d bulk allocations came back short",
			 sll_case_names[which], atomic_read(&run->failed));
		err = -ENOMEM;
	}
	if (!err) {
		ops = atomic64_read(&run->ops) + rest;
		ticks = max_t(u64, atomic64_read(&run->end) - atomic64_read(&run->start), 1);
		/* ops / k / (ticks / (tsc_khz * 1000)) */
		record(bench, case_name, "ops_per_cpu", ops * (u64)tsc_khz * 1000, ticks * k,
		       "ops/s", k);
		twin_region_ops(run->key, ops);
		if (det())
			record(bench, case_name, "instructions_per_op", ticks, max_t(u64, ops, 1),
			       "instructions", k);
	}
out:
	if (run && run->cache)
		kmem_cache_destroy(run->cache);
	if (run)
		kfree(run->boxes);
	kfree(run);
	kfree(workers);
	return err;
}

int twin_slub_list_lock(void)
{
	static const unsigned int percents[] = { 25, 50, 100 };
	unsigned int n = num_online_cpus(), last = 0, p, k;
	u64 rounds = twin_smoke ? 150 : 5000;
	long long x2_objects, objs, slabs, order;
	struct kmem_cache *probe;
	enum sll_case which;
	int err;

	if ((icount() && !det()) || n < 2)
		return 1;
	/* cpu_partial_x2's objects: objects per slab x twice order_4's bound in slabs. */
	probe = sll_cache(twin_sll_order4 ? SLL_ORDER_4 : SLL_DEFAULT, 0);
	if (!probe)
		return -ENOMEM;
	objs = sll_knob("objs_per_slab");
	slabs = sll_cpu_partial_slabs();
	order = sll_knob("order");
	kmem_cache_destroy(probe);
	if (objs <= 0 || slabs < 0)
		return -EIO;
	if (twin_sll_order4 && order != 4) {
		TWIN_OUT("    # slub_list_lock: sll_order4=1 but the cache got order %lld (boot with slub_max_order=4 slub_min_objects=256)",
			 order);
		return -EINVAL;
	}
	x2_objects = objs * max(slabs, 1LL);
	for (which = twin_sll_order4 ? SLL_ORDER_4 : SLL_DEFAULT;
	     which < (twin_sll_order4 ? SLL_CASES : SLL_ORDER_4); which++) {
		/*
		 * 7.x has no per-CPU partial slabs (sheaves; CONFIG_SLUB_CPU_PARTIAL is gone):
		 * cpu_partial reads 0 and refuses another value, so the tuning does not exist.
		 */
		if (which == SLL_CPU_PARTIAL_X2 && slabs == 0) {
			TWIN_OUT("    # slub_list_lock: %s: not run: cpu_partial is 0 and cannot be set (no per-CPU partial slabs in %s)",
				 sll_case_names[which], kernel_name);
			continue;
		}
		last = 0;
		for (p = 0; p < ARRAY_SIZE(percents); p++) {
			k = clamp((n * percents[p] + 99) / 100, 1u, n);
			if (k == last)
				continue;
			last = k;
			err = sll_run_case("slub_list_lock", sll_case_names[which], which,
					   x2_objects, k, rounds);
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * sheaves_vs_partial's det boot: numalab runs the list_lock workload there on a cache of each
 * design (kernel/src/bench/sheaves_vs_partial.rs); Linux has one design (6.1: per-CPU partial
 * slabs, 7.x: sheaves), case "linux", the cache as Linux sizes it, at 25/50/100% of the CPUs.
 */
int sll_det_sheaves_vs_partial(void)
{
	static const unsigned int percents[] = { 25, 50, 100 };
	unsigned int n = num_online_cpus(), last = 0, p, k;
	int err;

	if (n < 2)
		return 1;
	for (p = 0; p < ARRAY_SIZE(percents); p++) {
		k = clamp((n * percents[p] + 99) / 100, 1u, n);
		if (k == last)
			continue;
		last = k;
		err = sll_run_case("sheaves_vs_partial", "linux", SLL_DEFAULT, 0, k,
				   twin_smoke ? 150 : 5000);
		if (err)
			return err;
	}
	return 0;
}
