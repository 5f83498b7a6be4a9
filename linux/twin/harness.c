// SPDX-License-Identifier: GPL-2.0
/*
 * numalab_twin: numalab's experiments run with Linux's own allocators (docs/linux-twin.md).
 *
 * harness.c: the module's parameters, its BENCH output and the KTAP run around the
 * experiments (one file each, listed in experiments.h).
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
 * Parameters: bench=NAME[,NAME] (empty: every experiment), clock=icount|tsc|det (set by the
 * host runner: how rdtsc ticks are to be read; det: every CPU under icount, trace regions,
 * trace.c), det_quantum=N, smoke=1 (the short variants, as numalab's bench.smoke=1).
 */
#include "twin.h"
#include "trace.h"

static char *twin_bench = "";
module_param_named(bench, twin_bench, charp, 0444);
MODULE_PARM_DESC(bench, "experiments to run, comma-separated (empty: all)");
char *twin_clock = "tsc";
module_param_named(clock, twin_clock, charp, 0444);
MODULE_PARM_DESC(clock,
		 "icount (rdtsc counts instructions, one CPU), det (all CPUs under icount, trace regions) or tsc (host time)");
module_param_named(det_quantum, twin_det_quantum, ulong, 0444);
MODULE_PARM_DESC(det_quantum,
		 "det: instructions per vCPU turn while a region runs (HPET timer 2 deadlines; 0: none)");
bool twin_smoke;
module_param_named(smoke, twin_smoke, bool, 0444);
MODULE_PARM_DESC(smoke, "short variants of every experiment");
bool twin_sll_order4;
module_param_named(sll_order4, twin_sll_order4, bool, 0444);
MODULE_PARM_DESC(sll_order4,
		 "slub_list_lock: run the order_4 and cpu_partial_x2 tunings (a boot with slub_max_order=4 slub_min_objects=256)");

/* isa-debug-exit, as numalab's -device isa-debug-exit,iobase=0xf4 */
#define DEBUG_EXIT_PORT 0xf4
#define DEBUG_EXIT_PASS 0x10
#define DEBUG_EXIT_FAIL 0x11

char kernel_name[64];

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
void record_signed(const char *bench, const char *case_name, const char *metric,
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
void record(const char *bench, const char *case_name, const char *metric, u64 num,
	    u64 den, const char *unit, unsigned int cpus)
{
	record_signed(bench, case_name, metric, false, num, den, unit, cpus);
}

const char *tick_unit(void)
{
	return icount() ? "instructions" : "cycles";
}

/* The first number of a sysfs file such as /sys/kernel/slab/NAME/slabs, or -1. */
long long sysfs_number(const char *path)
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

/* ---- KTAP around the experiments, as numalab's bench suite ---- */

struct experiment {
	const char *name;
	/* 0: passed; 1: skipped here (why in skip_reason); negative: failed */
	int (*run)(void);
	const char *skip_reason;
};
#define TWIN_EXPERIMENT(name, skip_reason) { #name, twin_##name, skip_reason },
static const struct experiment experiments[] = {
#include "experiments.h"
};
#undef TWIN_EXPERIMENT

/* " alloc_peers page_alloc ...": every experiment's name, in experiments.h's order. */
#define TWIN_EXPERIMENT(name, skip_reason) " " #name
static const char registered[] = ""
#include "experiments.h"
	;
#undef TWIN_EXPERIMENT

/* The experiments of a det boot (trace.c's regions); every other one skips there. */
static const char *const det_experiments[] = {
	"slub_list_lock", "numa_locality", "sheaves_vs_partial", "vmalloc_scaling"
};

static bool runs_in_det(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(det_experiments); i++)
		if (!strcmp(det_experiments[i], name))
			return true;
	return false;
}

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
	TWIN_OUT("# bench: registered%s", registered);
	TWIN_OUT("# bench: clock=%s smoke=%d cpus_online=%u nodes=%u selected=%s kernel=%s sll_order4=%d",
		 det() ? "det" : icount() ? "icount" : "tsc", twin_smoke, num_online_cpus(), num_possible_nodes(),
		 *twin_bench ? twin_bench : "all", kernel_name, twin_sll_order4);
	if (icount())
		TWIN_OUT("# bench: virtual time at module init: %llu ns", start_ns);
	twin_quantum_setup();
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
		if (det() && !runs_in_det(e->name)) {
			TWIN_OUT("    ok %u %s # SKIP det boot: only slub_list_lock, numa_locality, sheaves_vs_partial and vmalloc_scaling run here",
				 k, e->name);
			skip++;
			k++;
			continue;
		}
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
