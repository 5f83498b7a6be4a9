//! End to end: a machine too small to boot (`-m 16M`) or too small for its
//! suite (`-m 24M`) is refused before anything boots, naming the floor; a guest that runs out
//! of memory anyway ends at once with exit status 5 and the cause: the bootloader's panic when
//! it cannot map the machine (it would halt until the time-out), or the kernel's own
//! `numalab: out of memory: ...` line (QEMU status 37). Those two are played by a stand-in
//! for QEMU that prints what the real guest prints (the runner's floor keeps a real machine
//! from getting there).

use super::script::{qemu_run, refused_in, scratch};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[test]
fn machines_below_the_memory_floor_are_refused_before_booting() {
    let d = scratch("memory-floor");
    // --timeout 5 bounds a run that is wrongly booted (16M hangs in the bootloader).
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "-m 16M",
            &["--timeout", "5", "--", "-m", "16M"],
            "16 MiB of memory, too little memory to boot",
        ),
        (
            "-m 24M",
            &["--timeout", "5", "--", "-m", "24M"],
            "24 MiB of memory, too little memory for --suite all",
        ),
        (
            "bench -- -m 24M",
            &["bench", "--smoke", "--timeout", "5", "--", "-m", "24M"],
            "too little memory for --suite all",
        ),
        (
            "--suite test -- -m 40M",
            &["--suite", "test", "--timeout", "5", "--", "-m", "40M"],
            "too little memory for --suite test (the floor is 57 MiB",
        ),
    ];
    for (label, args, want) in cases {
        refused_in(&d, label, args, want);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A stand-in for QEMU in `dir` that runs `body` (sh).
fn fake_qemu(dir: &Path, body: &str) -> PathBuf {
    let fake = dir.join("fake-qemu");
    std::fs::write(&fake, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

/// Runs a one-boot run on the stand-in; returns its exit status and everything printed.
fn run_on(d: &Path, fake: &Path) -> (Option<i32>, String) {
    let q = fake.display().to_string();
    // --timeout 2: without the fix, the halted bootloader ran to the wall cap (40 s).
    let (out, secs) = qemu_run(d, &["--qemu", &q, "--suite", "test", "--timeout", "2"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "hostile: {}: exit {:?} in {secs:.1} s",
        fake.display(),
        out.status.code()
    );
    (out.status.code(), all)
}

#[test]
fn the_bootloader_out_of_memory_ends_the_boot_at_once_with_exit_5() {
    let d = scratch("memory-bootloader");
    // What the bootloader printed on `-m 20M` (qemu-system-x86_64 ... -m 20M), then it halts.
    let fake = fake_qemu(
        &d,
        "echo 'ERROR: panicked at /r/bootloader-x86_64-common-0.11.14/src/lib.rs:369:29:'\n\
         echo 'failed to map page Page[2MiB](0x2fdc0000000) to frame PhysFrame[2MiB](0x7dc0000000): FrameAllocationFailed'\n\
         exec sleep 3600",
    );
    let (code, all) = run_on(&d, &fake);
    assert_eq!(code, Some(5), "{all}");
    assert!(
        all.contains("the guest ran out of memory: the bootloader ran out of memory mapping"),
        "{all}"
    );
    assert!(
        !all.contains("panicked at src/") && !all.contains("RUST_BACKTRACE"),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_kernel_out_of_memory_line_and_status_37_are_exit_5_not_a_test_failure() {
    let d = scratch("memory-kernel");
    let fake = fake_qemu(
        &d,
        "echo 'numalab 0.1.0 booting: x86_64 unikernel lab for NUMA memory allocators'\n\
         echo \"numalab: out of memory: slub: no memory for CPU 0's per-CPU slab region\"\n\
         exit 37",
    );
    let (code, all) = run_on(&d, &fake);
    assert_eq!(code, Some(5), "{all}");
    assert!(
        all.contains(
            "the guest ran out of memory: numalab: out of memory: slub: no memory for CPU 0's"
        ),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A real guest above the floor that runs short anyway: 128 vCPUs in 60 MiB. The kernel says
/// what ran out and exits with 37 (it panicked in vmalloc's init: exit 1, a failed run).
#[test]
fn a_real_guest_out_of_memory_in_early_init_says_so_with_exit_5() {
    let d = scratch("memory-real");
    let args = [
        "--suite",
        "test",
        "--timeout",
        "60",
        "--",
        "-smp",
        "128",
        "-m",
        "60M",
    ];
    let (out, secs) = qemu_run(&d, &args);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "hostile: 128 vCPUs in 60 MiB: exit {:?} in {secs:.1} s",
        out.status.code()
    );
    assert_eq!(out.status.code(), Some(5), "{all}");
    assert!(
        all.contains("the guest ran out of memory: numalab: out of memory: vmalloc: no memory"),
        "{all}"
    );
    assert!(!all.contains("PANIC"), "{all}");
    let _ = std::fs::remove_dir_all(&d);
}
