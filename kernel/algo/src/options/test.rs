//! Kernel options of the `test` group. Test hooks: options that exist to make a test provoke a
//! failure path.

use super::{Kind, Spec, Word};

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
    ACPI_CORRUPT: Word = Spec {
        key: "acpi.corrupt",
        kind: Kind::Choice(&["none", "srat_checksum", "srat_length"]),
        default: "none",
        help: "test hook: damages the kernel's copy of the SRAT before it is read (bad checksum, or a length field that runs past the table), the bad-table cases QEMU's -acpitable cannot produce",
    };
    VMALLOC_TEST_LOOPS: u64 = Spec {
        key: "vmalloc.test_loops",
        kind: Kind::U64 { min: 1, max: 1_000_000 },
        default: "100",
        help: "loop count of the test_vmalloc cases (test_loop_count)",
    };
}
