// SPDX-License-Identifier: GPL-2.0
#include "twin.h"

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
int twin_memoryless_node(void)
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

