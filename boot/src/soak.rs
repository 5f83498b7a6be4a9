//! `qemu-run.sh soak`: one boot of the kernel's soak (`suite=soak`, kernel/src/soak) on a
//! topology, with its length and seed as kernel options; prints the soak's summary (operations,
//! operations per second, invariants checked, the seed) and exits as a run does.

use crate::cli::{exit, SoakOptions};
use crate::qemu::{Outcome, RunConfig, Verdict};
use std::time::Duration;

/// Operations of `soak` without `--minutes` or `--ops` (issue 14: at least 10^7 on 4node).
pub const DEFAULT_OPS: u64 = 10_000_000;
/// Operations of the short soak (the main job's and CI's, at least 10^6).
pub const SHORT_OPS: u64 = 1_000_000;
/// vmalloc's lazy-purge threshold during a soak (pages): low, so purges happen often.
pub const LAZY_MAX_PAGES: u64 = 8192;

/// The kernel options and boot a soak with `o` runs.
pub fn config(o: &SoakOptions) -> RunConfig {
    let mut c = o.machine.config("soak");
    let mut sets = vec![format!("soak.seed={}", o.seed)];
    let timeout_s = match (o.minutes, o.ops) {
        (Some(m), _) => {
            sets.push(format!("soak.seconds={}", m * 60));
            m * 60 + 600
        }
        (None, ops) => {
            let ops = ops.unwrap_or(if o.short { SHORT_OPS } else { DEFAULT_OPS });
            sets.push(format!("soak.ops={ops}"));
            // Generous: 10^7 operations take minutes on a 2-core host (docs/testing.md).
            600 + ops / 2_000
        }
    };
    if !o
        .machine
        .sets
        .iter()
        .any(|s| s.starts_with("vmalloc.lazy_max_pages="))
    {
        sets.push(format!("vmalloc.lazy_max_pages={LAZY_MAX_PAGES}"));
    }
    // The user's --set come last: they win.
    sets.append(&mut c.sets);
    c.sets = sets;
    // --timeout left at its default: sized by the soak's length.
    if o.machine.timeout == crate::cli::DEFAULT_TIMEOUT_S {
        c.timeout = Duration::from_secs(timeout_s);
    }
    c.log = o.log.clone();
    c.echo = !o.quiet;
    c
}

/// The main job's short soak (issue 14: the main job and CI run at least 10^6 operations): the
/// main job's machine and `--set` options, `suite=soak`, SHORT_OPS operations with seed 1,
/// console not echoed (a failure prints the whole log).
pub fn main_job_config(base: &RunConfig) -> RunConfig {
    let mut c = base.clone();
    c.suite = "soak".into();
    let mut sets = vec!["soak.seed=1".to_string(), format!("soak.ops={SHORT_OPS}")];
    if !base
        .sets
        .iter()
        .any(|s| s.starts_with("vmalloc.lazy_max_pages="))
    {
        sets.push(format!("vmalloc.lazy_max_pages={LAZY_MAX_PAGES}"));
    }
    // The user's --set come last: they win (a `bench=` or `filter=` is ignored by the soak).
    sets.extend(base.sets.iter().cloned());
    c.sets = sets;
    c.timeout = Duration::from_secs(600 + SHORT_OPS / 2_000);
    c.log = None;
    c.echo = false;
    c
}

/// Runs the main job's short soak and prints its summary; returns the exit status.
pub fn main_job(base: &RunConfig) -> i32 {
    println!("numalab: main job: short soak ({SHORT_OPS} operations, seed 1; `./qemu-run.sh soak` for 10^7)");
    let c = main_job_config(base);
    match crate::build_and_run(&c) {
        Ok(out) => report(&out),
        Err(e) => {
            eprintln!("numalab: {e}");
            exit::BUILD
        }
    }
}

/// The soak's own lines of a log (`# soak: ...`).
pub fn soak_lines(log: &str) -> Vec<&str> {
    log.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("# soak: "))
        .collect()
}

/// Builds, boots, prints the summary; returns the exit status.
pub fn run(o: &SoakOptions) -> i32 {
    let c = config(o);
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
    let lines = soak_lines(&outcome.log);
    let done = lines.iter().find(|l| l.starts_with("# soak: done: "));
    match (&outcome.verdict, done) {
        (Verdict::Pass, Some(done)) => {
            println!(
                "numalab: soak PASS ({:.1} s wall): {}",
                outcome.elapsed.as_secs_f64(),
                done.trim_start_matches("# soak: done: ")
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
    use crate::cli::{parse, Job};

    fn soak(args: &str) -> SoakOptions {
        match parse(args.split_whitespace()) {
            Ok(Job::Soak(o)) => o,
            other => panic!("{args}: {other:?}"),
        }
    }

    #[test]
    fn options_become_kernel_options() {
        let c = config(&soak("soak"));
        assert_eq!(c.suite, "soak");
        assert!(
            c.sets.contains(&"soak.ops=10000000".to_string()),
            "{:?}",
            c.sets
        );
        assert!(c.sets.contains(&"soak.seed=1".to_string()));
        assert!(c.sets.contains(&"vmalloc.lazy_max_pages=8192".to_string()));
        let c = config(&soak(
            "soak --minutes 3 --seed 77 --topology 2node --set fault.slab=1",
        ));
        assert!(
            c.sets.contains(&"soak.seconds=180".to_string()),
            "{:?}",
            c.sets
        );
        assert!(c.sets.contains(&"soak.seed=77".to_string()));
        assert_eq!(c.sets.last().map(String::as_str), Some("fault.slab=1"));
        assert_eq!(c.timeout, Duration::from_secs(780));
        let c = config(&soak("soak --short"));
        assert!(c.sets.contains(&"soak.ops=1000000".to_string()));
        let c = config(&soak("soak --ops 5000 --set vmalloc.lazy_max_pages=7"));
        assert!(c.sets.contains(&"soak.ops=5000".to_string()));
        assert!(!c.sets.contains(&"vmalloc.lazy_max_pages=8192".to_string()));
    }

    #[test]
    fn main_job_runs_the_short_soak_on_its_machine() {
        let base = match parse("--topology 2node --set slub.debug=F".split_whitespace()) {
            Ok(Job::Run(c)) | Ok(Job::Main(c, _)) => c,
            other => panic!("{other:?}"),
        };
        let c = main_job_config(&base);
        assert_eq!(c.suite, "soak");
        assert_eq!(c.topology.name, base.topology.name);
        assert!(
            c.sets.contains(&format!("soak.ops={SHORT_OPS}")),
            "{:?}",
            c.sets
        );
        assert!(c.sets.contains(&"vmalloc.lazy_max_pages=8192".to_string()));
        assert_eq!(c.sets.last().map(String::as_str), Some("slub.debug=F"));
        assert!(!c.echo);
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
        ] {
            assert!(parse(bad.split_whitespace()).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn summary_lines() {
        let log = "x\n# soak: seed 1\n    ok 1 soak\n# soak: done: 5 operations\n";
        assert_eq!(
            soak_lines(log),
            ["# soak: seed 1", "# soak: done: 5 operations"]
        );
    }
}
