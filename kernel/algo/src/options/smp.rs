//! Kernel options of the `smp` group. SMP bring-up.

use super::{Kind, Spec};

super::declare! {
    SMP = "smp";
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
}
