//! Shared helpers for the host tests: boot a configuration, and assert on what the kernel said.

pub use numalab_boot::{Firmware, Outcome, RunConfig, Verdict};
use std::time::Duration;

/// A quiet run of the `test` suite on `topology` with a timeout suitable for 2 host cores.
pub fn config(topology: &str) -> RunConfig {
    let mut c = RunConfig::new(topology, "test");
    c.timeout = Duration::from_secs(240);
    c
}

/// Builds and boots `config`; a build failure fails the calling test.
pub fn boot(config: &RunConfig) -> Outcome {
    numalab_boot::build_and_run(config).unwrap_or_else(|e| panic!("build failed: {e}"))
}

/// Boots and requires a pass; on failure the panic message carries the command and whole log.
pub fn boot_pass(config: &RunConfig) -> Outcome {
    let outcome = boot(config);
    assert!(outcome.passed(), "{}", outcome.failure_report());
    outcome
}

/// The lines of the log that start with `prefix`.
pub fn lines_with<'a>(outcome: &'a Outcome, prefix: &str) -> Vec<&'a str> {
    outcome
        .log
        .lines()
        .filter(|l| l.starts_with(prefix))
        .collect()
}
