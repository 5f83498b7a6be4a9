// SPDX-License-Identifier: GPL-2.0
/*
 * numalab_twin: numalab's experiments run with Linux's own allocators (docs/linux-twin.md).
 *
 * Loaded by the initramfs's init (linux/initramfs/init) with the numalab_twin.* words of the
 * kernel command line as parameters; prints KTAP version 1 (one suite, "bench", one case per
 * experiment, as numalab's bench suite) and BENCH lines in numalab's contract
 * (kernel/algo/src/bench.rs) plus a "kernel" field, then ends the run through QEMU's
 * isa-debug-exit port (0x10: passed, QEMU exits 33; 0x11: failed, QEMU exits 35).
 *
 * Under QEMU's -icount shift=0,sleep=off, rdtsc reads virtual time in ns, one ns per
 * executed instruction: the same clock numalab's icount boot reads (kernel/src/ktest/bench.rs).
 *
 * Parameters: bench=NAME[,NAME] (empty: every experiment), clock=icount|tsc (set by the
 * host runner: how rdtsc ticks are to be read), smoke=1 (the short variants, as numalab's
 * bench.smoke=1).
 */
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
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/fs.h>
#include <linux/topology.h>
#include <linux/atomic.h>
#include <linux/wait.h>
#include <asm/msr.h>
#include <asm/io.h>

static char *twin_bench = "";
module_param_named(bench, twin_bench, charp, 0444);
MODULE_PARM_DESC(bench, "experiments to run, comma-separated (empty: all)");
static char *twin_clock = "tsc";
module_param_named(clock, twin_clock, charp, 0444);
MODULE_PARM_DESC(clock, "icount (rdtsc counts instructions) or tsc (host time)");
static bool twin_smoke;
module_param_named(smoke, twin_smoke, bool, 0444);
MODULE_PARM_DESC(smoke, "short variants of every experiment");

/* isa-debug-exit, as numalab's -device isa-debug-exit,iobase=0xf4 */
#define DEBUG_EXIT_PORT 0xf4
#define DEBUG_EXIT_PASS 0x10
#define DEBUG_EXIT_FAIL 0x11

/* alloc_peers' sizes (kernel/src/bench/alloc_peers.rs) */
#define FAST_PAIRS 20000ULL
#define RANDOM_LIVE 1000
#define RANDOM_STEPS 20000ULL
#define BURST 256
#define BURST_ROUNDS 40ULL
#define RANDOM_SEED 0x2545f4914f6cdd1dULL

#define TWIN_OUT(fmt, ...) printk(KERN_INFO fmt "\n", ##__VA_ARGS__)

static char kernel_name[64];

static bool icount(void)
{
	return strcmp(twin_clock, "icount") == 0;
}

/* numalab's smoke_scaled: a tenth of full in a smoke run, at least floor. */
static u64 scaled(u64 full, u64 floor)
{
	u64 tenth = full / 10;

	if (!twin_smoke)
		return full;
	return tenth > floor ? tenth : floor;
}

/* XorShift64 of kernel/algo/src/rng.rs, bit for bit. */
struct xorshift64 {
	u64 state;
};

