//! Kernel options of the `test` group. Test hooks: options that exist to make a test provoke a
//! failure path.

use super::{Choice, Kind, Spec};

super::choice! {
    /// `acpi.corrupt`: how the kernel's copy of the SRAT is damaged before it is read.
    pub enum AcpiCorrupt {
        /// Not at all.
        #[default]
        None = "none",
        /// A bad checksum.
        SratChecksum = "srat_checksum",
        /// A length field that runs past the table.
        SratLength = "srat_length",
    }
}

super::declare! {
    TEST = "test";
    TEST_FAIL: bool = Spec {
        key: "test.fail",
        kind: Kind::Bool,
        default: "0",
        help: "adds a test that always fails (checks the failure path end to end)",
    };
    SMP_HOLD_APIC: Option<u64> = Spec {
        key: "smp.hold_apic",
        kind: Kind::KeywordOr {
            keyword: "none",
            min: 0,
            max: u32::MAX as u64,
        },
        default: "none",
        help: "debug: never start the CPU with this APIC id (exercises the did-not-answer path)",
    };
    ACPI_CORRUPT: AcpiCorrupt = Spec {
        key: "acpi.corrupt",
        kind: AcpiCorrupt::KIND,
        default: "none",
        help: "test hook: damages the kernel's copy of the SRAT before it is read (bad checksum, or a length field that runs past the table), the bad-table cases QEMU's -acpitable cannot produce",
    };
    VMALLOC_TEST_LOOPS: u64 = Spec {
        key: "vmalloc.test_loops",
        kind: Kind::U64 { min: 1, max: 1_000_000 },
        default: "100",
        help: "loop count of the test_vmalloc cases (test_loop_count)",
    };
    SOAK_LEAK_KFREE: u64 = Spec {
        key: "soak.leak_kfree",
        kind: Kind::U64 { min: 0, max: 1 << 20 },
        default: "0",
        help: "soak: test-only mutation, kfree drops one slab object free in N while the soak runs (its per-cache object check must fail); 0: off",
    };
}
