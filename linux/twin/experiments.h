/* SPDX-License-Identifier: GPL-2.0 */
/*
 * numalab_twin's experiments, in the order the module runs them: the module's one list.
 * TWIN_EXPERIMENT(NAME, SKIP_REASON): NAME.c defines int twin_NAME(void) (0: passed; 1:
 * skipped here, SKIP_REASON says why; negative: failed). Kbuild compiles NAME.c for each line,
 * harness.c builds its table and the "# bench: registered" line from it, and a host test
 * (boot/src/run/twin/tests.rs) checks the names against numalab's catalog (every experiment
 * with a `twin`, kernel/algo/src/bench/catalog). No include guard: included with different
 * TWIN_EXPERIMENT definitions.
 */
TWIN_EXPERIMENT(alloc_peers, "")
TWIN_EXPERIMENT(page_alloc, "instruction counts: runs in the icount boot")
TWIN_EXPERIMENT(vmalloc_scaling, "instruction counts: runs in the icount boot")
TWIN_EXPERIMENT(memoryless_node,
		"memory experiment: runs in the multi-CPU boot of a memoryless or one-node machine")
TWIN_EXPERIMENT(slub_list_lock, "contention experiment: runs in the multi-CPU (tsc) boot")
TWIN_EXPERIMENT(numa_locality,
		"locality experiment: runs in the multi-CPU (tsc) boot, CPUs on two or more memory nodes")
TWIN_EXPERIMENT(sheaves_vs_partial, "instruction counts: runs in the icount boot")
TWIN_EXPERIMENT(memoryless_sheaves, "instruction counts: runs in the icount boot")
TWIN_EXPERIMENT(kfree_rcu_scale, "")
