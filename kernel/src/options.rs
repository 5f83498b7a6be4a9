//! The kernel's options (read from fw_cfg `opt/numalab/cmdline`, set with boot's
//! `--set key=value`). The table lives in kernel/algo (`numalab_algo::options`, one file per
//! component, shared with the host, which checks `--set` against it before it boots); this
//! module re-exports its typed handles and reads the command line once.

#[cfg(feature = "ktest")]
pub use numalab_algo::options::bench::*;
pub use numalab_algo::options::fault::*;
pub use numalab_algo::options::frame::*;
pub use numalab_algo::options::kfree_rcu::*;
pub use numalab_algo::options::rcu::*;
pub use numalab_algo::options::run::*;
pub use numalab_algo::options::slub::*;
pub use numalab_algo::options::smp::*;
#[cfg(feature = "ktest")]
pub use numalab_algo::options::soak::*;
pub use numalab_algo::options::sync::*;
#[cfg(feature = "ktest")]
pub use numalab_algo::options::test::*;
#[cfg(feature = "ktest")]
pub use numalab_algo::options::test_vmalloc::*;
pub use numalab_algo::options::vmalloc::*;
use numalab_algo::options::Options;
use spin::Once;

static OPTIONS: Once<Options> = Once::new();

/// Reads and parses the options (once); errors are reported by the `options` KTAP test.
pub fn load() -> &'static Options {
    OPTIONS.call_once(|| {
        let cmdline = crate::arch::fw_cfg::read_string("opt/numalab/cmdline");
        Options::parse(&cmdline, &numalab_algo::options::all_specs())
    })
}

/// Every handle's check (its type matches its kind, its default parses), for the `options`
/// test.
#[cfg(feature = "ktest")]
pub fn checks() -> impl Iterator<Item = &'static fn() -> Result<(), alloc::string::String>> {
    numalab_algo::options::GROUPS
        .iter()
        .flat_map(|g| g.checks.iter())
}
