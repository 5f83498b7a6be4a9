//! Pieces shared by the multi-CPU experiments: which CPUs take part, a start barrier, tick to
//! second conversion, a per-CPU mailbox for objects freed by another CPU, a seeded random
//! generator, and the calibration that turns spin-loop counts into time.
//!
//! Lock order: a mailbox lock is a leaf (never held while calling into an allocator).

use super::slub_cache::Obj;
use crate::sync::IrqSpinLock;
use crate::topology::{CpuId, NodeId};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The online CPUs, by id.
pub fn online() -> Vec<CpuId> {
    crate::smp::online_cpus().to_vec()
}

/// The first `n` online CPUs (CPU ids are node-ordered, as will-it-scale fills sockets).
pub fn first_cpus(n: usize) -> Vec<CpuId> {
    online().into_iter().take(n).collect()
}

/// A CPU's node.
pub fn node_of(cpu: CpuId) -> NodeId {
    crate::topology::get().node_of_cpu(cpu)
}

/// The node whose memory holds virtual address `addr` (direct map), if known.
pub fn node_of_addr(addr: usize) -> Option<NodeId> {
    let phys = crate::mm::frame::virt_to_phys(addr as u64);
    crate::topology::get().node_of_phys(phys)
}

/// Guest TSC ticks per second (icount: 1e9; tsc: the calibrated rate).
pub fn ticks_per_sec() -> f64 {
    super::ticks_per_sec() as f64
}

/// A one-shot start line: every participant waits until all have arrived.
pub struct Barrier {
    arrived: AtomicUsize,
    total: usize,
}

impl Barrier {
    pub const fn new(total: usize) -> Barrier {
        Barrier {
            arrived: AtomicUsize::new(0),
            total,
        }
    }

    pub fn wait(&self) {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        while self.arrived.load(Ordering::Acquire) < self.total {
            core::hint::spin_loop();
        }
    }
}

/// The latest of several CPUs' end times.
pub fn store_max(slot: &AtomicU64, value: u64) {
    slot.fetch_max(value, Ordering::AcqRel);
}

/// Objects handed to a CPU by others, for it to free (a remote free).
pub struct Mailboxes {
    boxes: Vec<IrqSpinLock<Vec<Obj>>>,
}

impl Mailboxes {
    /// One mailbox per participant, each with room for `capacity` objects.
    pub fn new(participants: usize, capacity: usize) -> Mailboxes {
        Mailboxes {
            boxes: (0..participants)
                .map(|_| IrqSpinLock::new(Vec::with_capacity(capacity)))
                .collect(),
        }
    }

    /// Moves every object in `objs` to participant `to`.
    pub fn send(&self, to: usize, objs: &mut Vec<Obj>) {
        self.boxes[to].lock().append(objs);
    }

    /// Moves participant `me`'s mail into `into`.
    pub fn take(&self, me: usize, into: &mut Vec<Obj>) {
        into.append(&mut self.boxes[me].lock());
    }

    /// How many objects wait for participant `me`.
    pub fn len(&self, me: usize) -> usize {
        self.boxes[me].lock().len()
    }
}

/// Ticks one spin iteration of an IrqSpinLock costs: one CPU holds a lock for 2 ms of guest
/// time while another waits on it; the ticks the waiter spent in `lock()` divided by the spins
/// it counted. `None` with fewer than two CPUs, or when the waiter never spun.
pub fn ticks_per_spin(a: CpuId, b: CpuId) -> Option<f64> {
    if a == b {
        return None;
    }
    let lock = IrqSpinLock::new(());
    let held = AtomicBool::new(false);
    let hold_ticks = (ticks_per_sec() / 500.0) as u64; // 2 ms of guest time
    let waited = AtomicU64::new(0);
    crate::smp::run_on_cpus(&[a, b], &|cpu| {
        if cpu == a {
            let guard = lock.lock();
            held.store(true, Ordering::Release);
            let t0 = super::now();
            while super::now().wrapping_sub(t0) < hold_ticks {
                core::hint::spin_loop();
            }
            drop(guard);
        } else {
            while !held.load(Ordering::Acquire) {
                core::hint::spin_loop();
            }
            let t0 = super::now();
            drop(lock.lock());
            waited.store(super::now().wrapping_sub(t0), Ordering::Release);
        }
    });
    let spins = lock.stats.snapshot().spins;
    (spins > 0).then(|| waited.load(Ordering::Acquire) as f64 / spins as f64)
}
