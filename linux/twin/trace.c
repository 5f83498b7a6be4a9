// SPDX-License-Identifier: GPL-2.0
/*
 * trace.c: det boots' regions, the det quantum and the names of Linux's objects, for the trace
 * plugin (docs/linux-twin.md "Det boots and trace regions (module side)").
 *
 * Regions: the same wire lines and marker NOPs as numalab's kernel/src/bench/region.rs and
 * kernel/src/arch/x86_64/trace_mark.rs: "# trace kernel 0xADDR jiffies_64" once (the runner
 * shifts System.map by it: KASLR stays on), "# trace region 0xKEY: BENCH CASE cpus K" (KEY: a
 * byte of twin_marks), each worker CPU's marker + one-byte load of KEY before its measured
 * loop and of twin_outside after it (interrupts off between the two), "# trace ops 0xKEY N".
 *
 * The det quantum: QEMU 7.2 runs the vCPUs of an -icount boot round-robin on one thread and
 * ends a vCPU's turn at the next deadline of the virtual clock. numalab sets one every
 * det_quantum instructions with its LAPIC timer (a 30-instruction handler runs each period).
 * Here HPET timer 2 runs periodic with its interrupt disabled: QEMU's hpet.c re-arms its
 * QEMU timer each period (the deadline exists) and raises no interrupt (no guest instruction
 * runs). Linux uses timer 0 (and 1 for the RTC emulation); timer 2 is left to /dev/hpet,
 * which nothing opens in the twin's initramfs.
 */
#include "trace.h"
#include <linux/acpi.h>
#include <linux/jiffies.h>
#include <asm/hpet.h>
#include <linux/version.h>

unsigned long twin_det_quantum;

/* Region keys: slot 0 is never used (NULL key past the last slot). */
#define TWIN_SLOTS 4096
static u8 twin_marks[TWIN_SLOTS] __aligned(4096);
/* The key of "in the module, in no region". */
static u8 twin_outside;
static atomic_t twin_next_slot = ATOMIC_INIT(1);

#define TWIN_MARKER ".byte 0x0f, 0x1f, 0x84, 0x00, 0x4e, 0x55, 0x4d, 0x4c\n\t"
#define TWIN_WATCH ".byte 0x0f, 0x1f, 0x84, 0x00, 0x4e, 0x55, 0x4d, 0x57\n\t"

/* The marker NOP and a one-byte load of *p, interrupts off between them. */
static void twin_mark(const u8 *p)
{
	unsigned long flags;
	u8 tmp;

	local_irq_save(flags);
	asm volatile(TWIN_MARKER "movb (%1), %0" : "=q"(tmp) : "r"(p) : "memory");
	local_irq_restore(flags);
}

/* The watch marker and a one-byte load of *p (a named line), interrupts off between them. */
static void twin_watch(const u8 *p)
{
	unsigned long flags;
	u8 tmp;

	local_irq_save(flags);
	asm volatile(TWIN_WATCH "movb (%1), %0" : "=q"(tmp) : "r"(p) : "memory");
	local_irq_restore(flags);
}

const u8 *twin_region_open(const char *bench, const char *case_name, unsigned int cpus)
{
	static bool kernel_printed;
	int slot;

	if (!det())
		return NULL;
	if (!kernel_printed) {
		kernel_printed = true;
		TWIN_OUT("# trace kernel 0x%lx jiffies_64", (unsigned long)&jiffies_64);
	}
	slot = atomic_inc_return(&twin_next_slot) - 1;
	if (slot >= TWIN_SLOTS) {
		pr_warn_once("numalab_twin: more than %d regions; later ones are not marked\n",
			     TWIN_SLOTS - 1);
		return NULL;
	}
	TWIN_OUT("# trace region 0x%lx: %s %s cpus %u", (unsigned long)&twin_marks[slot], bench,
		 case_name, cpus);
	return &twin_marks[slot];
}

