//! Exception fixups (Linux's exception table idea): a page fault at a registered instruction
//! resumes at its registered landing pad instead of ending the run. Used by probes that
//! read memory which may be unmapped (vmalloc's fault-on-freed-area test).

use core::sync::atomic::{AtomicU64, Ordering};

const SLOTS: usize = 8;

/// (faulting RIP, resume RIP) pairs; 0 = empty slot.
static TABLE: [(AtomicU64, AtomicU64); SLOTS] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; SLOTS];
/// Faults resolved through the table.
static FIXED: AtomicU64 = AtomicU64::new(0);

/// Registers a fixup; true when registered (or already present), false when the table is full.
pub fn register(fault_rip: u64, resume_rip: u64) -> bool {
    for (fault, resume) in &TABLE {
        if fault.load(Ordering::Acquire) == fault_rip {
            return true;
        }
        if resume
            .compare_exchange(0, resume_rip, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            fault.store(fault_rip, Ordering::Release);
            return true;
        }
    }
    false
}

/// The resume address for a fault at `rip`, if one is registered (called by the #PF handler).
pub fn search(rip: u64) -> Option<u64> {
    TABLE.iter().find_map(|(fault, resume)| {
        (rip != 0 && fault.load(Ordering::Acquire) == rip).then(|| {
            FIXED.fetch_add(1, Ordering::Relaxed);
            resume.load(Ordering::Acquire)
        })
    })
}

/// How many faults were fixed up since boot.
#[cfg(feature = "ktest")]
pub fn fixed_count() -> u64 {
    FIXED.load(Ordering::Relaxed)
}
