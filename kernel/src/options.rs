//! The table of kernel options (read from fw_cfg `opt/numalab/cmdline`, set with boot's
//! `--set key=value`). Every subsystem's knobs are listed here, with defaults and help text.

use numalab_algo::options::{Kind, Options, Spec};
use spin::Once;

/// Every option the kernel knows. Adding a knob means adding a line here (and to the README).
pub const SPECS: &[Spec] = &[
    Spec {
        key: "suite",
        kind: Kind::Choice(&["test", "stress", "bench", "all", "none"]),
        default: "test",
        help: "what the kernel runs after boot",
    },
    Spec {
        key: "filter",
        kind: Kind::Text,
        default: "",
        help: "run only tests whose module/name contains this word",
    },
    Spec {
        key: "test.fail",
        kind: Kind::Bool,
        default: "0",
        help: "adds a test that always fails (checks the failure path end to end)",
    },
    Spec {
        key: "smp.verbose",
        kind: Kind::Bool,
        default: "0",
        help: "print each CPU's APIC id, node and time to come online",
    },
    Spec {
        key: "smp.timeout_ms",
        kind: Kind::U64 {
            min: 1,
            max: 600_000,
        },
        default: "5000",
        help: "how long bring-up waits for the APs before going on without the silent ones",
    },
    Spec {
        key: "acpi.dump",
        kind: Kind::Bool,
        default: "0",
        help: "print every ACPI table found and every MADT/SRAT/SLIT entry as parsed",
    },
    Spec {
        key: "frame.pcp",
        kind: Kind::Bool,
        default: "1",
        help: "per-CPU page lists in front of the per-node buddy allocators (orders 0-3)",
    },
    Spec {
        key: "frame.pcp_high",
        kind: Kind::U64 {
            min: 1,
            max: 1 << 20,
        },
        default: "256",
        help: "pages a per-CPU list may hold per node before it drains a batch",
    },
    Spec {
        key: "frame.pcp_batch",
        kind: Kind::U64 { min: 1, max: 4096 },
        default: "32",
        help: "pages moved per refill or drain between a per-CPU list and the buddy",
    },
    Spec {
        key: "vmalloc.nodes",
        kind: Kind::Choice(&["global", "cpu", "numa"]),
        default: "cpu",
        help: "vmap node design behind vmalloc(): global lock, CPU-count shards (Linux 6.9), one per NUMA node",
    },
    Spec {
        key: "vmalloc.lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "0",
        help: "lazy vfree pages that trigger a purge (0: Linux's fls(CPUs) * 8192; numa splits it per node)",
    },
    Spec {
        key: "vmalloc.test_loops",
        kind: Kind::U64 { min: 1, max: 1_000_000 },
        default: "100",
        help: "loop count of the test_vmalloc cases (test_loop_count)",
    },
    Spec {
        key: "vmalloc.bench_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "2000",
        help: "vmalloc_scaling: 1-page vmalloc+vfree pairs per CPU",
    },
    Spec {
        key: "vmalloc.bench_lazy_max_pages",
        kind: Kind::U64 { min: 0, max: 1 << 30 },
        default: "1024",
        help: "vmalloc_scaling: lazy threshold of the all-CPU instances (0: Linux's)",
    },
    Spec {
        key: "vmalloc.bench_icount_pairs",
        kind: Kind::U64 { min: 1, max: 10_000_000 },
        default: "20000",
        help: "vmalloc_scaling: pairs timed on one CPU for instructions_per_pair",
    },
];

static OPTIONS: Once<Options> = Once::new();

/// Reads and parses the options (once); errors are reported by the `options` KTAP test.
pub fn load() -> &'static Options {
    OPTIONS.call_once(|| {
        let cmdline = crate::arch::fw_cfg::read_string("opt/numalab/cmdline");
        Options::parse(&cmdline, SPECS)
    })
}
