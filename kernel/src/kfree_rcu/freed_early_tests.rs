//! Nothing freed early through kvfree_rcu (suite `kfree_rcu`): the readers and
//! writers of rcu's `nothing_freed_early` over kmalloc'd entries that writers free with
//! kvfree_rcu (the boot's `rcu.kfree` way). An entry freed before its readers' sections end
//! is SLUB's again: under `slub.debug=FZPU` (P) its bytes are the free poison 0x6b at once,
//! otherwise another CPU's next entry of the same size may take its place; either way a reader
//! sees a magic or key it did not load. At the end, after kvfree_rcu_barrier, every replaced
//! entry was freed (kfree_rcu's counts) and the cache's live objects are what they were.

use super::{kvfree_rcu, kvfree_rcu_barrier, total_counts, way};
use crate::ktest::suites::KFREE_RCU as SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::slub::kmalloc::{cache_for, kfree, kmalloc};
use crate::rcu::freed_early_tests::{run, Entry, LIVE};
use crate::rcu::RcuHead;
use crate::{kassert_eq, ktest};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

const ENTRY_BYTES: usize = core::mem::size_of::<Entry>();

/// A kmalloc'd entry for slot `key`; null when kmalloc fails (counted: the test fails, after
/// the run, which skips that replacement).
fn make(key: u64, failed: &AtomicU64) -> *mut Entry {
    let Some(p) = kmalloc(ENTRY_BYTES) else {
        failed.fetch_add(1, Relaxed);
        return core::ptr::null_mut();
    };
    let e = p.as_ptr() as *mut Entry;
    // SAFETY: a fresh kmalloc block of ENTRY_BYTES, ours until freed; every field is written
    // before anything else sees the pointer.
    unsafe {
        e.write(Entry {
            head: RcuHead::new(),
            magic: AtomicU64::new(LIVE),
            key: AtomicU64::new(key),
        })
    };
    e
}

fn nothing_freed_early_through_kvfree_rcu(_ctx: &Ctx) -> TestResult {
    let cache = cache_for(ENTRY_BYTES).expect("a kmalloc class").core();
    let debug = cache.debug_flags();
    let before = cache.stats();
    let k0 = total_counts();
    let failed = AtomicU64::new(0);
    let r = run(&|key| make(key, &failed), &|old| {
        if let Some(p) = NonNull::new(old as *mut u8) {
            // SAFETY: `old` left the table just now (no new reader can load it); a kmalloc
            // block with its rcu_head at byte 0.
            unsafe { kvfree_rcu::<0>(p) };
        }
    })
    .ok_or_else(|| TestError::Fail("no table: kmalloc failed".into()))?;
    kassert_eq!(failed.load(Relaxed), 0, "kmalloc failed");
    kvfree_rcu_barrier();
    let k1 = total_counts();
    crate::println!(
        "    # {}; rcu.kfree={}, kmalloc-{} with poison {}: {} queued, {} freed after kvfree_rcu_barrier",
        r.summary(),
        way().name(),
        cache.object_size(),
        if debug.poison { "on" } else { "off" },
        k1.queued - k0.queued,
        k1.freed - k0.freed
    );
    for &p in &r.table {
        if let Some(p) = NonNull::new(p as *mut u8) {
            // SAFETY: every CPU finished; the table's entries are kmalloc blocks no one else
            // holds.
            unsafe { kfree(p) };
        }
    }
    r.check()?;
    kassert_eq!(k1.queued - k0.queued, r.replaced, "kvfree_rcu calls lost");
    kassert_eq!(
        k1.freed - k0.freed,
        r.replaced,
        "entries not freed after the barrier"
    );
    kassert_eq!(
        cache.stats().since(&before).live_objects(),
        0,
        "kmalloc-{} objects left live",
        cache.object_size()
    );
    Ok(())
}

ktest!(SUITE, Test, nothing_freed_early_through_kvfree_rcu);
