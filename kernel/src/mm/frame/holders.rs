//! Page holders: subsystems above the frame allocator that keep pages for their own use
//! (SLUB's slabs, its descriptor pool, large kmalloc blocks; vmalloc's page tables and the
//! run-time per-CPU regions, never given back) say how many bytes they hold per node, so the
//! frame allocator's conservation checks count them without importing their code. A holder
//! registers itself once at its init; the registry never allocates (a count must not take the
//! pages it is counting).

use core::sync::atomic::{AtomicUsize, Ordering};
use numalab_algo::topology::NodeId;
use spin::Mutex;

/// Room for every subsystem that keeps pages (SLUB, the heap's page blocks, vmalloc's page
/// tables and the run-time per-CPU regions today: all four; vmalloc's data pages are given
/// back by every test that takes them and need no holder).
const MAX_HOLDERS: usize = 4;

/// A subsystem that holds pages taken from the frame allocator.
pub trait PageHolder: Sync {
    /// Its name, for messages.
    fn name(&self) -> &'static str;
    /// Bytes of `node`'s pages it holds now (free inside it or in use by its callers).
    fn held_bytes_on(&self, node: NodeId) -> u64;
}

static HOLDERS: Mutex<[Option<&'static dyn PageHolder>; MAX_HOLDERS]> =
    Mutex::new([None; MAX_HOLDERS]);
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// Registers `holder` (once, at its init). A holder past MAX_HOLDERS is refused with a
/// warning: its pages would then look leaked to conservation checks, which fail loudly.
pub fn register_holder(holder: &'static dyn PageHolder) {
    let mut holders = HOLDERS.lock();
    match holders.iter_mut().find(|h| h.is_none()) {
        Some(slot) => {
            *slot = Some(holder);
            COUNT.fetch_add(1, Ordering::Release);
        }
        None => crate::warn!(
            "frame: page holder {} not registered: {} holders already",
            holder.name(),
            MAX_HOLDERS
        ),
    }
}

/// Bytes of `node` held by every registered holder.
pub fn held_bytes_on(node: NodeId) -> u64 {
    if COUNT.load(Ordering::Acquire) == 0 {
        return 0;
    }
    let holders = *HOLDERS.lock();
    holders
        .iter()
        .flatten()
        .map(|h| h.held_bytes_on(node))
        .sum()
}
