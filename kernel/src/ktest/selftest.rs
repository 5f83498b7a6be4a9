//! Tests of the test machinery itself: option errors, and a failure on request.

use super::{Ctx, KSuite, TestError, TestResult};
use crate::{kassert, ktest};

/// The option check runs in every boot that runs any test.
static OPTIONS: KSuite = KSuite {
    name: "options",
    order: 0,
    every_suite: true,
};
/// The runner itself.
static KTEST: KSuite = KSuite {
    name: "ktest",
    order: 1,
    every_suite: false,
};
/// Fails when the command line had an unknown key or a bad value, naming both.
/// Also fails when an option handle's type does not match its spec's kind (a handle declared
/// `bool` for a number would read as false forever).
fn options_valid(ctx: &Ctx) -> TestResult {
    let mut errors = ctx.opts.errors.clone();
    errors.extend(crate::options::checks().filter_map(|check| check().err()));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(errors.join("; ")))
    }
}

/// The kernel option `test.fail=1` exists only to make this fail, so the host can check that a
/// failing in-kernel test turns into a failed run with the serial log shown.
fn deliberate_failure(ctx: &Ctx) -> TestResult {
    kassert!(
        !ctx.opts.get(&crate::options::TEST_FAIL),
        "deliberate failure requested by test.fail=1"
    );
    Ok(())
}

ktest!(OPTIONS, Test, "valid", options_valid);
ktest!(KTEST, Test, deliberate_failure);
