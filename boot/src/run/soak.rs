//! `qemu-run.sh soak`: one boot of the kernel's soak (`suite=soak`, kernel/src/soak) on a
//! topology, with its length and seed as kernel options; prints the soak's summary (operations,
//! operations per second, invariants checked, the seed) and exits as a run does.

use crate::cli::{exit, SoakOptions};
use crate::qemu::{Outcome, RunConfig, Verdict};
use numalab_algo::options::soak::{SOAK_OPS, SOAK_SECONDS, SOAK_SEED};
use numalab_algo::options::vmalloc::VMALLOC_LAZY_MAX_PAGES;
use numalab_algo::options::{Cmdline, Suite};
use std::time::Duration;

/// Operations of `soak` without `--minutes` or `--ops` (at least 10^7 on 4node).
pub const DEFAULT_OPS: u64 = 10_000_000;
/// Operations of the short soak (the main job's and CI's, at least 10^6).
pub const SHORT_OPS: u64 = 1_000_000;
/// vmalloc's lazy-purge threshold during a soak (pages): low, so purges happen often.
pub const LAZY_MAX_PAGES: u64 = 8192;

/// The kernel options and boot a soak with `o` runs; Err: a value outside the kernel
/// option's range (one line, exit 2).
pub fn config(o: &SoakOptions) -> Result<RunConfig, String> {
    let mut c = o.machine.config(Suite::Soak);
    let mut options = Cmdline::new();
    options.set(&SOAK_SEED, o.seed)?;
    let timeout_s = match (o.minutes, o.ops) {
        (Some(m), _) => {
            options.set(&SOAK_SECONDS, m * 60)?;
            m * 60 + 600
        }
        (None, ops) => {
            let ops = ops.unwrap_or(if o.short { SHORT_OPS } else { DEFAULT_OPS });
            options.set(&SOAK_OPS, ops)?;
            // Generous: 10^7 operations take minutes on a 2-core host (docs/testing.md).
            600 + ops / 2_000
        }
    };
    if !c.kernel.options.is_set(&VMALLOC_LAZY_MAX_PAGES) {
        options.set(&VMALLOC_LAZY_MAX_PAGES, LAZY_MAX_PAGES)?;
    }
    // The user's --set come last: they win.
    options.extend(&c.kernel.options);
    c.kernel.options = options;
    // --timeout left at its default: sized by the soak's length.
    if o.machine.timeout == crate::cli::DEFAULT_TIMEOUT_S {
        c.host.timeout = Duration::from_secs(timeout_s);
    }
    c.output.log = o.log.clone();
    c.output.echo = !o.quiet;
    Ok(c)
}

/// The main job's short soak (the main job and CI run at least 10^6 operations): the
/// main job's machine and `--set` options, `suite=soak`, SHORT_OPS operations with seed 1,
/// console not echoed (a failure prints the whole log).
pub fn main_job_config(base: &RunConfig) -> Result<RunConfig, String> {
    let mut c = base.clone();
    c.kernel.suite = Suite::Soak;
    let mut options = Cmdline::new();
    options.set(&SOAK_SEED, 1)?;
    options.set(&SOAK_OPS, SHORT_OPS)?;
    if !base.kernel.options.is_set(&VMALLOC_LAZY_MAX_PAGES) {
        options.set(&VMALLOC_LAZY_MAX_PAGES, LAZY_MAX_PAGES)?;
    }
    // The user's --set come last: they win (a `bench=` or `filter=` is ignored by the soak).
    options.extend(&base.kernel.options);
    c.kernel.options = options;
    c.host.timeout = Duration::from_secs(600 + SHORT_OPS / 2_000);
    c.output.log = None;
    c.output.echo = false;
    Ok(c)
}

/// Runs the main job's short soak and prints its summary; returns the exit status.
pub fn main_job(base: &RunConfig) -> i32 {
    println!("numalab: main job: short soak ({SHORT_OPS} operations, seed 1; `./qemu-run.sh soak` for 10^7)");
    let c = match main_job_config(base) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::USAGE;
        }
    };
    match crate::build_and_run(&c) {
        Ok(out) => report(&out),
        Err(e) => {
            eprintln!("numalab: {e}");
            exit::BUILD
        }
    }
}

