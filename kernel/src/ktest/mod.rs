//! In-kernel tests, KUnit style: each test registers itself with `ktest!`, the runner prints KTAP.
//!
//! `ktest!` places a `KTest` (suite, name, kind, file, line, function) in the linker section
//! `ktests`; `run` walks the section between the `__start_ktests`/`__stop_ktests` symbols the
//! linker provides, so there is no central list of tests. Tests are grouped by their `KSuite`.
//! Each suite names the suites whose services its tests use (`uses`), and no one assigns an
//! order by hand: a suite runs after every suite below it in that graph (by depth, the longest
//! chain of `uses` under it; suites of one depth by name), so topology runs before smp, frame,
//! slub ... Within a suite correctness tests run first, then stress tests, then the bench plan
//! and experiments, each in source order (file, line).
//!
//! Output is KTAP version 1 as Linux's KUnit prints it: one subtest block per suite
//! (`# Subtest: slub`, its plan, its cases indented four spaces, the suite's `# slub: pass:..`
//! line), then the suite's own result `ok N slub`, and KUnit's `# Totals:` line at the end.
//!
//! This module is a leaf: it imports serial, options and arch only. What a test needs of the
//! machine comes in its `Ctx` (options, nodes, CPUs online); the BENCH writer for experiments is
//! `ktest::bench`.

pub mod bench;
mod selftest;
pub mod suites;

use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::formats::ktap::{self, Outcome, Totals};
use numalab_algo::options::Options;

/// What kind of test an entry is; the `suite=` option picks kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Correctness tests: quick, deterministic.
    Test,
    /// Stress tests: all CPUs, many operations, conservation checked at the end.
    Stress,
    /// Runs before the experiments whenever benchmarks run, whatever `bench=` selects (the
    /// bench plan: it validates the selection).
    BenchPlan,
    /// Experiments: print BENCH lines, selected by name with `bench=`; fail only when they
    /// cannot run or a knob check fails.
    Bench,
    /// Runs after the experiments whenever benchmarks run, whatever `bench=` selects (the
    /// SLUB sysfs snapshot of what they left).
    BenchEnd,
    /// The long randomized soak (kernel/src/soak): only with `suite=soak`.
    Soak,
}

/// What the kernel runs after boot (`suite=` option, declared in kernel/algo's options).
pub use crate::options::Suite;

/// Whether `suite` runs tests of `kind`.
fn includes(suite: Suite, kind: Kind) -> bool {
    match suite {
        Suite::All => kind != Kind::Soak,
        Suite::Soak => kind == Kind::Soak,
        Suite::None => false,
        Suite::Test => kind == Kind::Test,
        Suite::Stress => kind == Kind::Stress,
        Suite::Bench => matches!(kind, Kind::Bench | Kind::BenchPlan | Kind::BenchEnd),
    }
}

/// A group of tests printed as one KTAP subtest block (KUnit's `struct kunit_suite`).
pub struct KSuite {
    /// The subsystem, e.g. `topology`, `slub`.
    pub name: &'static str,
    /// The suites whose services this suite's tests use: it runs after each of them (and
    /// after what they use). A cycle is a ktest failure (`ktest.suites_form_no_cycle`).
    pub uses: &'static [&'static KSuite],
    /// Runs in every boot that runs tests of any kind, whatever `filter=` says (the option
    /// check: a misspelt key must fail a bench boot or a filtered boot too).
    pub every_suite: bool,
}

/// The longest chain of `uses` a suite may have; a longer one is a cycle.
pub const MAX_SUITE_DEPTH: u32 = 32;

impl KSuite {
    /// The length of the longest chain of `uses` below this suite (0: it uses none), or None
    /// when the chain is longer than [`MAX_SUITE_DEPTH`] (the graph has a cycle).
    pub fn depth(&self) -> Option<u32> {
        self.depth_within(MAX_SUITE_DEPTH)
    }

