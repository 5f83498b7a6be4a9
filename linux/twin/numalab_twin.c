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
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/fs.h>
#include <linux/topology.h>
#include <linux/atomic.h>
#include <linux/wait.h>
#include <linux/spinlock.h>
#include <linux/cpumask.h>
#include <asm/tsc.h>
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
static bool twin_sll_order4;
module_param_named(sll_order4, twin_sll_order4, bool, 0444);
MODULE_PARM_DESC(sll_order4,
		 "slub_list_lock: run the order_4 and cpu_partial_x2 tunings (a boot with slub_max_order=4 slub_min_objects=256)");

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
 * One BENCH line: value = num / den, negated when negative is set, written as numalab's
 * json_num writes it (an integer when exact, else four decimals).
 */
static void record_signed(const char *bench, const char *case_name, const char *metric,
			  bool negative, u64 num, u64 den, const char *unit, unsigned int cpus)
{
	u64 whole = div64_u64(num, den);
	u64 rem = num - whole * den;
	char value[48];

	if (rem == 0) {
		snprintf(value, sizeof(value), "%s%llu", negative && num ? "-" : "", whole);
	} else {
		u64 frac = div64_u64(rem * 10000 + den / 2, den);

		if (frac >= 10000) {
			whole++;
			frac -= 10000;
		}
		snprintf(value, sizeof(value), "%s%llu.%04llu", negative ? "-" : "", whole, frac);
	}
	TWIN_OUT("BENCH {\"bench\":\"%s\",\"case\":\"%s\",\"metric\":\"%s\",\"value\":%s,"
		 "\"unit\":\"%s\",\"cpus\":%u,\"nodes\":%u,\"clock\":\"%s\",\"kernel\":\"%s\"}",
		 bench, case_name, metric, value, unit, cpus, num_possible_nodes(),
		 icount() ? "icount" : "tsc", kernel_name);
}

/* A non-negative BENCH value num / den. */
static void record(const char *bench, const char *case_name, const char *metric, u64 num,
		   u64 den, const char *unit, unsigned int cpus)
{
	record_signed(bench, case_name, metric, false, num, den, unit, cpus);
}

static const char *tick_unit(void)
{
	return icount() ? "instructions" : "cycles";
}

/*
 * ---- alloc_peers: kmalloc and a kmem_cache, measured as kernel/src/bench/alloc_peers.rs ----
 *
 * The same measurement as numalab's: interrupts on during the timed loops; one object of the
 * workload's size class held before timing (random keeps its 1000 live objects instead); every
 * call out of line (Linux's exported kmalloc/kfree/kmem_cache_*, as numalab's #[inline(never)]
 * entry points); and the same loops around empty out-of-line functions (the harness: the loop,
 * the calls and the bookkeeping, numalab's OutOfLine(Empty)) measured first, printed as
 * harness/WORKLOAD with metric harness_instructions_per_pair, and subtracted from every
 * figure. GFP_ATOMIC as before: nothing may sleep in the loops. SLUB's fast path does not
 * disable interrupts (this_cpu_cmpxchg_double), so turning them on changes only what the
 * timer ticks add, as in numalab's figures.
 */

/* Which allocator a loop calls; a constant at every call, so each loop has direct calls. */
enum ap_peer { AP_EMPTY, AP_KMALLOC, AP_CACHE };

/* What the empty allocator hands out; only its address is used. */
static u64 ap_sink[512];

/*
 * numalab's Empty behind OutOfLine: a real call that returns a static pointer. noinline and
 * noipa keep GCC from inlining, cloning or dropping the call; the barrier from treating the
 * function as pure.
 */
static noinline __noipa void *ap_empty_alloc(size_t size, gfp_t flags)
{
	void *p = ap_sink;

	OPTIMIZER_HIDE_VAR(p);
	barrier();
	return p;
}

/* The empty free: a real call that does nothing. */
static noinline __noipa void ap_empty_free(const void *p)
{
	OPTIMIZER_HIDE_VAR(p);
	barrier();
}

static __always_inline void *ap_alloc(enum ap_peer peer, struct kmem_cache *c, size_t size)
{
	switch (peer) {
	case AP_EMPTY:
		return ap_empty_alloc(size, GFP_ATOMIC);
	case AP_KMALLOC:
		return kmalloc(size, GFP_ATOMIC);
	default:
		return kmem_cache_alloc(c, GFP_ATOMIC);
	}
}