void twin_region_ops(const u8 *key, u64 ops)
{
	if (key)
		TWIN_OUT("# trace ops 0x%lx %llu", (unsigned long)key, ops);
}

void twin_mark_in(const u8 *key)
{
	if (key)
		twin_mark(key);
}

void twin_mark_out(const u8 *key)
{
	if (key)
		twin_mark(&twin_outside);
}

void twin_name(const void *addr, size_t bytes, const char *fmt, ...)
{
	unsigned long at = (unsigned long)addr, end = at + bytes;
	char label[128];
	va_list ap;

	if (!det())
		return;
	va_start(ap, fmt);
	vsnprintf(label, sizeof(label), fmt, ap);
	va_end(ap);
	TWIN_OUT("# trace name 0x%lx %zu: %s", (unsigned long)addr, bytes, label);
	while (at < end) {
		twin_watch((const u8 *)at);
		at = (at & ~63UL) + 64;
	}
}

/* ---- the det quantum: HPET timer 2, periodic, interrupt disabled ---- */

#define TWIN_HPET_TIMER 2
#define TWIN_HPET_DEFAULT 0xfed00000UL
#define FS_PER_NS 1000000ULL

static void __iomem *twin_hpet;
static u32 twin_hpet_ticks; /* the period in HPET ticks; 0: no quantum */
static u32 twin_hpet_cfg0; /* timer 2's configuration before the first region */

void twin_quantum_setup(void)
{
	unsigned long phys = TWIN_HPET_DEFAULT;
	const char *where = "the PC default (no ACPI HPET table)";
	u32 id, period_fs, cfg, gen;
	unsigned int timers;
	u64 want_fs;

	if (!det())
		return;
	if (!twin_det_quantum) {
		TWIN_OUT("# bench: det quantum 0 instructions (none: det_quantum=0)");
		return;
	}
#ifdef CONFIG_ACPI
	{
		struct acpi_table_header *t;

		if (!acpi_disabled && ACPI_SUCCESS(acpi_get_table(ACPI_SIG_HPET, 0, &t))) {
			phys = (unsigned long)((struct acpi_table_hpet *)t)->address.address;
			where = "the ACPI HPET table";
			acpi_put_table(t);
		}
	}
#endif
	twin_hpet = ioremap(phys, 1024);
	if (!twin_hpet) {
		TWIN_OUT("# bench: det quantum not set: cannot map the HPET at 0x%lx (%s)", phys,
			 where);
		return;
	}
	id = readl(twin_hpet + HPET_ID);
	period_fs = readl(twin_hpet + HPET_PERIOD);
	timers = ((id & HPET_ID_NUMBER) >> HPET_ID_NUMBER_SHIFT) + 1;
	cfg = readl(twin_hpet + HPET_Tn_CFG(TWIN_HPET_TIMER));
	gen = readl(twin_hpet + HPET_CFG);
	want_fs = (u64)twin_det_quantum * FS_PER_NS;
	if (id == 0xffffffff || period_fs == 0 || timers <= TWIN_HPET_TIMER ||
	    !(cfg & HPET_TN_PERIODIC_CAP) || (cfg & HPET_TN_ENABLE) || !(gen & HPET_CFG_ENABLE) ||
	    want_fs % period_fs || want_fs / period_fs > U32_MAX / 2) {
		TWIN_OUT("# bench: det quantum not set: HPET at 0x%lx (%s): id 0x%x, %u timers, period %u fs, timer %d config 0x%x (periodic capable %d, interrupt enabled %d), main counter running %d; %lu ns is not a whole number of ticks below 2^31",
			 phys, where, id, timers, period_fs, TWIN_HPET_TIMER, cfg,
			 !!(cfg & HPET_TN_PERIODIC_CAP), !!(cfg & HPET_TN_ENABLE),
			 !!(gen & HPET_CFG_ENABLE), twin_det_quantum);
		iounmap(twin_hpet);
		twin_hpet = NULL;
		return;
	}
	twin_hpet_ticks = want_fs / period_fs;
	twin_hpet_cfg0 = cfg;
	TWIN_OUT("# bench: det quantum %lu instructions (HPET timer %d at 0x%lx from %s: periodic every %u ticks of %u fs while a region runs, its interrupt disabled: a virtual-clock deadline, no guest instruction)",
		 twin_det_quantum, TWIN_HPET_TIMER, phys, where, twin_hpet_ticks, period_fs);
}

