//! The table of kernel options (read from fw_cfg `opt/numalab/cmdline`, set with boot's
//! `--set key=value`). Every subsystem's knobs are listed here, with defaults and help text.

use numalab_algo::options::{Kind, Opt, Options, Spec, Word};
use spin::Once;

/// Declares each option once: a typed handle `NAME: TYPE = Spec {..};` (TYPE bool, u64 or
/// Word, matching the spec's kind), and from the same list `SPECS` (the table the command line
/// is parsed against, in `describe`'s order) and `CHECKS` (each handle's type against its kind,
/// run by the `options` test).
macro_rules! options {
    ($($name:ident: $type:ty = $spec:expr;)*) => {
        $(pub const $name: Opt<$type> = Opt::new($spec);)*

        /// Every option the kernel knows.
        pub const SPECS: &[Spec] = &[$($name.spec,)*];

        /// Every handle's check: its type matches its kind and its default parses.
        pub const CHECKS: &[fn() -> Result<(), alloc::string::String>] = &[$(|| $name.check(),)*];
    };
}

// Every option the kernel knows. Adding a knob means adding an entry here and a row to the
// kernel options table of docs/running.md (tests/docs_options.rs checks that both list the
// same keys); code reads it as `options::load().get(&options::NAME)`.
options! {
    SUITE: Word = Spec {
        key: "suite",
        kind: Kind::Choice(&["test", "stress", "bench", "all", "soak", "none"]),
        default: "test",
        help: "what the kernel runs after boot",
    };
    FILTER: Word = Spec {
        key: "filter",
        kind: Kind::Text,
        default: "",
        help: "run only tests whose module/name contains this word",
    };
    TEST_FAIL: bool = Spec {
        key: "test.fail",
        kind: Kind::Bool,
        default: "0",
        help: "adds a test that always fails (checks the failure path end to end)",
    };
    SMP_VERBOSE: bool = Spec {
        key: "smp.verbose",
        kind: Kind::Bool,
        default: "0",
        help: "print each CPU's APIC id, node and time to come online",
    };
    SMP_TIMEOUT_MS: u64 = Spec {
        key: "smp.timeout_ms",
        kind: Kind::U64 {
            min: 1,
            max: 600_000,
        },
        default: "5000",
        help: "how long bring-up waits for the APs before going on without the silent ones",
    };
    SMP_HOLD_APIC: Word = Spec {
        key: "smp.hold_apic",
        kind: Kind::Text,
        default: "none",
        help: "debug: never start the CPU with this APIC id (exercises the did-not-answer path)",
    };
    ACPI_DUMP: bool = Spec {
        key: "acpi.dump",
        kind: Kind::Bool,
        default: "0",
        help: "print every ACPI table found and every MADT/SRAT/SLIT entry as parsed",
    };
    ACPI_CORRUPT: Word = Spec {
        key: "acpi.corrupt",
        kind: Kind::Choice(&["none", "srat_checksum", "srat_length"]),
        default: "none",
        help: "test hook: damages the kernel's copy of the SRAT before it is read (bad checksum, or a length field that runs past the table), the bad-table cases QEMU's -acpitable cannot produce",
    };
    BENCH: Word = Spec {
        key: "bench",
        kind: Kind::Text,
        default: "",
        help: "experiments to run, NAME[,NAME] (empty: all); bench.plan lists them",
    };
    BENCH_SMOKE: bool = Spec {
        key: "bench.smoke",
        kind: Kind::Bool,
        default: "0",
        help: "short variants of the experiments (the main job and CI)",
    };
    BENCH_CLOCK: Word = Spec {
        key: "bench.clock",
        kind: Kind::Choice(&["tsc", "icount"]),
        default: "tsc",
        help: "how rdtsc is read: set to icount by the host's --icount",
    };
    BENCH_REP: u64 = Spec {
        key: "bench.rep",
        kind: Kind::U64 { min: 0, max: 1_000_000 },
        default: "0",
        help: "repetition number set by qemu-run.sh bench: odd repetitions run each experiment's cases in reverse order",
    };
    FAULT_PAGE_ALLOC: Word = Spec {
        key: "fault.page_alloc",
        kind: Kind::Text,
        default: "0",
        help: "fault injection (fail_page_alloc): PROBABILITY%[,INTERVAL[,SEED]] of page allocations fail as out of memory; 0: off",
    };
    FAULT_SLAB: Word = Spec {
        key: "fault.slab",
        kind: Kind::Text,
        default: "0",
        help: "fault injection (failslab): PROBABILITY%[,INTERVAL[,SEED]] of SLUB's new-slab page allocations fail; 0: off",
    };
    FAULT_VMALLOC: Word = Spec {
        key: "fault.vmalloc",
        kind: Kind::Text,
        default: "0",
        help: "fault injection: PROBABILITY%[,INTERVAL[,SEED]] of vmalloc/vmap calls fail halfway through mapping; 0: off",
    };
    SOAK_OPS: u64 = Spec {
        key: "soak.ops",
        kind: Kind::U64 { min: 1, max: 1 << 40 },
        default: "10000000",
        help: "soak: operations over all CPUs (when soak.seconds is 0)",
    };
    SOAK_SECONDS: u64 = Spec {
        key: "soak.seconds",
        kind: Kind::U64 { min: 0, max: 1 << 20 },
        default: "0",
        help: "soak: run this long instead of soak.ops (0: run soak.ops operations)",
    };
    SOAK_SEED: u64 = Spec {
        key: "soak.seed",
        kind: Kind::U64 { min: 0, max: u64::MAX },
        default: "1",
        help: "soak: seed of every CPU's operation mix (printed at the start; the same seed repeats a run's choices)",
    };
    SOAK_CHECKPOINTS: u64 = Spec {
        key: "soak.checkpoints",
        kind: Kind::U64 { min: 1, max: 10_000 },
        default: "10",
        help: "soak: rounds, each ended by a checkpoint (every tag, per-node conservation, per-cache objects)",
    };
    SOAK_LEAK_KFREE: u64 = Spec {
        key: "soak.leak_kfree",
        kind: Kind::U64 { min: 0, max: 1 << 20 },
        default: "0",
        help: "soak: test-only mutation, kfree drops one slab object free in N while the soak runs (its per-cache object check must fail); 0: off",
    };
    FRAME_PCP: bool = Spec {
        key: "frame.pcp",
        kind: Kind::Bool,
        default: "1",
        help: "per-CPU page lists in front of the per-node buddy allocators (orders 0-3)",
    };
    FRAME_PCP_HIGH: u64 = Spec {
        key: "frame.pcp_high",
        kind: Kind::U64 {
            min: 1,
            max: 1 << 20,
        },
        default: "256",
        help: "pages a per-CPU list may hold per node before it drains a batch",
    };
    FRAME_PCP_BATCH: u64 = Spec {
        key: "frame.pcp_batch",
        kind: Kind::U64 { min: 1, max: 4096 },
        default: "32",
        help: "pages moved per refill or drain between a per-CPU list and the buddy",
    };
    SLUB_MAX_ORDER: u64 = Spec {
        key: "slub.max_order",
        kind: Kind::U64 { min: 0, max: 10 },
        default: "3",
        help: "largest slab order calculate_order may choose (Linux slub_max_order)",
    };
    SLUB_MIN_OBJECTS: u64 = Spec {
        key: "slub.min_objects",
        kind: Kind::U64 { min: 0, max: 32767 },
        default: "0",
        help: "minimum objects per slab; 0: 4 * (fls(nr_cpus) + 1) (Linux slub_min_objects)",
    };
    SLUB_MIN_PARTIAL: Word = Spec {
        key: "slub.min_partial",
        kind: Kind::Text,
        default: "auto",
        help: "partial slabs a node keeps before freeing empty ones; auto: ilog2(size)/2 clamped to [5, max_partial]",
    };
    SLUB_MAX_PARTIAL: u64 = Spec {
        key: "slub.max_partial",
        kind: Kind::U64 { min: 1, max: 4096 },
        default: "10",
        help: "upper clamp of the automatic min_partial (Linux MAX_PARTIAL)",
    };
    SLUB_CPU_PARTIAL: Word = Spec {
        key: "slub.cpu_partial",
        kind: Kind::Text,
        default: "auto",
        help: "free objects kept on each CPU's partial list; auto: Linux's table by size; 0: no CPU partials",
    };
    SLUB_MEMORYLESS_FIX: bool = Spec {
        key: "slub.memoryless_fix",
        kind: Kind::Bool,
        default: "1",
        help: "treat a request for a memoryless node as its nearest memory node (seed 003)",
    };
    SLUB_PREFER_LOCAL: bool = Spec {
        key: "slub.prefer_local",
        kind: Kind::Bool,
        default: "0",
        help: "take a new local slab instead of a remote partial while the local node has memory (seed 004)",
    };
    SLUB_REMOTE_NODE_DEFRAG_RATIO: u64 = Spec {
        key: "slub.remote_node_defrag_ratio",
        kind: Kind::U64 { min: 0, max: 1000 },
        default: "1000",
        help: "per mille of slow paths that may take partial slabs from remote nodes",
    };
    SLUB_DEBUG: Word = Spec {
        key: "slub.debug",
        kind: Kind::Text,
        default: "",
        help: "debug flags F (sanity) Z (red zone) P (poison) U (user), 1 = all, optionally ,CACHE,... to limit them",
    };
    SLUB_SLABINFO: Word = Spec {
        key: "slub.slabinfo",
        kind: Kind::Choice(&["counters", "scan"]),
        default: "counters",
        help: "how slabinfo counts active objects: counters (exact, no list_lock) or scan (Linux's count_partial under list_lock)",
    };
    VMALLOC_NODES: Word = Spec {
        key: "vmalloc.nodes",
        kind: Kind::Choice(&["global", "cpu", "numa"]),
        default: "cpu",
        help: "vmap node design behind vmalloc(): global lock, CPU-count shards (Linux 6.9), one per NUMA node",
    };
    VMALLOC_LAZY_MAX_PAGES: u64 = Spec {
        key: "vmalloc.lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "0",
        help: "lazy vfree pages that trigger a purge (0: Linux's fls(CPUs) * 8192; numa splits it per node)",
    };
    VMALLOC_TEST_LOOPS: u64 = Spec {
        key: "vmalloc.test_loops",
        kind: Kind::U64 { min: 1, max: 1_000_000 },
        default: "100",
        help: "loop count of the test_vmalloc cases (test_loop_count)",
    };
    VMALLOC_BENCH_PAIRS: u64 = Spec {
        key: "vmalloc.bench_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "2000",
        help: "vmalloc_scaling: 1-page vmalloc+vfree pairs per CPU",
    };
    VMALLOC_BENCH_LAZY_MAX_PAGES: u64 = Spec {
        key: "vmalloc.bench_lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "1024",
        help: "vmalloc_scaling: lazy threshold of the all-CPU instances (0: Linux's)",
    };
    VMALLOC_BENCH_ICOUNT_PAIRS: u64 = Spec {
        key: "vmalloc.bench_icount_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "20000",
        help: "vmalloc_scaling: pairs timed on one CPU (whole purge cycles, at least one)",
    };
    SLUB_BENCH_ALLOC_NODE_PERCENT: u64 = Spec {
        key: "slub.bench_alloc_node_percent",
        kind: Kind::U64 { min: 0, max: 100 },
        default: "68",
        help: "memoryless_node: percent of requests that name the CPU's node (kmalloc_node)",
    };
}

static OPTIONS: Once<Options> = Once::new();

/// Reads and parses the options (once); errors are reported by the `options` KTAP test.
pub fn load() -> &'static Options {
    OPTIONS.call_once(|| {
        let cmdline = crate::arch::fw_cfg::read_string("opt/numalab/cmdline");
        Options::parse(&cmdline, SPECS)
    })
}
