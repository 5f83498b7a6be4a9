//! Layer 13: under KVM (`--accel kvm`, real cores) the smp and slub suites pass and a tsc
//! benchmark (the list_lock experiment with lock statistics, the one that once stalled)
//! completes, on hosts where KVM can boot numalab; elsewhere each test says why it skipped
//! (a printed line: `cargo test -- --nocapture` shows it).

use numalab::*;
use numalab_boot::qemu::accel::{self, Accel};
use std::path::Path;

/// Why KVM cannot boot numalab on this host (None: it can).
fn kvm_unusable() -> Option<String> {
    accel::kvm_problem(Path::new(accel::KVM_DEVICE)).or_else(|| accel::pvm_note(Path::new("/sys")))
}

/// `suite` with `sets` on 2node with 2 vCPUs under KVM (2 vCPUs: the host this was written on
/// has 2 cores; placement refuses more vCPUs than host CPUs).
fn kvm_config(suite: &str, sets: &[&str]) -> RunConfig {
    let mut c = config("2node");
    c.kernel.suite = numalab_algo::options::Suite::from_name(suite).expect("a suite name");
    c.machine.smp = Some(2);
    c.host.accel = Accel::Kvm;
    c.host.placement.oversubscribe = true;
    for s in sets {
        c.kernel.options.set_word(s).unwrap();
    }
    c.host.timeout = std::time::Duration::from_secs(180);
    c
}

#[test]
fn s13_smp_and_slub_suites_pass_under_kvm() {
    if let Some(why) = kvm_unusable() {
        println!("s13: skipped: {why}");
        return;
    }
    for filter in ["filter=smp", "filter=slub"] {
        let out = boot(&kvm_config("test", &[filter]));
        assert_eq!(out.verdict, Verdict::Pass, "{filter}:\n{}", out.log);
        assert!(
            out.boot_log.ktap.passed() > 0,
            "{filter}: no test ran:\n{}",
            out.log
        );
        assert!(out.command.contains("-accel kvm"), "{}", out.command);
    }
}

#[test]
fn s13_the_list_lock_bench_completes_under_kvm() {
    if let Some(why) = kvm_unusable() {
        println!("s13: skipped: {why}");
        return;
    }
    let c = kvm_config(
        "bench",
        &["bench=slub_list_lock", "lock_stat=1", "bench.smoke=1"],
    );
    let out = boot(&c);
    assert_eq!(out.verdict, Verdict::Pass, "{}", out.log);
    let (records, violations) =
        numalab_boot::bench::parse_log(&out.log, numalab_boot::bench::Boot::Tsc);
    assert!(violations.is_empty(), "{violations:?}");
    assert!(
        records
            .iter()
            .any(|r| r.bench == "slub_list_lock" && r.cpus == 2),
        "no 2-CPU record:\n{}",
        out.log
    );
}
