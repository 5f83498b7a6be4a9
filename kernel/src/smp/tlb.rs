//! TLB shootdown: flush a kernel virtual range on every online CPU and wait until all did.
//!
//! The caller flushes locally, queues one `FlushNode` per other online CPU (on its stack) on
//! their `flushes` queues and sends an IPI to each queue it made non-empty. Targets flush in
//! the IPI handler, or earlier if they are spinning on an `IrqSpinLock` or waiting for their
//! own cross-CPU call (both poll their queue), so a shootdown completes even when targets have
//! interrupts off. Ranges above `FULL_FLUSH_PAGES` pages flush the whole TLB instead of
//! `invlpg` per page (global pages included: CR4.PGE is toggled when set).

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use numalab_algo::page::VirtAddr;

use super::queue::{push, Linked};
use super::{PerCpuSmp, MAX_CPUS};
use crate::percpu;

/// Ranges longer than this many pages are flushed with a full TLB flush.
pub const FULL_FLUSH_PAGES: u64 = 32;
use numalab_algo::page::PAGE_SIZE;

/// A pending flush on one target.
pub struct FlushNode {
    next: *mut FlushNode,
    data: *const FlushData,
}

impl Linked for FlushNode {
    fn set_next(&mut self, next: *mut Self) {
        self.next = next;
    }
}

struct FlushData {
    start: u64,
    end: u64,
    remaining: AtomicUsize,
}

/// Flushes [start, end) from the calling CPU's TLB.
pub(super) fn flush_local(start: u64, end: u64) {
    let pages = end.saturating_sub(start).div_ceil(PAGE_SIZE);
    if pages > FULL_FLUSH_PAGES {
        flush_all_local();
        return;
    }
    let mut addr = start & !(PAGE_SIZE - 1);
    while addr < end {
        crate::arch::tlb::flush_page(VirtAddr::new(addr));
        addr += PAGE_SIZE;
    }
}

/// Flushes the whole TLB of the calling CPU, global entries included.
pub(super) fn flush_all_local() {
    crate::arch::tlb::flush_all();
}

/// Runs the flushes queued for the calling CPU (any context: IPI handler, spin loops).
#[inline]
pub fn run_pending_flushes() {
    let pin = crate::percpu::pin();
    let me = PerCpuSmp::this(&pin);
    if me.flushes.load(Ordering::Relaxed).is_null() {
        return;
    }
    run_flushes_of(me);
}

fn run_flushes_of(me: &PerCpuSmp) {
    let mut node = me.flushes.swap(ptr::null_mut(), Ordering::Acquire);
    while !node.is_null() {
        // SAFETY: the shooting CPU keeps node and data alive until `remaining` reaches zero,
        // which needs this CPU's fetch_sub below; `next` and the range are read before it.
        let (next, data) = unsafe { ((*node).next, &*(*node).data) };
        flush_local(data.start, data.end);
        me.stats.shootdowns_received.fetch_add(1, Ordering::Relaxed);
        data.remaining.fetch_sub(1, Ordering::Release);
        node = next;
    }
}

/// Flushes kernel virtual range [start_virt, end_virt) on every online CPU and returns when all
/// have done it. Callable with interrupts off and with spin locks held (targets poll).
pub fn tlb_shootdown(start_virt: VirtAddr, end_virt: VirtAddr) {
    let (start_virt, end_virt) = (start_virt.as_u64(), end_virt.as_u64());
    let me = percpu::this();
    flush_local(start_virt, end_virt);
    PerCpuSmp::of(me.cpu())
        .stats
        .shootdowns_sent
        .fetch_add(1, Ordering::Relaxed);
    let online = super::online_cpus();
    if online.len() <= 1 {
        return;
    }
    let self_cpu = me.cpu();
    let data = FlushData {
        start: start_virt,
        end: end_virt,
        remaining: AtomicUsize::new(0),
    };
    let mut nodes: [FlushNode; MAX_CPUS] = core::array::from_fn(|_| FlushNode {
        next: ptr::null_mut(),
        data: &data,
    });
    let targets = online
        .iter()
        .filter(|&&c| c != self_cpu)
        .filter_map(|&c| percpu::of(c));
    let count = targets.clone().count();
    data.remaining.store(count, Ordering::Relaxed);
    for (node, target) in nodes.iter_mut().zip(targets) {
        // SAFETY: the node stays on this stack frame until `remaining` is zero.
        if unsafe { push(&PerCpuSmp::of(target.cpu()).flushes, node) } {
            super::send_call_ipi(target);
        }
    }
    while data.remaining.load(Ordering::Acquire) != 0 {
        run_pending_flushes();
        core::hint::spin_loop();
    }
}

/// The queue head type, for the per-CPU area.
pub type FlushQueue = AtomicPtr<FlushNode>;
