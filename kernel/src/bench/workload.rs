//! Pieces shared by the multi-CPU experiments: which CPUs take part, a start barrier, tick to
//! second conversion and a per-CPU mailbox for objects freed by another CPU. (Lock waits are
//! measured by the locks themselves, sync::spinlock, no calibration needed.)
//!
//! Lock order: a mailbox lock is a leaf (never held while calling into an allocator).

use super::slub_cache::Obj;
use crate::sync::IrqSpinLock;
use crate::topology::{CpuId, NodeId};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use numalab_algo::page::VirtAddr;

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
    let phys = crate::mm::frame::virt_to_phys(VirtAddr::new(addr as u64));
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

/// A start line used again and again: the k-th `wait` of every participant returns once all
/// of them have made their k-th call (phases of a round-based workload).
pub struct PhaseBarrier {
    arrived: AtomicUsize,
    total: usize,
}

impl PhaseBarrier {
    pub const fn new(total: usize) -> PhaseBarrier {
        PhaseBarrier {
            arrived: AtomicUsize::new(0),
            total,
        }
    }

    /// Waits for phase `phase` (0, 1, 2 ... each participant calls it once per phase, in order).
    pub fn wait(&self, phase: usize) {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        while self.arrived.load(Ordering::Acquire) < self.total * (phase + 1) {
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

    /// Names each mailbox for the trace's c2c table (`EXPERIMENT mailbox I`).
    pub fn name_for_trace(&self, experiment: &str) {
        for (i, b) in self.boxes.iter().enumerate() {
            super::region::name(b, format_args!("{experiment} mailbox {i}"));
            let mut buffer = b.lock();
            super::region::name(
                buffer.spare_capacity_mut(),
                format_args!("{experiment} mailbox {i} buffer"),
            );
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
}
