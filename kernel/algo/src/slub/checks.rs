//! Which misuse checks the sheaves free fast path runs (`slub.checks`): `Full`, numalab's
//! (every invalid free is reported and never cached), or `Linux`, what Linux 7's free fast
//! path does with Debian's configuration (CONFIG_SLAB_FREELIST_HARDENED=y, no slub_debug):
//! the object's slab and cache (cache_from_obj under hardening, virt_to_slab for kfree) and
//! the node bypass, but no object-boundary check and no double-free check before the push
//! into the sheaf. The slow paths run every check in both modes. docs/slub.md lists what
//! `Linux` lets through; checks_tests.rs shows each.

use super::cache::Cache;
use super::platform::Platform;
use core::sync::atomic::Ordering::Relaxed;

crate::options::choice! {
    /// The checks of the sheaves free fast path (`slub.checks`).
    pub enum Checks {
        /// Every invalid free the slab path would find is found on the fast path too.
        #[default]
        Full = "full",
        /// Linux 7's fast path with hardening and without slub_debug.
        Linux = "linux",
    }
}

impl<P: Platform> Cache<P> {
    /// Sets the free fast path's checks. Safe at any time: an object already cached stays
    /// cached, and the next free runs the new checks.
    pub fn set_checks(&self, checks: Checks) {
        let linux = checks == Checks::Linux;
        self.checks_linux.store(linux, Relaxed);
        self.sheaves_full
            .store(usize::from(self.sheaf_capacity != 0 && !linux), Relaxed);
    }

    /// The free fast path's checks.
    pub fn checks(&self) -> Checks {
        if self.checks_linux.load(Relaxed) {
            Checks::Linux
        } else {
            Checks::Full
        }
    }

    /// Whether the free paths run numalab's own checks (object boundary, double free of the
    /// last object pushed), which Linux's fast path does not (the slow paths' reads).
    pub(crate) fn full_checks(&self) -> bool {
        !self.checks_linux.load(Relaxed)
    }
}
