//! In-kernel tests: a registry of named tests, run by suite and printed as KTAP version 1.
//!
//! Each subsystem exposes `pub const TESTS: &[KTest]` (usually in its `tests.rs`), listed in
//! `registry.rs`. A test returns `Ok(())`, or a `TestError` saying why it failed or was
//! skipped; `kassert!`/`kassert_eq!` build failures that carry file and line.

mod registry;
mod selftest;

use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::ktap::{result_line, Outcome, Totals};
use numalab_algo::options::Options;

/// Which suite a test belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Correctness tests: quick, deterministic.
    Test,
    /// Stress tests: all CPUs, many operations, conservation checked at the end.
    Stress,
    /// Benchmarks: print BENCH lines; fail only when they cannot run.
    Bench,
}

/// What the kernel runs after boot (`suite=` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    Test,
    Stress,
    Bench,
    All,
    None,
}

impl Suite {
    pub fn from_name(name: &str) -> Suite {
        match name {
            "stress" => Suite::Stress,
            "bench" => Suite::Bench,
            "all" => Suite::All,
            "none" => Suite::None,
            _ => Suite::Test,
        }
    }

    fn includes(self, kind: Kind) -> bool {
        match self {
            Suite::All => true,
            Suite::None => false,
            Suite::Test => kind == Kind::Test,
            Suite::Stress => kind == Kind::Stress,
            Suite::Bench => kind == Kind::Bench,
        }
    }
}

/// Why a test did not pass.
#[derive(Debug)]
pub enum TestError {
    Fail(String),
    Skip(String),
}

impl From<String> for TestError {
    fn from(reason: String) -> Self {
        TestError::Fail(reason)
    }
}

pub type TestResult = Result<(), TestError>;

/// One registered test.
pub struct KTest {
    /// The subsystem, e.g. `options`, `topology`, `slub`.
    pub module: &'static str,
    pub name: &'static str,
    pub kind: Kind,
    pub func: fn(&Options) -> TestResult,
}

/// Fails the current test (returns `Err`) with file, line and a message when `cond` is false.
#[macro_export]
macro_rules! kassert {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::ktest::TestError::Fail(alloc::format!(
                "{}:{}: assertion failed: {}", file!(), line!(), stringify!($cond)
            )));
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err($crate::ktest::TestError::Fail(alloc::format!(
                "{}:{}: {}", file!(), line!(), format_args!($($arg)+)
            )));
        }
    };
}

/// Fails the current test when `left != right`, showing both values.
#[macro_export]
macro_rules! kassert_eq {
    ($left:expr, $right:expr) => {{
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err($crate::ktest::TestError::Fail(alloc::format!(
                "{}:{}: {} == {} failed: {:?} != {:?}",
                file!(), line!(), stringify!($left), stringify!($right), l, r
            )));
        }
    }};
    ($left:expr, $right:expr, $($arg:tt)+) => {{
        let (l, r) = (&$left, &$right);
        if l != r {
            return Err($crate::ktest::TestError::Fail(alloc::format!(
                "{}:{}: {:?} != {:?}: {}", file!(), line!(), l, r, format_args!($($arg)+)
            )));
        }
    }};
}

/// Every registered test (the benchmark plan lists the experiments from it).
pub fn registered() -> impl Iterator<Item = &'static KTest> {
    registry::all()
}

/// Runs every registered test of `suite` (and matching `filter=`), printing KTAP.
/// Returns true when no test failed and at least one ran.
pub fn run(suite: Suite, opts: &Options) -> bool {
    let filter = opts.text("filter");
    let tests: Vec<&KTest> = registry::all()
        .filter(|t| suite.includes(t.kind) || (t.module == "options" && suite != Suite::None))
        .filter(|t| filter.is_empty() || t.module.contains(filter) || t.name.contains(filter))
        .filter(|t| crate::bench::wanted(t))
        .collect();
    crate::println!("KTAP version 1");
    crate::println!("1..{}", tests.len());
    let mut totals = Totals::default();
    for (i, test) in tests.iter().enumerate() {
        crate::println!("# {}.{}: running", test.module, test.name);
        let outcome = match (test.func)(opts) {
            Ok(()) => Outcome::Pass,
            Err(TestError::Fail(reason)) => Outcome::Fail(reason),
            Err(TestError::Skip(reason)) => Outcome::Skip(reason),
        };
        totals.add(&outcome);
        let name = alloc::format!("{}.{}", test.module, test.name);
        crate::println!("{}", result_line(i + 1, &name, &outcome));
    }
    crate::println!("{}", totals.line());
    totals.fail == 0 && totals.total() > 0
}