void twin_quantum_start(void)
{
	u32 cfg, now;

	if (!twin_hpet_ticks)
		return;
	/* 32-bit periodic, SETVAL: the first comparator write sets the comparator, the second
	 * (SETVAL cleared by the first) the period. ENABLE stays clear: no interrupt. */
	cfg = (twin_hpet_cfg0 & ~(HPET_TN_ENABLE | HPET_TN_LEVEL)) | HPET_TN_PERIODIC |
	      HPET_TN_SETVAL | HPET_TN_32BIT;
	writel(cfg, twin_hpet + HPET_Tn_CFG(TWIN_HPET_TIMER));
	now = readl(twin_hpet + HPET_COUNTER);
	writel(now + twin_hpet_ticks, twin_hpet + HPET_Tn_CMP(TWIN_HPET_TIMER));
	writel(twin_hpet_ticks, twin_hpet + HPET_Tn_CMP(TWIN_HPET_TIMER));
}

void twin_quantum_stop(void)
{
	if (!twin_hpet_ticks)
		return;
	/* One-shot again, as found: QEMU's pending timer fires once more and is not re-armed. */
	writel(twin_hpet_cfg0 & ~(HPET_TN_PERIODIC | HPET_TN_SETVAL | HPET_TN_ENABLE),
	       twin_hpet + HPET_Tn_CFG(TWIN_HPET_TIMER));
}

/*
 * ---- names: "# trace name" lines for the dynamic objects of a det experiment's cache: the
 * struct kmem_cache, each node's struct kmem_cache_node and its list_lock, and (7.x) each
 * node's barn and its lock (docs/linux-twin.md "Det boots and trace regions (module side)").
 *
 * Where the node pointers are:
 * - 6.1: struct kmem_cache (include/linux/slub_def.h) ends with `struct kmem_cache_node
 *   *node[MAX_NUMNODES]`, and mm/slub.c creates the kmem_cache cache with object size
 *   offsetof(struct kmem_cache, node) + nr_node_ids x 8: the offset is object_size -
 *   nr_node_ids x 8 at run time (slub_def.h cannot be included by a module: its inline
 *   functions need mm/slab.h's struct slab). The DWARF of Debian's 6.1.0-57 vmlinux
 *   (linux-image-6.1.0-57-amd64-dbg, pahole -C kmem_cache) gives node[] at offset 216.
 * - 7.3: struct kmem_cache is private (mm/slab.h). Its layout from the BTF of the headers
 *   package's vmlinux (pahole -F btf -C kmem_cache
 *   /usr/src/linux-headers-7.3.4+deb13-amd64/vmlinux in linux/linux7.sh's build root):
 *   `struct kmem_cache_per_node_ptrs { struct node_barn *barn; struct kmem_cache_node *node; }
 *   per_node[]` at offset 208; struct kmem_cache_node (64 bytes) starts with list_lock,
 *   nr_partial at 8; struct node_barn (48 bytes) starts with its lock. Checked at run time:
 *   object_size of the kmem_cache cache = 208 + nr_node_ids x 16.
 * Every node pointer is then checked before it is named: its object lies on node N
 * (page_to_nid), its lock is unlocked, nr_partial equals the cache's sysfs partial count of
 * node N. A check that fails names nothing of that cache and says why.
 */