static __always_inline void ap_free(enum ap_peer peer, struct kmem_cache *c, void *p)
{
	switch (peer) {
	case AP_EMPTY:
		ap_empty_free(p);
		break;
	case AP_KMALLOC:
		kfree(p);
		break;
	default:
		kmem_cache_free(c, p);
	}
}

/* fast64: one 64-byte object held, then FAST_PAIRS alloc+free pairs of 64 bytes. */
static __always_inline int ap_fast64(enum ap_peer peer, struct kmem_cache *c, u64 *ticks)
{
	void *held = ap_alloc(peer, c, 64), *p;
	u64 t0, i;

	if (!held)
		return -ENOMEM;
	p = ap_alloc(peer, c, 64);
	if (!p) {
		ap_free(peer, c, held);
		return -ENOMEM;
	}
	ap_free(peer, c, p);
	preempt_disable();
	t0 = rdtsc();
	for (i = 0; i < FAST_PAIRS; i++) {
		p = ap_alloc(peer, c, 64);
		if (!p)
			break;
		OPTIMIZER_HIDE_VAR(p);
		ap_free(peer, c, p);
	}
	*ticks = rdtsc() - t0;
	preempt_enable();
	ap_free(peer, c, held);
	return i == FAST_PAIRS ? 0 : -ENOMEM;
}

/* random: sizes 8..4096 from XorShift64(RANDOM_SEED), 1000 live, RANDOM_STEPS replacements. */
static __always_inline int ap_random(enum ap_peer peer, u64 *ticks)
{
	void **live = kcalloc(RANDOM_LIVE, sizeof(void *), GFP_KERNEL);
	struct xorshift64 rng;
	u64 t0, s;
	int i, err = 0;

	if (!live)
		return -ENOMEM;
	xorshift64_init(&rng, RANDOM_SEED);
	for (i = 0; i < RANDOM_LIVE; i++) {
		live[i] = ap_alloc(peer, NULL, 8 + xorshift64_next(&rng) % 4089);
		if (!live[i]) {
			err = -ENOMEM;
			goto out;
		}
	}
	preempt_disable();
	t0 = rdtsc();
	for (s = 0; s < RANDOM_STEPS; s++) {
		u64 r = xorshift64_next(&rng);
		unsigned int k = (r >> 20) % RANDOM_LIVE;

		ap_free(peer, NULL, live[k]);
		live[k] = ap_alloc(peer, NULL, 8 + r % 4089);
		if (!live[k]) {
			err = -ENOMEM;
			break;
		}
	}
	*ticks = rdtsc() - t0;
	preempt_enable();
out:
	for (i = 0; i < RANDOM_LIVE; i++)
		if (live[i])
			ap_free(peer, NULL, live[i]);
	kfree(live);
	return err;
}

/* burst: one object of `size` held, then 40 rounds of 256 allocations and 256 frees. */
static __always_inline int ap_burst(enum ap_peer peer, struct kmem_cache *c, size_t size,
				    u64 *ticks)
{
	void *held = ap_alloc(peer, c, size);
	void **objs = kcalloc(BURST, sizeof(void *), GFP_KERNEL);
	u64 total = 0, t0, round;
	int i, n, err = 0;

	if (!held || !objs) {
		err = -ENOMEM;
		goto out;
	}
	preempt_disable();
	for (round = 0; round < BURST_ROUNDS; round++) {
		t0 = rdtsc();
		for (n = 0; n < BURST; n++) {
			objs[n] = ap_alloc(peer, c, size);
			if (!objs[n])
				break;
		}
		for (i = 0; i < n; i++)
			ap_free(peer, c, objs[i]);
		total += rdtsc() - t0;
		if (n != BURST) {
			err = -ENOMEM;
			break;
		}
	}
	preempt_enable();
	*ticks = total;
out:
	if (held)
		ap_free(peer, c, held);
	kfree(objs);
	return err;
}

/* burst256: the burst of 256-byte kmalloc objects (or the harness). */
static __always_inline int ap_burst256(enum ap_peer peer, u64 *ticks)
{
	return ap_burst(peer, NULL, 256, ticks);
}

