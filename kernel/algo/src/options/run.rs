//! Kernel options of the `run` group: which suite the kernel runs after boot, which tests, and
//! whether it dumps the ACPI tables.

use super::{Kind, Spec, Word};

super::declare! {
    RUN = "run";
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
    ACPI_DUMP: bool = Spec {
        key: "acpi.dump",
        kind: Kind::Bool,
        default: "0",
        help: "print every ACPI table found and every MADT/SRAT/SLIT entry as parsed",
    };
}