    fn depth_within(&self, budget: u32) -> Option<u32> {
        let mut depth = 0;
        for used in self.uses {
            depth = depth.max(1 + used.depth_within(budget.checked_sub(1)?)?);
        }
        Some(depth)
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

/// What a test gets from the runner: this boot's options and the machine it runs on.
pub struct Ctx<'a> {
    pub opts: &'a Options,
    /// NUMA nodes of the machine (memoryless and CPU-less ones included).
    pub nr_nodes: usize,
    /// CPUs that came online.
    pub cpus_online: usize,
}

/// One registered test (placed in the `ktests` section by `ktest!`).
pub struct KTest {
    pub suite: &'static KSuite,
    pub name: &'static str,
    pub kind: Kind,
    pub file: &'static str,
    pub line: u32,
    pub func: fn(&Ctx) -> TestResult,
}

/// Registers a test: `ktest!(SUITE, Kind, function)` names it after the function,
/// `ktest!(SUITE, Kind, "name", function)` gives it another name.
#[macro_export]
macro_rules! ktest {
    ($suite:path, $kind:ident, $func:ident) => {
        $crate::ktest!($suite, $kind, stringify!($func), $func);
    };
    ($suite:path, $kind:ident, $name:expr, $func:expr) => {
        const _: () = {
            // The one `unsafe_code` item of a registration (a static placed in a named
            // section), allowed here so that modules denying unsafe code can register tests:
            // the section holds only `KTest` values, read back as a slice of them.
            #[allow(unsafe_code)]
            #[used]
            #[link_section = "ktests"]
            static ENTRY: $crate::ktest::KTest = $crate::ktest::KTest {
                suite: &$suite,
                name: $name,
                kind: $crate::ktest::Kind::$kind,
                file: file!(),
                line: line!(),
                func: $func,
            };
        };
    };
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

// The bounds of the `ktests` section, defined by the linker (any section whose name is a C
// identifier gets them). Declared as bytes: only their addresses are used.
extern "C" {
    static __start_ktests: u8;
    static __stop_ktests: u8;
}

/// Every test in the `ktests` section, in link order (unsorted).
pub fn registered() -> &'static [KTest] {
    // SAFETY: the linker defines __start_ktests/__stop_ktests around the `ktests` section, which
    // holds only `KTest` statics placed there by `ktest!` (each `#[used]`, of one type, so the
    // section is an array of KTest with the type's alignment). The statics are immutable and
    // live for the whole run; the pointers only serve as bounds of that array.
    unsafe {
        let start = core::ptr::addr_of!(__start_ktests).cast::<KTest>();
        let stop = core::ptr::addr_of!(__stop_ktests).cast::<KTest>();
        let len = (stop as usize - start as usize) / core::mem::size_of::<KTest>();
        core::slice::from_raw_parts(start, len)
    }
}

/// The tests of `suite` kind that `filter=` and `bench=` select, sorted by suite (depth in the
/// `uses` graph, then name; a suite in a cycle last, failed by the ktest suite), then kind
/// (tests, stress, the bench plan, experiments), then source position.
fn selected(suite: Suite, opts: &Options) -> Vec<&'static KTest> {
    let filter = opts.get(&crate::options::FILTER);
    let any_kind = suite != Suite::None;
    // A command line with a bad option runs only the option check (which fails, naming it):
    // results measured under settings other than the ones asked for are worth nothing (a
    // misspelt `bench=` would otherwise run every experiment).
    let options_only = !opts.errors.is_empty();
    let mut tests: Vec<&KTest> = registered()
        .iter()
        .filter(|t| {
            (t.suite.every_suite && any_kind)
                || (!options_only
                    && includes(suite, t.kind)
                    && (filter.is_empty()
                        || t.suite.name.contains(filter)
                        || t.name.contains(filter)))
        })
        .filter(|t| t.kind != Kind::Bench || bench::selected(t.name))
        .collect();
    tests.sort_by_key(|t| {
        let depth = t.suite.depth().unwrap_or(u32::MAX);
        (depth, t.suite.name, t.kind, t.file, t.line)
    });
    tests
}

/// Declares that the running test is about to provoke, on purpose, up to `count` warnings
/// whose text contains `what` (one of `numalab_algo::formats::ktap::WATCHED_WARNINGS`, such as
/// `ktap::INVALID_FREE`). The host runner fails a run whose log has a watched warning that
/// no test declared; the declaration lasts until this test's result line (docs/testing.md).
pub fn expect_warnings(count: u32, what: &str) {
    crate::println!("{}", ktap::expect_warnings_line(count, what));
}

/// Run after the bench suite's last line, once installed (the kernel's entry installs the
/// lock_stat block's printer, bench::lock_stat, which ktest cannot import).
static AFTER_BENCH: spin::Once<fn()> = spin::Once::new();

/// Installs what runs after the bench suite (once; later calls are ignored).
pub fn set_after_bench(f: fn()) {
    AFTER_BENCH.call_once(|| f);
}

/// Runs the selected tests of `suite`, printing KTAP version 1 with one subtest block per
/// KSuite. Returns true when no test failed and at least one ran.
pub fn run(suite: Suite, ctx: &Ctx) -> bool {
    bench::set_machine(ctx.nr_nodes, ctx.cpus_online);
    let tests = selected(suite, ctx.opts);
    let groups: Vec<&[&KTest]> = tests
        .chunk_by(|a, b| core::ptr::eq(a.suite, b.suite))
        .collect();
    crate::println!("{}", numalab_algo::wire::ktap::VERSION);
    crate::println!("{}{}", numalab_algo::wire::ktap::PLAN, groups.len());
    let mut totals = Totals::default();
    for (i, group) in groups.iter().enumerate() {
        let name = group[0].suite.name;
        for line in ktap::subtest_header(name, group.len()) {
            crate::println!("{}", line);
        }
        let mut suite_totals = Totals::default();
        for (j, test) in group.iter().enumerate() {
            crate::println!("{}# {}: running", ktap::INDENT, test.name);
            let outcome = match bench::refused((test.func)(ctx)) {
                Ok(()) => Outcome::Pass,
                Err(TestError::Fail(reason)) => Outcome::Fail(reason),
                Err(TestError::Skip(reason)) => Outcome::Skip(reason),
            };
            suite_totals.add(&outcome);
            crate::println!(
                "{}{}",
                ktap::INDENT,
                ktap::result_line(j + 1, test.name, &outcome)
            );
        }
        crate::println!("{}", suite_totals.suite_line(name));
        crate::println!("{}", ktap::suite_result_line(i + 1, name, &suite_totals));
        totals.merge(&suite_totals);
        if name == "bench" {
            if let Some(after) = AFTER_BENCH.get() {
                after();
            }
        }
    }
    crate::println!("{}", totals.line());
    totals.fail == 0 && totals.total() > 0
}