static void xorshift64_init(struct xorshift64 *r, u64 seed)
{
	r->state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

static u64 xorshift64_next(struct xorshift64 *r)
{
	r->state ^= r->state << 13;
	r->state ^= r->state >> 7;
	r->state ^= r->state << 17;
	return r->state;
}

/* "linux-6.1.192" from Debian's version string of the running kernel, else its release. */
static void set_kernel_name(void)
{
	const char *v = strstr(init_utsname()->version, "Debian ");
	size_t n = 0;

	if (v) {
		v += strlen("Debian ");
		while (v[n] && v[n] != '-' && v[n] != ' ' && n < 32)
			n++;
	}
	if (n)
		snprintf(kernel_name, sizeof(kernel_name), "linux-%.*s", (int)n, v);
	else
		snprintf(kernel_name, sizeof(kernel_name), "linux-%s", init_utsname()->release);
}

/*
 * One BENCH line: value = num / den, written as numalab's json_num writes it (an integer when
 * exact, else four decimals).
 */
static void record(const char *bench, const char *case_name, const char *metric, u64 num,
		   u64 den, const char *unit, unsigned int cpus)
{
	u64 whole = div64_u64(num, den);
	u64 rem = num - whole * den;
	char value[48];

	if (rem == 0) {
		snprintf(value, sizeof(value), "%llu", whole);
	} else {
		u64 frac = div64_u64(rem * 10000 + den / 2, den);

		if (frac >= 10000) {
			whole++;
			frac -= 10000;
		}
		snprintf(value, sizeof(value), "%llu.%04llu", whole, frac);
	}
	TWIN_OUT("BENCH {\"bench\":\"%s\",\"case\":\"%s\",\"metric\":\"%s\",\"value\":%s,"
		 "\"unit\":\"%s\",\"cpus\":%u,\"nodes\":%u,\"clock\":\"%s\",\"kernel\":\"%s\"}",
		 bench, case_name, metric, value, unit, cpus, num_possible_nodes(),
		 icount() ? "icount" : "tsc", kernel_name);
}

static const char *tick_unit(void)
{
	return icount() ? "instructions" : "cycles";
}

/* ---- alloc_peers: kmalloc and a kmem_cache, each with one object of the size held ---- */

/* fast64 through kmalloc/kfree (exported, out-of-line calls). */
static int kmalloc_fast64(u64 *ticks)
{
	void *held = kmalloc(64, GFP_ATOMIC);
	void *p;
	u64 t0, i;

	if (!held)
		return -ENOMEM;
	p = kmalloc(64, GFP_ATOMIC);
	kfree(p);
	t0 = rdtsc();
	for (i = 0; i < FAST_PAIRS; i++) {
		p = kmalloc(64, GFP_ATOMIC);
		OPTIMIZER_HIDE_VAR(p);
		kfree(p);
	}
	*ticks = rdtsc() - t0;
	kfree(held);
	return 0;
}

/* fast64 through a private 64-byte kmem_cache (kmem_cache_alloc/kmem_cache_free). */
static int cache_fast64(u64 *ticks)
{
	/* SLAB_NO_MERGE does not exist in 6.1: a constructor-less cache may merge with
	 * kmalloc-64, which is still kmem_cache_alloc's path. */
	struct kmem_cache *c = kmem_cache_create("numalab_twin_64", 64, 0, 0, NULL);
	unsigned long flags;
	void *held, *p;
	u64 t0, i;

	if (!c)
		return -ENOMEM;
	local_irq_save(flags);
	held = kmem_cache_alloc(c, GFP_ATOMIC);
	if (!held) {
		local_irq_restore(flags);
		kmem_cache_destroy(c);
		return -ENOMEM;
	}
	p = kmem_cache_alloc(c, GFP_ATOMIC);
	kmem_cache_free(c, p);
	t0 = rdtsc();
	for (i = 0; i < FAST_PAIRS; i++) {
		p = kmem_cache_alloc(c, GFP_ATOMIC);
		OPTIMIZER_HIDE_VAR(p);
		kmem_cache_free(c, p);
	}
	*ticks = rdtsc() - t0;
	kmem_cache_free(c, held);
	local_irq_restore(flags);
	kmem_cache_destroy(c);
	return 0;
}

/* random: sizes 8..4096 from XorShift64(RANDOM_SEED), 1000 live, as alloc_peers.rs. */
static int kmalloc_random(u64 *ticks)
{
	void **live = kcalloc(RANDOM_LIVE, sizeof(void *), GFP_KERNEL);
	struct xorshift64 rng;
	u64 t0, s;
	int i, err = 0;

	if (!live)
		return -ENOMEM;
	xorshift64_init(&rng, RANDOM_SEED);
	for (i = 0; i < RANDOM_LIVE; i++) {
		live[i] = kmalloc(8 + xorshift64_next(&rng) % 4089, GFP_ATOMIC);
		if (!live[i]) {
			err = -ENOMEM;
			goto out;
		}
	}
	t0 = rdtsc();
	for (s = 0; s < RANDOM_STEPS; s++) {
		u64 r = xorshift64_next(&rng);
		unsigned int k = (r >> 20) % RANDOM_LIVE;

		kfree(live[k]);
		live[k] = kmalloc(8 + r % 4089, GFP_ATOMIC);
		if (!live[k]) {
			err = -ENOMEM;
			break;
		}
	}
	*ticks = rdtsc() - t0;
out:
	for (i = 0; i < RANDOM_LIVE; i++)
		kfree(live[i]);
	kfree(live);
	return err;
}

/* burst256: 256 objects of 256 bytes allocated, then freed, 40 rounds. */
static int kmalloc_burst256(u64 *ticks)
{
	void **objs = kcalloc(BURST, sizeof(void *), GFP_KERNEL);
	u64 total = 0, t0, round;
	int i, n, err = 0;

	if (!objs)
		return -ENOMEM;
	for (round = 0; round < BURST_ROUNDS && !err; round++) {
		t0 = rdtsc();
		for (n = 0; n < BURST; n++) {
			objs[n] = kmalloc(256, GFP_ATOMIC);
			if (!objs[n])
				break;
		}
		for (i = 0; i < n; i++)
			kfree(objs[i]);
		total += rdtsc() - t0;
		if (n != BURST)
			err = -ENOMEM;
	}
	*ticks = total;
	kfree(objs);
	return err;
}

static int alloc_peers(void)
{
	unsigned long flags;
	u64 fast, cache, random, burst;
	int err;

	/* Interrupts off for the whole run, as numalab's alloc_peers. */
	local_irq_save(flags);
	err = kmalloc_fast64(&fast);
	if (!err)
		err = kmalloc_random(&random);
	if (!err)
		err = kmalloc_burst256(&burst);
	local_irq_restore(flags);
	if (err) {
		TWIN_OUT("    # alloc_peers: kmalloc: %d", err);
		return err;
	}
	/* kmem_cache_create/destroy may sleep: they run with interrupts on, the pairs without. */
	err = cache_fast64(&cache);
	if (err) {
		TWIN_OUT("    # alloc_peers: kmem_cache: %d", err);
		return err;
	}
	record("alloc_peers", "kmalloc/fast64", "instructions_per_pair", fast, FAST_PAIRS,
	       tick_unit(), 1);
	record("alloc_peers", "kmalloc/random", "instructions_per_pair", random, RANDOM_STEPS,
	       tick_unit(), 1);
	record("alloc_peers", "kmalloc/burst256", "instructions_per_pair", burst,
	       BURST_ROUNDS * BURST, tick_unit(), 1);
	record("alloc_peers", "kmem_cache/fast64", "instructions_per_pair", cache, FAST_PAIRS,
	       tick_unit(), 1);
	return 0;
}

/* ---- page_alloc: order-0 alloc_pages/__free_pages pairs on the local node ---- */

static int page_alloc(void)
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

/* ---- vmalloc_scaling: one-page vmalloc/vfree pairs on one CPU, lazy purges included ---- */

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

static int vmalloc_scaling(void)
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

/*
 * ---- memoryless_node: kernel/src/bench/memoryless_node.rs's boot-like load ----
 *
 * Every online CPU allocates per_cpu rounds of one object from each of eight private caches
 * (16..1024 bytes), every other round with kmem_cache_alloc_node(numa_node_id()) as
 * kmalloc_node callers do, and frees one round in four; then the slab memory of the eight
 * caches is read from /sys/kernel/slab/NAME/{slabs,order} while the objects are live.
 * Linux 6.1 has the memoryless-node fix (SLUB treats a node without memory as
 * NUMA_NO_NODE), so it has one case: "linux" on a machine with a memoryless node,
 * "linux_single_node" on a one-node machine. The caches are made unmergeable by declaring
 * their whole object as usercopy, so no other kernel object shares their slabs.
 */

#define ML_CACHES 8
static const unsigned int ml_sizes[ML_CACHES] = { 16, 32, 64, 128, 192, 256, 512, 1024 };

struct ml_run {
	struct kmem_cache *caches[ML_CACHES];
	unsigned int per_cpu;
	unsigned int nr_workers;
	atomic_t ready;
	atomic_t done;
	atomic_t failed;
	wait_queue_head_t wq;
};

struct ml_worker {
	struct ml_run *run;
	void **objs;
	unsigned int nr_objs;
};

static int ml_work(void *arg)
{
	struct ml_worker *w = arg;
	struct ml_run *run = w->run;
	int node = numa_node_id();
	unsigned int i, c;

	/* Start together, as numalab's barrier (yielding: a CPU may be shared with insmod). */
	atomic_inc(&run->ready);
	while (atomic_read(&run->ready) < run->nr_workers)
		cond_resched();
	for (i = 0; i < run->per_cpu; i++) {
		for (c = 0; c < ML_CACHES; c++) {
			void *o = i % 2 == 0 ? kmem_cache_alloc_node(run->caches[c], GFP_KERNEL, node) :
					       kmem_cache_alloc(run->caches[c], GFP_KERNEL);

			if (!o)
				atomic_inc(&run->failed);
			if (i % 4 == 3) {
				if (o)
					kmem_cache_free(run->caches[c], o);
			} else {
				/* Kept in cache order, NULL included: objs[j] is from cache j % 8. */
				w->objs[w->nr_objs++] = o;
			}
		}
		cond_resched();
	}
	atomic_inc(&run->done);
	wake_up(&run->wq);
	return 0;
}

/* The first number of a sysfs file such as /sys/kernel/slab/NAME/slabs, or -1. */
static long long sysfs_number(const char *path)
{
	char buf[64] = { 0 };
	struct file *f = filp_open(path, O_RDONLY, 0);
	loff_t pos = 0;
	long long v;

	if (IS_ERR(f))
		return -1;
	kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (sscanf(buf, "%lld", &v) != 1)
		return -1;
	return v;
}

static int memoryless_node(void)
{
	unsigned int nr = num_online_cpus(), cpu, k = 0, c, i;
	bool memoryless = false, single = num_online_nodes() == 1;
	struct ml_worker *workers;
	struct ml_run *run;
	u64 slab_bytes = 0;
	char path[96];
	int node, err = 0;

	if (icount())
		return 1;
	for_each_online_node(node)
		memoryless |= !node_state(node, N_MEMORY) && nr_cpus_node(node) > 0;
	if (!memoryless && !single)
		return 1;
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	workers = kcalloc(nr, sizeof(*workers), GFP_KERNEL);
	if (!run || !workers) {
		err = -ENOMEM;
		goto out;
	}
	run->per_cpu = twin_smoke ? 400 : 4000;
	run->nr_workers = nr;
	init_waitqueue_head(&run->wq);
	for (c = 0; c < ML_CACHES; c++) {
		char name[32];

		snprintf(name, sizeof(name), "numalab_ml_%u", ml_sizes[c]);
		run->caches[c] = kmem_cache_create_usercopy(name, ml_sizes[c], 0, 0, 0,
							    ml_sizes[c], NULL);
		if (!run->caches[c]) {
			err = -ENOMEM;
			goto out;
		}
	}
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		workers[k].run = run;
		workers[k].objs = kvmalloc_array(run->per_cpu * ML_CACHES, sizeof(void *),
						 GFP_KERNEL);
		if (!workers[k].objs) {
			err = -ENOMEM;
			break;
		}
		t = kthread_create_on_cpu(ml_work, &workers[k], cpu, "numalab_ml/%u");
		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			break;
		}
		wake_up_process(t);
		k++;
	}
	if (err) {
		/* Workers already started wait for the others forever: give up the run. */
		run->nr_workers = k;
	}
	wait_event(run->wq, atomic_read(&run->done) == k);
	for (c = 0; c < ML_CACHES && !err; c++) {
		long long slabs, order;

		snprintf(path, sizeof(path), "/sys/kernel/slab/numalab_ml_%u/slabs", ml_sizes[c]);
		slabs = sysfs_number(path);
		snprintf(path, sizeof(path), "/sys/kernel/slab/numalab_ml_%u/order", ml_sizes[c]);
		order = sysfs_number(path);
		if (slabs < 0 || order < 0) {
			TWIN_OUT("    # memoryless_node: cannot read %s", path);
			err = -EIO;
		} else {
			slab_bytes += (u64)slabs * (PAGE_SIZE << order);
		}
	}
	if (!err && atomic_read(&run->failed)) {
		TWIN_OUT("    # memoryless_node: %d allocations failed", atomic_read(&run->failed));
		err = -ENOMEM;
	}
	if (!err)
		record("memoryless_node", single ? "linux_single_node" : "linux", "slab_kib",
		       slab_bytes / 1024, 1, "kib", nr);