enum { AP_FAST64, AP_RANDOM, AP_BURST256, AP_WORKLOADS };
static const char *const ap_workloads[AP_WORKLOADS] = { "fast64", "random", "burst256" };
static const u64 ap_pairs[AP_WORKLOADS] = { FAST_PAIRS, RANDOM_STEPS, BURST_ROUNDS * BURST };

/* The three workloads on the empty allocator (harness) or kmalloc; 0 or the first error. */
static __always_inline int ap_run(enum ap_peer peer, u64 ticks[AP_WORKLOADS])
{
	int err = ap_fast64(peer, NULL, &ticks[AP_FAST64]);

	if (!err)
		err = ap_random(peer, &ticks[AP_RANDOM]);
	if (!err)
		err = ap_burst256(peer, &ticks[AP_BURST256]);
	return err;
}

/* One figure of `bench`: (ticks - harness) / pairs, as numalab's emit (v - h). */
static void ap_record_in(const char *bench, const char *allocator, int w, u64 ticks, u64 harness)
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

static int alloc_peers(void)
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

/*
 * ---- sheaves_vs_partial: alloc_peers' three workloads on private caches, one design ----
 *
 * numalab runs them on kmalloc-like private caches of each design (partial, sheaves) side by
 * side; a Linux kernel has one design (6.1: per-CPU partial slabs; 7.x: sheaves for every
 * cache). fast64 and burst256 run on private unmergeable caches of 64 and 256 bytes (a
 * whole-object usercopy region, which slab_unmergeable() refuses to merge); random's sizes
 * 8..4096 run on kmalloc's caches. The harness (the same loops around the empty functions) is
 * measured here again and subtracted. Instruction counts: the icount boot only.
 */
static struct kmem_cache *private_cache(const char *name, unsigned int size)
{
	return kmem_cache_create_usercopy(name, size, 0, 0, 0, size, NULL);
}

