//! Tests of the test machinery itself: option errors, and a failure on request.

use super::{KTest, Kind, TestError, TestResult};
use crate::{kassert, kassert_eq};
use numalab_algo::options::Options;

/// Fails when the command line had an unknown key or a bad value, naming both.
fn options_valid(opts: &Options) -> TestResult {
    if opts.errors.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(opts.errors.join("; ")))
    }
}

/// The kernel option `test.fail=1` exists only to make this fail, so the host can check that a
/// failing in-kernel test turns into a failed run with the serial log shown.
fn deliberate_failure(opts: &Options) -> TestResult {
    kassert!(
        !opts.bool("test.fail"),
        "deliberate failure requested by test.fail=1"
    );
    Ok(())
}

fn heap_alloc(_opts: &Options) -> TestResult {
    let v: alloc::vec::Vec<u64> = (0..1000).collect();
    kassert_eq!(v.iter().sum::<u64>(), 499_500);
    let (used, free) = crate::mm::early::heap_usage();
    kassert!(
        used > 0 && free > 0,
        "bootstrap heap used {} free {}",
        used,
        free
    );
    Ok(())
}

pub const TESTS: &[KTest] = &[
    KTest {
        module: "options",
        name: "valid",
        kind: Kind::Test,
        func: options_valid,
    },
    KTest {
        module: "ktest",
        name: "deliberate_failure",
        kind: Kind::Test,
        func: deliberate_failure,
    },
    KTest {
        module: "early",
        name: "bootstrap_heap",
        kind: Kind::Test,
        func: heap_alloc,
    },
];