out:
	for (k = 0; workers && run && k < nr; k++) {
		for (i = 0; i < workers[k].nr_objs; i++)
			if (workers[k].objs[i])
				kmem_cache_free(run->caches[i % ML_CACHES], workers[k].objs[i]);
		kvfree(workers[k].objs);
	}
	for (c = 0; run && c < ML_CACHES; c++)
		kmem_cache_destroy(run->caches[c]);
	kfree(workers);
	kfree(run);
	return err;
}

/* ---- KTAP around the experiments, as numalab's bench suite ---- */

struct experiment {
	const char *name;
	/* 0: passed; 1: skipped here (why in skip_reason); negative: failed */
	int (*run)(void);
	const char *skip_reason;
};

static const struct experiment experiments[] = {
	{ "alloc_peers", alloc_peers, "" },
	{ "page_alloc", page_alloc, "instruction counts: runs in the icount boot" },
	{ "vmalloc_scaling", vmalloc_scaling, "instruction counts: runs in the icount boot" },
	{ "memoryless_node", memoryless_node,
	  "memory experiment: runs in the multi-CPU boot of a memoryless or one-node machine" },
};

static bool selected(const char *name)
{
	size_t len = strlen(name);
	const char *s = twin_bench;

	if (!*s)
		return true;
	while (*s) {
		const char *end = strchrnul(s, ',');

		if ((size_t)(end - s) == len && strncmp(s, name, len) == 0)
			return true;
		s = *end ? end + 1 : end;
	}
	return false;
}