/* Where a cache's node pointers are, found once; 0 fields: cannot name. */
struct twin_layout {
	size_t node_off; /* offset of the first node pointer in struct kmem_cache */
	size_t stride; /* bytes between two nodes' pointers */
	long barn_off; /* offset of the barn pointer in a per-node entry, -1: none */
	size_t node_bytes; /* sizeof(struct kmem_cache_node) */
	size_t barn_bytes; /* sizeof(struct node_barn) */
	size_t cache_bytes; /* the kmem_cache cache's object_size */
	bool ok;
	char why[160];
};

static struct twin_layout twin_layout;

static void twin_find_layout(struct twin_layout *l)
{
	long long object_size = sysfs_number("/sys/kernel/slab/kmem_cache/object_size");
	long long node_size = sysfs_number("/sys/kernel/slab/kmem_cache_node/object_size");

	if (object_size <= 0 || node_size <= 0) {
		snprintf(l->why, sizeof(l->why),
			 "cannot read /sys/kernel/slab/kmem_cache{,_node}/object_size (%lld, %lld)",
			 object_size, node_size);
		return;
	}
	l->cache_bytes = object_size;
	l->node_bytes = node_size;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	l->node_off = object_size - (long long)nr_node_ids * 8;
	l->stride = 8;
	l->barn_off = -1;
	TWIN_OUT("# bench: names: struct kmem_cache's node[] at offset %zu = /sys/kernel/slab/kmem_cache/object_size %lld - nr_node_ids %u x 8 (DWARF of 6.1.0-57: 216)",
		 l->node_off, object_size, nr_node_ids);
	if (object_size <= (long long)nr_node_ids * 8) {
		snprintf(l->why, sizeof(l->why), "kmem_cache object_size %lld is too small",
			 object_size);
		return;
	}
#else
	if (LINUX_VERSION_CODE < KERNEL_VERSION(7, 3, 0) ||
	    LINUX_VERSION_CODE >= KERNEL_VERSION(7, 4, 0)) {
		snprintf(l->why, sizeof(l->why),
			 "struct kmem_cache is private here and its layout is known for 7.3 only (BTF)");
		return;
	}
	l->node_off = 208 + 8;
	l->stride = 16;
	l->barn_off = -8; /* the barn pointer precedes the node pointer */
	l->barn_bytes = 48;
	TWIN_OUT("# bench: names: struct kmem_cache's per_node[] at offset 208, 16 bytes each (BTF of 7.3.4); /sys/kernel/slab/kmem_cache/object_size %lld = 208 + nr_node_ids %u x 16: %s",
		 object_size, nr_node_ids,
		 object_size == 208 + (long long)nr_node_ids * 16 ? "yes" : "NO");
	if (object_size != 208 + (long long)nr_node_ids * 16) {
		snprintf(l->why, sizeof(l->why),
			 "kmem_cache object_size %lld is not the BTF layout's 208 + 16 x nr_node_ids",
			 object_size);
		return;
	}
	if (node_size != 64) {
		snprintf(l->why, sizeof(l->why),
			 "kmem_cache_node object_size %lld is not the BTF layout's 64", node_size);
		return;
	}
#endif
	l->ok = true;
}

/* Node `node`'s partial slab count from /sys/kernel/slab/NAME/partial ("T N0=a N1=b"), or -1. */
static long long twin_sysfs_partial(const char *cache_name, int node)
{
	char path[96], buf[256] = { 0 }, key[16];
	struct file *f;
	loff_t pos = 0;
	const char *at;
	long long v;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/partial", cache_name);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return -1;
	kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	snprintf(key, sizeof(key), " N%d=", node);
	at = strstr(buf, key);
	if (!at) /* no "Nn=" field: the node has no partial slab */
		return sscanf(buf, "%lld", &v) == 1 ? 0 : -1;
	return sscanf(at + strlen(key), "%lld", &v) == 1 ? v : -1;
}

