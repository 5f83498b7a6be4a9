//! Kernel options of the `run` group: which suite the kernel runs after boot, which tests, and
//! whether it dumps the ACPI tables.

use super::{Choice, Kind, Spec, Word};

super::choice! {
    /// What the kernel runs after boot (`suite=`).
    pub enum Suite {
        /// The kernel's tests (KTAP).
        #[default]
        Test = "test",
        /// The stress runs.
        Stress = "stress",
        /// The experiments (BENCH lines).
        Bench = "bench",
        /// Tests, stress and experiments.
        All = "all",
        /// The soak (docs/soak.md).
        Soak = "soak",
        /// Nothing: boot, describe the machine, exit.
        None = "none",
    }
}

super::declare! {
    RUN = "run";
    SUITE: Suite = Spec {
        key: "suite",
        kind: Suite::KIND,
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