static int sheaves_vs_partial(void)
{
	u64 harness[AP_WORKLOADS], ticks[AP_WORKLOADS];
	struct kmem_cache *c64, *c256;
	int err, w;

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

/*
 * ---- memoryless_sheaves: the burst on a private 64-byte cache, on the boot CPU ----
 *
 * As kernel/src/bench/memoryless_sheaves.rs's icount boot: one CPU (on the 8node-2mem preset
 * it sits on node 0, which has no memory), 40 rounds of 256 allocations and 256 frees of a
 * private 64-byte cache, less the burst harness; instructions_per_pair and its inverse
 * pairs_per_kinstruction (higher is better, as the thread's IOPS). The sheaf counters numalab
 * prints (sheaf_fraction_*, slab_path_per_kop) need CONFIG_SLUB_STATS, which Debian's configs
 * lack. Also prints the cache's sheaf_capacity where sysfs has it (7.x).
 */
static long long sysfs_number(const char *path);

static int memoryless_sheaves(void)
{
	u64 harness, ticks, per_kilo, net;
	struct kmem_cache *c;
	long long cap;
	int err;

	if (!icount())
		return 1;
	err = ap_burst(AP_EMPTY, NULL, 64, &harness);
	if (err)
		return err;
	c = private_cache("numalab_mls_64", 64);
	if (!c)
		return -ENOMEM;
	err = ap_burst(AP_CACHE, c, 64, &ticks);
	cap = sysfs_number("/sys/kernel/slab/numalab_mls_64/sheaf_capacity");
	kmem_cache_destroy(c);
	if (err) {
		TWIN_OUT("    # memoryless_sheaves: %d", err);
		return err;
	}
	TWIN_OUT("# bench: memoryless_sheaves: cpu %d on node %d (%s), sheaf_capacity %lld (-1: no such file)",
		 smp_processor_id(), numa_node_id(),
		 node_state(numa_node_id(), N_MEMORY) ? "with memory" : "memoryless", cap);
	record_signed("memoryless_sheaves", "linux", "instructions_per_pair", ticks < harness,
		      ticks < harness ? harness - ticks : ticks - harness,
		      BURST_ROUNDS * BURST, tick_unit(), 1);
	if (ticks <= harness)
		return -ERANGE;
	/* 1000 / (net / pairs) = 1000 * pairs / net */
	net = ticks - harness;
	per_kilo = 1000 * BURST_ROUNDS * BURST;
	record("memoryless_sheaves", "linux", "pairs_per_kinstruction", per_kilo, net, "pairs", 1);
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

	if (IS_ERR(f)) {
		pr_info_once("numalab_twin: cannot open %s: %ld\n", path, PTR_ERR(f));
		return -1;
	}
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

	atomic_inc(&run->ready);
	while (atomic_read(&run->ready) < run->k)
		cond_resched();
	if (w->me == 0)
		atomic64_set(&run->start, rdtsc());
	for (round = 0; round < run->rounds; round++) {
		void *give = NULL, *got;

		n = kmem_cache_alloc_bulk(run->cache, GFP_KERNEL, SLL_BATCH, batch);
		/* 7.x's sheaves may hand out fewer than asked (what the CPU's sheaf held): ask
		 * again for the rest; only a call that returns nothing is a failure. */
		while (n > 0 && n < SLL_BATCH) {
			int more = kmem_cache_alloc_bulk(run->cache, GFP_KERNEL, SLL_BATCH - n,
							 batch + n);

			if (!more)
				break;
			n += more;
		}
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

static int sll_run_case(enum sll_case which, long long x2_objects, unsigned int k, u64 rounds)
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
	TWIN_OUT("# slub_list_lock: case %s cpus %u: slab order %lld, %lld objects/slab, min_partial %lld, cpu_partial %lld objects = %lld slabs",
		 sll_case_names[which], k, sll_knob("order"), sll_knob("objs_per_slab"),
		 sll_knob("min_partial"), sll_knob("cpu_partial"), sll_cpu_partial_slabs());
	for (i = 0; i < k; i++)
		spin_lock_init(&run->boxes[i].lock);
	run->k = k;
	run->rounds = rounds;
	init_waitqueue_head(&run->wq);
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
		record("slub_list_lock", sll_case_names[which], "ops_per_cpu",
		       ops * (u64)tsc_khz * 1000, ticks * k, "ops/s", k);
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

static int slub_list_lock(void)
{
	static const unsigned int percents[] = { 25, 50, 100 };
	unsigned int n = num_online_cpus(), last = 0, p, k;
	u64 rounds = twin_smoke ? 150 : 5000;
	long long x2_objects, objs, slabs, order;
	struct kmem_cache *probe;
	enum sll_case which;
	int err;

	if (icount() || n < 2)
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
			err = sll_run_case(which, x2_objects, k, rounds);
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * ---- numa_locality: kernel/src/bench/numa_locality.rs's workload ----
 *
 * Every node with CPUs gets a role by the rank of its CPUs' memory node (the node itself, or
 * its nearest node with memory when it has none) among the CPUs' memory nodes: even ranks are
 * message nodes, odd ranks growth nodes. Rounds of two phases separated by barriers:
 * - phase 1: each message CPU allocates NL_BURST 128-byte objects from a private cache and
 *   sends them to the next CPU of its memory node (itself when alone there), which frees three
 *   in four and keeps one in four in a reservoir of NL_RESERVOIR (a random old one freed when
 *   it is full): long-lived objects leave the message nodes' slabs partially used;
 * - phase 2: each growth CPU allocates NL_HOLD objects and frees them all: past its CPU and
 *   local partial slabs it needs slabs, remote partial ones (Linux's get_any_partial) or new
 *   local ones.
 * The same sizes, rounds and random sequence (numalab's Rng, xorshift64*, seeded
 * 0x5eed0004 + participant index) as numalab's. Linux 6.1 has no prefer_local knob: its one
 * case, "linux", faces numalab's default (and, for reference, prefer_local).
 * Metrics: local_object_fraction (allocations whose page is on the allocating CPU's memory
 * node, page_to_nid(virt_to_page(obj)), all CPUs), growth_local_object_fraction (the growth
 * CPUs only) and slab_kib (the most memory the cache held in slab pages, sampled where
 * numalab samples: /sys/kernel/slab/NAME/slabs x PAGE_SIZE << order). numalab's SLUB event
 * counters (alloc_prefer_local, alloc_remote_partial, alloc_slab) have no counterpart in
 * Debian's config (no SLUB_STATS) and are not printed.
 */

#define NL_NAME "numalab_nl"
#define NL_MSG_BYTES 128
#define NL_BURST 512
#define NL_KEEP_ONE_IN 4
#define NL_RESERVOIR 1024
#define NL_HOLD 1024
#define NL_SEED 0x5eed0004ULL

/* Rng (xorshift64*) of kernel/algo/src/rng.rs, bit for bit. */
struct xorshift64star {
	u64 state;
};

static void xorshift64star_init(struct xorshift64star *r, u64 seed)
{
	r->state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

/* A number in 0..n (0 when n is 0), as Rng::below. */
static u64 xorshift64star_below(struct xorshift64star *r, u64 n)
{
	r->state ^= r->state >> 12;
	r->state ^= r->state << 25;
	r->state ^= r->state >> 27;
	return (r->state * 0x2545f4914f6cdd1dULL) % (n ? n : 1);
}

/* Objects handed to a participant, for it to free (numalab's Mailboxes). */
struct nl_box {
	spinlock_t lock;
	unsigned int n;
	void *objs[NL_BURST];
};

struct nl_run {
	struct kmem_cache *cache;
	struct nl_box *boxes;
	unsigned int nr; /* participants, one per online CPU */
	unsigned int rounds;
	int *mem_node; /* per participant: the CPU's memory node */
	int *send_to; /* per participant: a message CPU's receiver, -1 on a growth CPU */
	atomic_t arrived; /* the phase barrier */
	atomic64_t local, total, grow_local, grow_total, peak_bytes;
	atomic_t done, failed;
	wait_queue_head_t wq;
};

struct nl_worker {
	struct nl_run *run;
	unsigned int me;
	struct task_struct *task;
	void **out, **inbox, **kept, **held;
};

/* numalab's PhaseBarrier: each participant calls it once per phase, in order. */
static void nl_wait(struct nl_run *run, unsigned int phase)
{
	atomic_inc(&run->arrived);
	while (atomic_read(&run->arrived) < (int)(run->nr * (phase + 1)))
		cond_resched();
}

/* The memory a node's CPUs allocate from: the node, or its nearest node with memory. */
static int nl_mem_node(int node)
{
	int best = NUMA_NO_NODE, n;

	if (node_state(node, N_MEMORY))
		return node;
	for_each_node_state(n, N_MEMORY)
		if (best == NUMA_NO_NODE || node_distance(node, n) < node_distance(node, best))
			best = n;
	return best == NUMA_NO_NODE ? node : best;
}

/* The cache's slab memory now: slabs x PAGE_SIZE << order from sysfs, 0 when unreadable. */
/*
 * The cache's slabs and order files, opened by the module's own thread: the workers are
 * kthreads, and on 7.x their filp_open of /sys/kernel/slab/... fails (-ENOENT) where the
 * module's thread (insmod's) opens it: their root is not the initramfs'. A seq_file read at
 * position 0 shows the current value again.
 */
static struct file *nl_slabs_file, *nl_order_file;

static long long file_number(struct file *f)
{
	char buf[64] = { 0 };
	loff_t pos = 0;
	long long v;

	if (IS_ERR_OR_NULL(f))
		return -1;
	kernel_read(f, buf, sizeof(buf) - 1, &pos);
	if (sscanf(buf, "%lld", &v) != 1)
		return -1;
	return v;
}

static u64 nl_slab_bytes(void)
{
	long long slabs = file_number(nl_slabs_file);
	long long order = file_number(nl_order_file);

	if (slabs < 0 || order < 0)
		return 0;
	return (u64)slabs * (PAGE_SIZE << order);
}

static void nl_sample(struct nl_run *run)
{
	u64 now = nl_slab_bytes(), prev = atomic64_read(&run->peak_bytes);

	while (now > prev) {
		u64 old = atomic64_cmpxchg(&run->peak_bytes, prev, now);

		if (old == prev)
			break;
		prev = old;
	}
}

static void *nl_alloc(struct nl_run *run, int my_node, u64 *my_local)
{
	void *o = kmem_cache_alloc(run->cache, GFP_KERNEL);

	if (!o) {
		atomic_inc(&run->failed);
		return NULL;
	}
	if (page_to_nid(virt_to_page(o)) == my_node)
		(*my_local)++;
	return o;
}

static int nl_work(void *arg)
{
	struct nl_worker *w = arg;
	struct nl_run *run = w->run;
	int my_node = run->mem_node[w->me], to = run->send_to[w->me];
	u64 my_local = 0, done = 0, checksum = 0;
	unsigned int phase = 0, round, nkept = 0, n, i;
	struct xorshift64star rng;

	xorshift64star_init(&rng, NL_SEED + w->me);
	nl_wait(run, phase++);
	for (round = 0; round < run->rounds; round++) {
		/* Phase 1: a burst inside the node; the receiver frees 3 in 4, keeps 1 in 4. */
		if (to >= 0) {
			struct nl_box *box = &run->boxes[to];

			for (n = 0; n < NL_BURST; n++) {
				void *msg = nl_alloc(run, my_node, &my_local);

				if (!msg)
					break;
				*(u64 *)msg = done++;
				w->out[n] = msg;
			}
			spin_lock(&box->lock);
			for (i = 0; i < n; i++)
				box->objs[box->n++] = w->out[i];
			spin_unlock(&box->lock);
		}
		nl_wait(run, phase++);
		spin_lock(&run->boxes[w->me].lock);
		n = run->boxes[w->me].n;
		memcpy(w->inbox, run->boxes[w->me].objs, n * sizeof(void *));
		run->boxes[w->me].n = 0;
		spin_unlock(&run->boxes[w->me].lock);
		for (i = 0; i < n; i++) {
			void *msg = w->inbox[i];

			checksum += *(u64 *)msg;
			if (xorshift64star_below(&rng, NL_KEEP_ONE_IN) != 0) {
				kmem_cache_free(run->cache, msg);
			} else if (nkept < NL_RESERVOIR) {
				w->kept[nkept++] = msg;
			} else {
				u64 slot = xorshift64star_below(&rng, NL_RESERVOIR);

				kmem_cache_free(run->cache, w->kept[slot]);
				w->kept[slot] = msg;
			}
		}
		nl_sample(run);
		nl_wait(run, phase++);
		/* Phase 2: growth CPUs fill a cache of NL_HOLD objects and drop it. */
		if (to < 0) {
			for (n = 0; n < NL_HOLD; n++) {
				void *o = nl_alloc(run, my_node, &my_local);

				if (!o)
					break;
				*(u64 *)o = done++;
				w->held[n] = o;
			}
			nl_sample(run);
			for (i = 0; i < n; i++) {
				checksum += *(u64 *)w->held[i];
				kmem_cache_free(run->cache, w->held[i]);
			}
		}
		nl_wait(run, phase++);
	}
	for (i = 0; i < nkept; i++)
		kmem_cache_free(run->cache, w->kept[i]);
	if (to < 0) {
		atomic64_add(my_local, &run->grow_local);
		atomic64_add(done, &run->grow_total);
	}
	atomic64_add(my_local, &run->local);
	atomic64_add(done, &run->total);
	OPTIMIZER_HIDE_VAR(checksum);
	atomic_inc(&run->done);
	wake_up(&run->wq);
	return 0;
}

static int numa_locality(void)
{
	unsigned int nr = num_online_cpus(), cpu, k, j, grow = 0, started = 0;
	nodemask_t mem_nodes = NODE_MASK_NONE;
	struct nl_worker *workers = NULL;
	struct nl_run *run = NULL;
	int *cpu_of = NULL;
	int err = 0, n;

	if (icount() || nr < 2)
		return 1;
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	workers = kcalloc(nr, sizeof(*workers), GFP_KERNEL);
	cpu_of = kcalloc(nr, sizeof(*cpu_of), GFP_KERNEL);
	if (!run || !workers || !cpu_of) {
		err = -ENOMEM;
		goto out;
	}
	run->mem_node = kcalloc(nr, sizeof(int), GFP_KERNEL);
	run->send_to = kcalloc(nr, sizeof(int), GFP_KERNEL);
	run->boxes = kvcalloc(nr, sizeof(*run->boxes), GFP_KERNEL);
	if (!run->mem_node || !run->send_to || !run->boxes) {
		err = -ENOMEM;
		goto out;
	}
	k = 0;
	for_each_online_cpu(cpu) {
		if (k == nr)
			break;
		cpu_of[k] = cpu;
		run->mem_node[k] = nl_mem_node(cpu_to_node(cpu));
		node_set(run->mem_node[k], mem_nodes);
		k++;
	}
	nr = k;
	/* Roles: the rank of the CPU's memory node among the CPUs' memory nodes. */
	for (k = 0; k < nr; k++) {
		int rank = 0;

		for_each_node_mask(n, mem_nodes) {
			if (n == run->mem_node[k])
				break;
			rank++;
		}
		run->send_to[k] = -1;
		if (rank % 2 == 1) {
			grow++;
			continue;
		}
		/* The next participant of the same memory node, wrapping (itself when alone). */
		for (j = 1; j <= nr; j++) {
			unsigned int next = (k + j) % nr;

			if (run->mem_node[next] == run->mem_node[k]) {
				run->send_to[k] = next;
				break;
			}
		}
	}
	if (grow == 0) {
		err = 1;
		goto out;
	}
	run->nr = nr;
	run->rounds = twin_smoke ? 4 : 24;
	init_waitqueue_head(&run->wq);
	run->cache = kmem_cache_create_usercopy(NL_NAME, NL_MSG_BYTES, 0, 0, 0, NL_MSG_BYTES,
						NULL);
	if (!run->cache) {
		err = -ENOMEM;
		goto out;
	}
	TWIN_OUT("# numa_locality: case linux: slab order %lld, %lld objects/slab, min_partial %lld, cpu_partial %lld objects; %u message CPUs, %u growth CPUs, %u rounds",
		 sysfs_number("/sys/kernel/slab/" NL_NAME "/order"),
		 sysfs_number("/sys/kernel/slab/" NL_NAME "/objs_per_slab"),
		 sysfs_number("/sys/kernel/slab/" NL_NAME "/min_partial"),
		 sysfs_number("/sys/kernel/slab/" NL_NAME "/cpu_partial"), nr - grow, grow,
		 run->rounds);
	nl_slabs_file = filp_open("/sys/kernel/slab/" NL_NAME "/slabs", O_RDONLY, 0);
	nl_order_file = filp_open("/sys/kernel/slab/" NL_NAME "/order", O_RDONLY, 0);
	for (k = 0; k < nr; k++) {
		spin_lock_init(&run->boxes[k].lock);
		workers[k].run = run;
		workers[k].me = k;
		workers[k].out = kvmalloc_array(NL_BURST, sizeof(void *), GFP_KERNEL);
		workers[k].inbox = kvmalloc_array(NL_BURST, sizeof(void *), GFP_KERNEL);
		workers[k].kept = kvmalloc_array(NL_RESERVOIR, sizeof(void *), GFP_KERNEL);
		workers[k].held = kvmalloc_array(NL_HOLD, sizeof(void *), GFP_KERNEL);
		if (!workers[k].out || !workers[k].inbox || !workers[k].kept || !workers[k].held)
			err = -ENOMEM;
	}
	for (k = 0; k < nr && !err; k++) {
		struct task_struct *t = kthread_create_on_cpu(nl_work, &workers[k], cpu_of[k],
							      "numalab_nl/%u");

		if (IS_ERR(t)) {
			err = PTR_ERR(t);
			break;
		}
		workers[k].task = t;
		started++;
	}
	if (err) {
		/* None has been woken: stopped before it runs, none waits at a barrier. */
		for (k = 0; k < started; k++)
			kthread_stop(workers[k].task);
		TWIN_OUT("    # numa_locality: cannot start the workers: %d", err);
		goto out;
	}
	/* All created before any runs: the barrier counts every participant. */
	for (k = 0; k < nr; k++)
		wake_up_process(workers[k].task);
	wait_event(run->wq, atomic_read(&run->done) == (int)nr);
	if (atomic_read(&run->failed)) {
		TWIN_OUT("    # numa_locality: %d allocations failed", atomic_read(&run->failed));
		err = -ENOMEM;
		goto out;
	}
	if (!atomic64_read(&run->peak_bytes)) {
		TWIN_OUT("    # numa_locality: cannot read /sys/kernel/slab/%s/{slabs,order}: %lld, %lld",
			 NL_NAME, sysfs_number("/sys/kernel/slab/" NL_NAME "/slabs"),
			 sysfs_number("/sys/kernel/slab/" NL_NAME "/order"));
		err = -EIO;
		goto out;
	}
	record("numa_locality", "linux", "local_object_fraction", atomic64_read(&run->local),
	       max_t(u64, atomic64_read(&run->total), 1), "fraction", nr);
	record("numa_locality", "linux", "growth_local_object_fraction",
	       atomic64_read(&run->grow_local), max_t(u64, atomic64_read(&run->grow_total), 1),
	       "fraction", nr);
	record("numa_locality", "linux", "slab_kib", atomic64_read(&run->peak_bytes) / 1024, 1,
	       "kib", nr);
out:
	if (!IS_ERR_OR_NULL(nl_slabs_file))
		filp_close(nl_slabs_file, NULL);
	if (!IS_ERR_OR_NULL(nl_order_file))
		filp_close(nl_order_file, NULL);
	nl_slabs_file = NULL;
	nl_order_file = NULL;
	if (run && run->cache)
		kmem_cache_destroy(run->cache);
	for (k = 0; workers && k < nr; k++) {
		kvfree(workers[k].out);
		kvfree(workers[k].inbox);
		kvfree(workers[k].kept);
		kvfree(workers[k].held);
	}
	if (run) {
		kfree(run->mem_node);
		kfree(run->send_to);
		kvfree(run->boxes);
	}
	kfree(run);
	kfree(workers);
	kfree(cpu_of);
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
	{ "slub_list_lock", slub_list_lock,
	  "contention experiment: runs in the multi-CPU (tsc) boot" },
	{ "numa_locality", numa_locality,
	  "locality experiment: runs in the multi-CPU (tsc) boot, CPUs on two or more memory nodes" },
	{ "sheaves_vs_partial", sheaves_vs_partial, "instruction counts: runs in the icount boot" },
	{ "memoryless_sheaves", memoryless_sheaves, "instruction counts: runs in the icount boot" },
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

/*
 * Lets the console catch up: Linux 7.x's 8250 is an nbcon console, printed by a kthread
 * (pr/ttyS0) after printk returns, where 6.1 printed inside printk. Without a pause the
 * printer ran inside the next timed loop (counted in its figures: kmalloc/fast64 713
 * instead of 304 instructions in a smoke run) and the last lines were lost when the module
 * wrote to isa-debug-exit before they were printed. msleep gives the idle CPU to the
 * printer; under icount it is virtual time, so the pause repeats exactly. On 6.1 nothing is
 * pending and the pause only idles.
 */
static void twin_drain(void)
{
	msleep(100);
}

static int __init numalab_twin_init(void)
{
	unsigned int pass = 0, fail = 0, skip = 0, n = 0, i, k;
	char bad[64];
	bool bad_selection;

	/*
	 * Under icount, rdtsc here is the virtual time at which the module starts: every
	 * instruction Linux executed since power-on plus idle warps. Two boots of the same
	 * command print the same value exactly when the boot is deterministic (docs/linux-twin.md,
	 * "Repeatable counts"); the host runner does not parse it.
	 */
	u64 start_ns = rdtsc();

	set_kernel_name();
	for (i = 0; i < ARRAY_SIZE(experiments); i++)
		n += selected(experiments[i].name);
	bad_selection = unknown_selection(bad, sizeof(bad));
	TWIN_OUT("KTAP version 1");
	TWIN_OUT("1..1");
	TWIN_OUT("    KTAP version 1");
	TWIN_OUT("    # Subtest: bench");
	TWIN_OUT("    1..%u", n + 1);
	TWIN_OUT("# bench: registered alloc_peers page_alloc vmalloc_scaling memoryless_node slub_list_lock numa_locality sheaves_vs_partial memoryless_sheaves");
	TWIN_OUT("# bench: clock=%s smoke=%d cpus_online=%u nodes=%u selected=%s kernel=%s sll_order4=%d",
		 icount() ? "icount" : "tsc", twin_smoke, num_online_cpus(), num_possible_nodes(),
		 *twin_bench ? twin_bench : "all", kernel_name, twin_sll_order4);
	if (icount())
		TWIN_OUT("# bench: virtual time at module init: %llu ns", start_ns);
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
		twin_drain();
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
	if (icount())
		TWIN_OUT("# bench: virtual time at the end: %llu ns", rdtsc());
	twin_drain();
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