/// Builds, boots, prints the summary; returns the exit status.
pub fn run_soak(o: &SoakOptions) -> i32 {
    let c = match config(o) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("numalab: soak: {e}");
            return exit::USAGE;
        }
    };
    let outcome = match crate::build_and_run(&c) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::BUILD;
        }
    };
    report(&outcome)
}

/// Prints the summary of a finished soak; returns the exit status.
pub fn report(outcome: &Outcome) -> i32 {
    let done = outcome
        .boot_log
        .soak
        .iter()
        .find_map(|l| numalab_algo::wire::soak::done(l));
    match (&outcome.verdict, done) {
        (Verdict::Pass, Some(done)) => {
            println!(
                "numalab: soak PASS ({:.1} s wall): {}",
                outcome.elapsed.as_secs_f64(),
                done
            );
            exit::PASS
        }
        (verdict, _) => {
            eprint!("{}", outcome.failure_report());
            exit::of(verdict)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{parse, Request};

    fn words(c: &RunConfig) -> Vec<String> {
        c.kernel.options.words()
    }

    fn soak(args: &str) -> SoakOptions {
        match parse(args.split_whitespace()) {
            Ok(Request::Soak(o)) => o,
            other => panic!("{args}: {other:?}"),
        }
    }

    #[test]
    fn options_become_kernel_options() {
        let c = config(&soak("soak")).unwrap();
        assert_eq!(c.kernel.suite, Suite::Soak);
        assert!(
            words(&c).contains(&"soak.ops=10000000".to_string()),
            "{:?}",
            words(&c)
        );
        assert!(words(&c).contains(&"soak.seed=1".to_string()));
        assert!(words(&c).contains(&"vmalloc.lazy_max_pages=8192".to_string()));
        let c = config(&soak(
            "soak --minutes 3 --seed 77 --topology 2node --set fault.slab=1",
        ))
        .unwrap();
        assert!(
            words(&c).contains(&"soak.seconds=180".to_string()),
            "{:?}",
            words(&c)
        );
        assert!(words(&c).contains(&"soak.seed=77".to_string()));
        assert_eq!(words(&c).last().map(String::as_str), Some("fault.slab=1"));
        assert_eq!(c.host.timeout, Duration::from_secs(780));
        let c = config(&soak("soak --short")).unwrap();
        assert!(words(&c).contains(&"soak.ops=1000000".to_string()));
        let c = config(&soak("soak --ops 5000 --set vmalloc.lazy_max_pages=7")).unwrap();
        assert!(words(&c).contains(&"soak.ops=5000".to_string()));
        assert!(!words(&c).contains(&"vmalloc.lazy_max_pages=8192".to_string()));
    }

    #[test]
    fn main_job_runs_the_short_soak_on_its_machine() {
        let base = match parse("--topology 2node --set slub.debug=F".split_whitespace()) {
            Ok(Request::Run(o)) | Ok(Request::Main(o)) => o.config(),
            other => panic!("{other:?}"),
        };
        let c = main_job_config(&base).unwrap();
        assert_eq!(c.kernel.suite, Suite::Soak);
        assert_eq!(c.machine.topology.name, base.machine.topology.name);
        assert!(
            words(&c).contains(&format!("soak.ops={SHORT_OPS}")),
            "{:?}",
            words(&c)
        );
        assert!(words(&c).contains(&"vmalloc.lazy_max_pages=8192".to_string()));
        assert_eq!(words(&c).last().map(String::as_str), Some("slub.debug=F"));
        assert!(!c.output.echo);
    }

    #[test]
    fn bad_soak_options_are_refused() {
        for bad in [
            "soak --minutes 0",
            "soak --minutes x",
            "soak --seed -1",
            "soak --ops 0",
            "soak --minutes 1 --ops 5",
            "soak --suite test",
            "soak --ops 2000000000000",
        ] {
            assert!(parse(bad.split_whitespace()).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn summary_lines() {
        let log = "x\n# soak: seed 1\n    ok 1 soak\n# soak: done: 5 operations\n";
        assert_eq!(
            crate::wire::BootLog::parse(log).soak,
            ["# soak: seed 1", "# soak: done: 5 operations"]
        );
    }
}
