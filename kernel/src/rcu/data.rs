//! RCU's data: the intrusive callback queue (`RcuHead` lists as `CbQueue`), each CPU's
//! `rcu_data` (a `per_cpu!` variable: the APs' copies live in their per-CPU areas, which SMP
//! bring-up allocates on each CPU's node), and the `rcu_node` tree, each node in a block of
//! its home node's memory (SLUB's `NodeBox`, as Linux allocates no per-node rcu_node but
//! numalab can) behind its own `IrqSpinLock`.

use super::RcuHead;
use crate::mm::slub::placement::NodeBox;
use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use numalab_algo::rcu::{tree, CbQueue, Nodes, RcuNode, SegCbList};
use numalab_algo::topology::NodeId;

/// A FIFO of `RcuHead`s linked through their `next` words.
pub struct HeadList {
    head: *mut RcuHead,
    tail: *mut RcuHead,
    len: usize,
}

// SAFETY: a HeadList owns the heads queued on it (call_rcu hands them over until their
// callback runs); it moves between contexts only under its CPU's lock.
unsafe impl Send for HeadList {}

impl HeadList {
    pub const fn new() -> HeadList {
        HeadList {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
            len: 0,
        }
    }

    /// Takes the first head off the queue.
    pub fn pop(&mut self) -> Option<NonNull<RcuHead>> {
        let first = NonNull::new(self.head)?;
        // SAFETY: queued heads stay valid until their callback runs (call_rcu's contract);
        // this one has not run yet.
        self.head = unsafe { (*first.as_ptr()).next };
        if self.head.is_null() {
            self.tail = ptr::null_mut();
        }
        self.len -= 1;
        Some(first)
    }
}

impl Default for HeadList {
    fn default() -> Self {
        Self::new()
    }
}

impl CbQueue for HeadList {
    type Item = NonNull<RcuHead>;

    fn push(&mut self, item: NonNull<RcuHead>) {
        let p = item.as_ptr();
        // SAFETY: the caller of call_rcu gave us the head until its callback runs; `tail`,
        // when not null, is a queued head of this list.
        unsafe {
            (*p).next = ptr::null_mut();
            if self.tail.is_null() {
                self.head = p;
            } else {
                (*self.tail).next = p;
            }
        }
        self.tail = p;
        self.len += 1;
    }

    fn append(&mut self, other: &mut HeadList) {
        if other.head.is_null() {
            return;
        }
        if self.tail.is_null() {
            self.head = other.head;
        } else {
            // SAFETY: `tail` is a queued head of this list (see push).
            unsafe { (*self.tail).next = other.head };
        }
        self.tail = other.tail;
        self.len += other.len;
        *other = HeadList::new();
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// No grace period awaited (`RcuCpu::wait_gp`).
pub const NO_WAIT: u64 = u64::MAX;

/// One CPU's RCU state (Linux's `struct rcu_data`).
#[repr(align(64))]
pub struct RcuCpu {
    /// Read-side nesting depth: written by this CPU only, read by its own tick.
    pub nesting: AtomicU32,
    /// In the idle loop's hlt (an extended quiescent state): set before hlt, cleared after.
    pub idle: AtomicBool,
    /// The grace period whose quiescent state this CPU last reported, or found nothing owed.
    pub qs_seen_gp: AtomicU64,
    /// The grace period the oldest waiting segment needs (NO_WAIT: none), for the idle CPU's
    /// last check and the waker at a grace period's end.
    pub wait_gp: AtomicU64,
    /// Callbacks queued and not yet invoked.
    pub pending: AtomicU64,
    pub list: IrqSpinLock<SegCbList<HeadList>>,
    pub cbs_queued: AtomicU64,
    pub cbs_invoked: AtomicU64,
    /// Quiescent states this CPU reported itself (tick, idle, quiescent points), and those
    /// reported for it while it was idle (forced).
    pub qs_reported: AtomicU64,
    pub qs_forced: AtomicU64,
    /// Quiescent states the tick reported.
    pub qs_from_tick: AtomicU64,
    /// Idle wake-ups sent to this CPU at a grace period's end (callbacks ready).
    pub wakeups: AtomicU64,
    /// Expedited grace periods' IPIs this CPU took, and the quiescent states they reported.
    pub exp_ipis: AtomicU64,
    pub qs_from_ipi: AtomicU64,
}

impl RcuCpu {
    pub const fn new() -> RcuCpu {
        RcuCpu {
            nesting: AtomicU32::new(0),
            idle: AtomicBool::new(false),
            qs_seen_gp: AtomicU64::new(0),
            wait_gp: AtomicU64::new(NO_WAIT),
            pending: AtomicU64::new(0),
            list: IrqSpinLock::new(SegCbList::from_empty([
                HeadList::new(),
                HeadList::new(),
                HeadList::new(),
                HeadList::new(),
            ])),
            cbs_queued: AtomicU64::new(0),
            cbs_invoked: AtomicU64::new(0),
            qs_reported: AtomicU64::new(0),
            qs_forced: AtomicU64::new(0),
            qs_from_tick: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            exp_ipis: AtomicU64::new(0),
            qs_from_ipi: AtomicU64::new(0),
        }
    }
}

impl Default for RcuCpu {
    fn default() -> Self {
        Self::new()
    }
}

/// The tree's nodes, each in its home node's memory, and the root's grace-period number
/// published for the lock-free fast paths.
pub struct TreeNodes {
    pub nodes: Vec<NodeBox<IrqSpinLock<RcuNode>>>,
    /// The root's `gp_seq`, stored while the root's lock is held (after every node was set).
    pub gp_seq: AtomicU64,
}

impl TreeNodes {
    /// Allocates every node of `geo` on its home node (`mem_of` maps a NUMA node to the
    /// nearest node with memory); None when out of memory.
    pub fn new(geo: &tree::Geometry, mem_of: impl Fn(u16) -> NodeId) -> Option<TreeNodes> {
        let mut nodes = Vec::with_capacity(geo.shapes.len());
        for (shape, init) in geo.shapes.iter().zip(geo.initial_nodes()) {
            nodes.push(NodeBox::new(
                IrqSpinLock::new(init),
                mem_of(shape.home_node),
            )?);
        }
        Some(TreeNodes {
            nodes,
            gp_seq: AtomicU64::new(0),
        })
    }
}

impl Nodes for TreeNodes {
    fn with<R>(&self, idx: usize, f: impl FnOnce(&mut RcuNode) -> R) -> R {
        let mut g = self.nodes[idx].lock();
        let r = f(&mut g);
        if idx == tree::ROOT {
            self.gp_seq.store(g.gp_seq, Ordering::SeqCst);
        }
        r
    }
}