/* Checks one node's object: on node `node`, lock unlocked. */
static bool twin_node_object_ok(const void *p, int node, char *why, size_t n, const char *what)
{
	if (!p || !virt_addr_valid(p)) {
		snprintf(why, n, "%s of node %d: %px is no direct-mapped address", what, node, p);
		return false;
	}
	if (page_to_nid(virt_to_page(p)) != node) {
		snprintf(why, n, "%s of node %d lies on node %d", what, node,
			 page_to_nid(virt_to_page(p)));
		return false;
	}
	if (spin_is_locked((spinlock_t *)p)) {
		snprintf(why, n, "%s of node %d: its lock is held", what, node);
		return false;
	}
	return true;
}

void twin_name_cache(struct kmem_cache *s, const char *cache_name)
{
	static bool found, reported;
	struct twin_layout *l = &twin_layout;
	char why[160] = "";
	unsigned int named = 0, barns = 0;
	int node;

	if (!det() || !s)
		return;
	if (!found) {
		found = true;
		twin_find_layout(l);
	}
	if (!l->ok) {
		if (!reported)
			TWIN_OUT("# bench: names: %s: kmem_cache only; its nodes not named: %s",
				 cache_name, l->why);
		reported = true;
		twin_name(s, l->cache_bytes ? l->cache_bytes : 64, "%s kmem_cache", cache_name);
		return;
	}
	/* Check every node before naming any. */
	for_each_node_state(node, N_NORMAL_MEMORY) {
		const u8 *entry = (const u8 *)s + l->node_off + node * l->stride;
		const void *n = *(void *const *)entry;
		long long partial = twin_sysfs_partial(cache_name, node);

		if (!twin_node_object_ok(n, node, why, sizeof(why), "kmem_cache_node"))
			break;
		if (partial < 0 || (unsigned long)partial != *(const unsigned long *)((const u8 *)n + 8)) {
			snprintf(why, sizeof(why),
				 "node %d: nr_partial %lu != /sys/kernel/slab/%s/partial's %lld",
				 node, *(const unsigned long *)((const u8 *)n + 8), cache_name, partial);
			break;
		}
		if (l->barn_off != -1) {
			const void *b = *(void *const *)(entry + l->barn_off);

			if (b && !twin_node_object_ok(b, node, why, sizeof(why), "barn"))
				break;
		}
	}
	if (why[0]) {
		TWIN_OUT("# bench: names: %s: kmem_cache only; its nodes not named: %s", cache_name,
			 why);
		twin_name(s, l->cache_bytes, "%s kmem_cache", cache_name);
		return;
	}
	twin_name(s, l->cache_bytes, "%s kmem_cache", cache_name);
	for_each_node_state(node, N_NORMAL_MEMORY) {
		const u8 *entry = (const u8 *)s + l->node_off + node * l->stride;
		const void *n = *(void *const *)entry;

		twin_name(n, l->node_bytes, "%s node %d kmem_cache_node", cache_name, node);
		twin_name(n, sizeof(spinlock_t), "%s node %d list_lock", cache_name, node);
		named++;
		if (l->barn_off != -1) {
			const void *b = *(void *const *)(entry + l->barn_off);

			if (b) {
				twin_name(b, l->barn_bytes, "%s barn node %d", cache_name, node);
				twin_name(b, sizeof(spinlock_t), "%s barn node %d lock", cache_name,
					  node);
				barns++;
			}
		}
	}
	if (!reported) {
		reported = true;
		TWIN_OUT("# bench: names: %s: kmem_cache, %u nodes' kmem_cache_node and list_lock (checked: on their node, unlocked, nr_partial = sysfs), %u barns%s; vmap: %s",
			 cache_name, named, barns,
			 l->barn_off == -1 ? " (6.1 has none)" : " and their locks",
			 l->barn_off == -1 ?
				 "6.1's vmap_area_lock, free_vmap_area_lock, purge_vmap_area_lock are static (System.map, runner side)" :
				 "7.3's vmap_nodes array is static in mm/vmalloc.c, not exported: its locks are not named (the runner's System.map names only static symbols)");
	}
}
