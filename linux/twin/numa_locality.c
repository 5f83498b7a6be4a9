// SPDX-License-Identifier: GPL-2.0
#include "twin.h"
#include "trace.h"

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
 * Det boots (clock=det): the same run as one trace region (trace.c), each worker marked in and
 * out, the cache's nodes named before it; ops as numalab counts them (allocations + the growth
 * CPUs' allocations again), and instructions_per_op: the virtual time from waking the workers
 * to the last one's end (every vCPU's instructions) per operation.
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
	const u8 *key; /* the trace region (det boots), or NULL */
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

	twin_mark_in(run->key);
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
	twin_mark_out(run->key);
	atomic_inc(&run->done);
	wake_up(&run->wq);
	return 0;
}

int twin_numa_locality(void)
{
	unsigned int nr = num_online_cpus(), cpu, k, j, grow = 0, started = 0;
	nodemask_t mem_nodes = NODE_MASK_NONE;
	struct nl_worker *workers = NULL;
	struct nl_run *run = NULL;
	int *cpu_of = NULL;
	u64 t0 = 0, t1 = 0, ops = 0;
	int err = 0, n;

	if ((icount() && !det()) || nr < 2)
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
	twin_name_cache(run->cache, NL_NAME);
	run->key = twin_region_open("numa_locality", "linux", nr);
	twin_quantum_start();
	t0 = rdtsc();
	/* All created before any runs: the barrier counts every participant. */
	for (k = 0; k < nr; k++)
		wake_up_process(workers[k].task);
	wait_event(run->wq, atomic_read(&run->done) == (int)nr);
	t1 = rdtsc();
	twin_quantum_stop();
	ops = atomic64_read(&run->total) + atomic64_read(&run->grow_total);
	twin_region_ops(run->key, ops);
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
	if (det())
		record("numa_locality", "linux", "instructions_per_op", t1 - t0, max_t(u64, ops, 1),
		       "instructions", nr);
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
