//! The lock-free LIFO behind every per-CPU queue of smp (cross-CPU calls, TLB flushes): a
//! push that says whether the queue was empty, so the caller sends an IPI only then.

use core::sync::atomic::{AtomicPtr, Ordering};

/// Pushes `node` on a lock-free LIFO; true when the list was empty (the target needs an IPI).
///
/// # Safety
/// `node` must stay valid and untouched by the caller until the target has consumed it.
pub unsafe fn push<N: Linked>(head: &AtomicPtr<N>, node: *mut N) -> bool {
    let mut old = head.load(Ordering::Relaxed);
    loop {
        // SAFETY: `node` is valid and not yet visible to anyone else (caller contract).
        unsafe { (*node).set_next(old) };
        match head.compare_exchange_weak(old, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return old.is_null(),
            Err(now) => old = now,
        }
    }
}

/// A node of one of the per-CPU queues.
pub trait Linked {
    fn set_next(&mut self, next: *mut Self);
}
