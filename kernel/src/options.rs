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
        key: "acpi.dump",
        kind: Kind::Bool,
        default: "0",
        help: "print every ACPI table found and every MADT/SRAT/SLIT entry as parsed",
    },
    Spec {
        key: "bench",
        kind: Kind::Text,
        default: "",
        help: "experiments to run, NAME[,NAME] (empty: all); bench.plan lists them",
    },
    Spec {
        key: "bench.smoke",
        kind: Kind::Bool,
        default: "0",
        help: "short variants of the experiments (the main job and CI)",
    },
    Spec {
        key: "bench.clock",
        kind: Kind::Choice(&["tsc", "icount"]),
        default: "tsc",
        help: "how rdtsc is read: set to icount by the host's --icount",
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
];

static OPTIONS: Once<Options> = Once::new();

/// Reads and parses the options (once); errors are reported by the `options` KTAP test.
pub fn load() -> &'static Options {
    OPTIONS.call_once(|| {
        let cmdline = crate::arch::fw_cfg::read_string("opt/numalab/cmdline");
        Options::parse(&cmdline, SPECS)
    })
}