/* Every name in bench= must be a mirrored experiment (numalab's bench.plan rule). */
static bool unknown_selection(char *bad, size_t size)
{
	const char *s = twin_bench;
	size_t i;

	while (*s) {
		const char *end = strchrnul(s, ',');
		bool known = end == s;

		for (i = 0; i < ARRAY_SIZE(experiments); i++)
			known |= strlen(experiments[i].name) == (size_t)(end - s) &&
				 !strncmp(experiments[i].name, s, end - s);
		if (!known) {
			snprintf(bad, size, "%.*s", (int)(end - s), s);
			return true;
		}
		s = *end ? end + 1 : end;
	}
	return false;
}

static int __init numalab_twin_init(void)
{
	unsigned int pass = 0, fail = 0, skip = 0, n = 0, i, k;
	char bad[64];
	bool bad_selection;

	set_kernel_name();
	for (i = 0; i < ARRAY_SIZE(experiments); i++)
		n += selected(experiments[i].name);
	bad_selection = unknown_selection(bad, sizeof(bad));
	TWIN_OUT("KTAP version 1");
	TWIN_OUT("1..1");
	TWIN_OUT("    KTAP version 1");
	TWIN_OUT("    # Subtest: bench");
	TWIN_OUT("    1..%u", n + 1);
	TWIN_OUT("# bench: registered alloc_peers page_alloc vmalloc_scaling memoryless_node");
	TWIN_OUT("# bench: clock=%s smoke=%d cpus_online=%u nodes=%u selected=%s kernel=%s",
		 icount() ? "icount" : "tsc", twin_smoke, num_online_cpus(), num_possible_nodes(),
		 *twin_bench ? twin_bench : "all", kernel_name);
	if (bad_selection) {
		TWIN_OUT("    not ok 1 plan # bench=%s: no such experiment in numalab_twin", bad);
		fail++;
	} else {
		TWIN_OUT("    ok 1 plan");
		pass++;
	}
	for (i = 0, k = 2; i < ARRAY_SIZE(experiments); i++) {
		const struct experiment *e = &experiments[i];
		int r;

		if (!selected(e->name))
			continue;
		TWIN_OUT("    # %s: running", e->name);
		r = e->run();
		if (r == 0) {
			TWIN_OUT("    ok %u %s", k, e->name);
			pass++;
		} else if (r > 0) {
			TWIN_OUT("    ok %u %s # SKIP %s", k, e->name, e->skip_reason);
			skip++;
		} else {
			TWIN_OUT("    not ok %u %s # error %d", k, e->name, r);
			fail++;
		}
		k++;
	}
	TWIN_OUT("# bench: pass:%u fail:%u skip:%u total:%u", pass, fail, skip, pass + fail + skip);
	TWIN_OUT("%s 1 bench", fail ? "not ok" : "ok");
	TWIN_OUT("# Totals: pass:%u fail:%u skip:%u total:%u", pass, fail, skip,
		 pass + fail + skip);
	outb(fail ? DEBUG_EXIT_FAIL : DEBUG_EXIT_PASS, DEBUG_EXIT_PORT);
	/* Only reached without isa-debug-exit: stay loaded, init reports the failure. */
	return -EIO;
}

static void __exit numalab_twin_exit(void)
{
}

module_init(numalab_twin_init);
module_exit(numalab_twin_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("numalab's experiments on Linux's own allocators");
