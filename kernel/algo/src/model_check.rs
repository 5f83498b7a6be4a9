//! Shared pieces of the shuttle model checks (slub/model.rs, pcp_model.rs, vmalloc/model.rs):
//! a scheduling point, the run of one scenario under random and PCT schedules with fixed
//! seeds, the number of schedules (`NUMALAB_MODEL_SCHEDULES` overrides the default for a
//! longer hunt), and the failure message of a run that must fail.

use shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use shuttle::{Config, Runner};
use std::string::{String, ToString};
use std::time::Duration;

/// A scheduling point: shuttle may run another thread here. Shuttle does not model time, so
/// a zero sleep is a plain context switch (unlike `yield_now`, which also tells PCT to
/// deprioritise the caller, as a spin loop should).
pub fn point() {
    shuttle::thread::sleep(Duration::ZERO);
}

/// Schedules per scheduler: `default`, or `NUMALAB_MODEL_SCHEDULES` when set to a number.
pub fn schedules(default: usize) -> usize {
    std::env::var("NUMALAB_MODEL_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Steps after which a schedule counts as a livelock (the scenarios take a few thousand).
const MAX_STEPS: usize = 20_000;

/// Runs `f` under `iterations` random schedules, then `iterations` PCT schedules (depth 3),
/// both seeded with `seed` so that a failure reproduces. Panics on the first failure, after
/// shuttle printed the failing schedule.
pub fn check(f: impl Fn() + Send + Sync + Clone + 'static, iterations: usize, seed: u64) {
    let schedulers: [Box<dyn Scheduler + Send>; 2] = [
        Box::new(RandomScheduler::new_from_seed(seed, iterations)),
        Box::new(PctScheduler::new_from_seed(seed, 3, iterations)),
    ];
    for sched in schedulers {
        let mut config = Config::new();
        config.max_steps = shuttle::MaxSteps::FailAfter(MAX_STEPS);
        config.stack_size = 1 << 20;
        Runner::new(sched, config).run(f.clone());
    }
}

/// The panic message of `run` (a `check` expected to fail), or None when it passed.
pub fn failure(run: impl FnOnce() + std::panic::UnwindSafe) -> Option<String> {
    let e = std::panic::catch_unwind(run).err()?;
    Some(
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}
