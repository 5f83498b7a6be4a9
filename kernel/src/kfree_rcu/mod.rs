//! kfree_rcu / kvfree_rcu for kmalloc objects and vmalloc areas, three ways (`rcu.kfree`,
//! kernel/algo/src/kfree_rcu): `call_rcu` (one callback per object), `batched` (Linux 6.1's
//! kfree_rcu_cpu: the per-CPU state of numalab_algo::kfree_rcu::batched under an IrqSpinLock,
//! its two batch slots handed to call_rcu), `sheaf` (Linux 6.18/7.x: the object's cache's
//! rcu_free sheaf, else batched). The monitor has no workqueue here: it runs at the CPU's
//! next kfree_rcu once its delay passed, and at `kvfree_rcu_barrier`.
//!
//! Callbacks run on the CPU that queued them (RCU's rule), so each finds its per-CPU state
//! with `KRC.get_with(&pin)`. Lock order: a CPU's krc lock, then SLUB's and vmalloc's locks.

#[cfg(feature = "ktest")]
mod freed_early_tests;
/// For the soak (a ktest suite) only.
#[cfg(feature = "ktest")]
mod owned;
#[cfg(feature = "ktest")]
mod tests;
#[cfg(feature = "ktest")]
pub mod vmalloc_cases;

#[cfg(feature = "ktest")]
pub use owned::{kfree_rcu_object, vfree_rcu};

use crate::percpu::per_cpu;
use crate::rcu::{self, RcuHead};
use crate::sync::IrqSpinLock;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use numalab_algo::kfree_rcu::batched::{
    Env, KfreeRcuCpu, Queued, BLOCK_BYTES, KFREE_DRAIN_SECONDS,
};
use numalab_algo::options::kfree_rcu::KfreeRcuWay;
use numalab_algo::options::Choice;
use numalab_algo::slub::rcu_sheaf::{rcu_sheaf_owner, RcuSheafFree};
use numalab_algo::slub::sheaf::RCU_HEAD_OFFSET;

/// One CPU's batched kfree_rcu: Linux's struct kfree_rcu_cpu, and the rcu_heads of its two
/// batch slots (krw_arr[i].rcu_work).
struct Krc {
    state: IrqSpinLock<KfreeRcuCpu>,
    heads: [core::cell::UnsafeCell<RcuHead>; 2],
    /// Objects queued by kfree_rcu on this CPU (every way).
    queued: AtomicU64,
    /// call_rcu callbacks queued by kfree_rcu on this CPU (per object, per batch, per sheaf).
    callbacks: AtomicU64,
    /// Objects freed after their grace period (callbacks run on the queuing CPU, so
    /// `queued - freed` is this CPU's objects waiting), and the most that waited at once.
    freed: AtomicU64,
    peak: AtomicU64,
    /// Of the objects freed, the vmalloc areas (vfree'd after their grace period).
    vfreed: AtomicU64,
}

// SAFETY: the heads are written only by call_rcu under the krc lock of their own CPU, and
// by RCU until the callback ran; a slot is requeued only after its callback detached it.
unsafe impl Sync for Krc {}

per_cpu! {
    static KRC: Krc = Krc {
        state: IrqSpinLock::new(KfreeRcuCpu::new(0)),
        heads: [
            core::cell::UnsafeCell::new(RcuHead::new()),
            core::cell::UnsafeCell::new(RcuHead::new()),
        ],
        queued: AtomicU64::new(0),
        callbacks: AtomicU64::new(0),
        freed: AtomicU64::new(0),
        peak: AtomicU64::new(0),
        vfreed: AtomicU64::new(0),
    };
}

static WAY: AtomicUsize = AtomicUsize::new(0);
/// KFREE_DRAIN_JIFFIES in rdtsc ticks (set by `init`).
static DRAIN_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Reads `rcu.kfree` (after SLUB, vmalloc and RCU).
pub fn init(way: KfreeRcuWay) {
    set_way(way);
    // The TSC's rate, or 1 GHz when unknown (under icount: about one tick per instruction).
    let hz = match crate::arch::tsc_hz() {
        0 => 1_000_000_000,
        hz => hz,
    };
    DRAIN_TICKS.store(KFREE_DRAIN_SECONDS * hz, Relaxed);
}

/// Switches the way (benchmarks; only between `kvfree_rcu_barrier`s).
pub fn set_way(way: KfreeRcuWay) {
    let i = KfreeRcuWay::all()
        .iter()
        .position(|w| *w == way)
        .unwrap_or(0);
    WAY.store(i, Relaxed);
}

pub fn way() -> KfreeRcuWay {
    KfreeRcuWay::all()[WAY.load(Relaxed)]
}

fn now() -> u64 {
    crate::arch::rdtsc()
}

/// The kernel's memory and frees for the batched way.
struct KernelEnv;

impl Env for KernelEnv {
    /// Never under the krc lock: `batched` allocates a block before taking it.
    fn alloc_block(&mut self) -> Option<usize> {
        None
    }
    fn free_block(&mut self, block: usize) {
        // SAFETY: `block` came from alloc_block's kmalloc and the batched state gives it up.
        unsafe { crate::mm::slub::kmalloc::kfree(NonNull::new_unchecked(block as *mut u8)) }
    }
    fn load(&self, addr: usize) -> usize {
        // SAFETY: addresses inside a block this module owns or an rcu_head the caller gave.
        unsafe { (addr as *const usize).read() }
    }
    fn store(&mut self, addr: usize, value: usize) {
        // SAFETY: as for `load`.
        unsafe { (addr as *mut usize).write(value) }
    }
    fn is_vmalloc(&self, ptr: usize) -> bool {
        is_vmalloc(ptr)
    }
    fn kfree_bulk(&mut self, block: usize, nr: usize) {
        for i in 0..nr {
            let p = self.load(block + 16 + i * 8);
            kvfree(p);
        }
    }
    fn kvfree(&mut self, ptr: usize) {
        kvfree(ptr)
    }
}

/// Linux's is_vmalloc_addr: inside the range of any of the three vmalloc designs (the KTAP
/// tests run test_vmalloc's kvfree_rcu cases on each; `vfree` finds the owner).
fn is_vmalloc(ptr: usize) -> bool {
    let addr = numalab_algo::page::VirtAddr::new(ptr as u64);
    numalab_algo::vmalloc::Policy::ALL
        .iter()
        .any(|p| crate::mm::vmalloc::design(*p).is_some_and(|v| v.contains(addr)))
}

/// Frees a kmalloc object or a vmalloc area whose grace period ended (on the queuing CPU).
fn kvfree(ptr: usize) {
    if is_vmalloc(ptr) {
        let pin = crate::percpu::pin();
        let k = KRC.get_with(&pin);
        k.vfreed.store(k.vfreed.load(Relaxed) + 1, Relaxed);
        let _ = crate::mm::vmalloc::vfree(numalab_algo::page::VirtAddr::new(ptr as u64));
    } else if let Some(p) = NonNull::new(ptr as *mut u8) {
        // SAFETY: the caller of kfree_rcu gave the object up; its grace period ended.
        unsafe { crate::mm::slub::kmalloc::kfree(p) }
    }
}

/// kvfree_rcu(ptr, rhf): the object's rcu_head at byte `OFFSET` (Linux's offsetof(type,
/// rhf), which its kvfree_rcu passes on in place of a callback).
///
/// # Safety
/// `ptr` is a kmalloc object or a vmalloc area the caller gives up, with room for an
/// rcu_head at `OFFSET`.
pub unsafe fn kvfree_rcu<const OFFSET: usize>(ptr: NonNull<u8>) {
    const { assert!(OFFSET < 4096, "Linux's __is_kvfree_rcu_offset") };
    let obj = ptr.as_ptr() as usize;
    let head = NonNull::new((obj + OFFSET) as *mut RcuHead).expect("inside the object");
    queue(obj, Some((head, free_at::<OFFSET>)));
}

/// The call_rcu way's callback for an rcu_head at `OFFSET`: frees its object.
///
/// # Safety
/// RCU calls it once, after the grace period of the head kvfree_rcu queued.
unsafe fn free_at<const OFFSET: usize>(head: NonNull<RcuHead>) {
    kvfree(head.as_ptr() as usize - OFFSET);
    freed(1);
}

/// Counts `n` objects freed on the running CPU.
fn freed(n: u64) {
    let pin = crate::percpu::pin();
    let k = KRC.get_with(&pin);
    k.freed.store(k.freed.load(Relaxed) + n, Relaxed);
}

/// The batched way's work after a slot's grace period (kfree_rcu_work).
fn batch_done(slot: usize) {
    let pin = crate::percpu::pin();
    let k = KRC.get_with(&pin);
    let mut st = k.state.lock();
    let b = st.detach(slot);
    let before = st.waiting();
    st.free_detached(&mut KernelEnv, b);
    let n = before - st.waiting();
    drop(st);
    freed(n);
}

/// # Safety
/// RCU calls it once per queue of slot 0, on the queuing CPU.
unsafe fn batch0_done(_: NonNull<RcuHead>) {
    batch_done(0)
}

/// # Safety
/// As for `batch0_done`, slot 1.
unsafe fn batch1_done(_: NonNull<RcuHead>) {
    batch_done(1)
}

/// The sheaf way's callback: the rcu_free sheaf's grace period ended.
///
/// # Safety
/// RCU calls it once for a sheaf `kfree_rcu_sheaf` or `take_rcu_free` gave out.
unsafe fn sheaf_done(head: NonNull<RcuHead>) {
    let sheaf = head.as_ptr() as usize - RCU_HEAD_OFFSET;
    let owner = rcu_sheaf_owner(&crate::mm::slub::platform::KernelPlatform, sheaf);
    // SAFETY: the owner word holds the id of a live cache (caches are never freed).
    let cache = unsafe {
        &*(owner as *const numalab_algo::slub::Cache<crate::mm::slub::platform::KernelPlatform>)
    };
    let n = <crate::mm::slub::platform::KernelPlatform as numalab_algo::slub::Platform>::load(
        &crate::mm::slub::platform::KernelPlatform,
        sheaf,
    );
    cache.rcu_free_sheaf(sheaf);
    freed(n as u64);
}

/// Linux's kvfree_rcu_barrier, for the running CPU: its rcu_free sheaves and batched
/// channels go to RCU now, then rcu_barrier waits for every callback. Every CPU must call
/// it (benchmarks run it on each CPU, then one rcu_barrier).
pub fn flush_local() {
    let pin = crate::percpu::pin();
    let k = KRC.get_with(&pin);
    for c in crate::mm::slub::caches() {
        if let Some(s) = c.core().take_rcu_free() {
            k.callbacks.fetch_add(1, Relaxed);
            let h = NonNull::new((s + RCU_HEAD_OFFSET) as *mut RcuHead).expect("sheaf");
            rcu::call_rcu(h, sheaf_done);
        }
    }
    let t = now();
    let mut st = k.state.lock();
    run_monitor(k, &mut st, t);
}

/// kvfree_rcu_barrier: every CPU hands its rcu_free sheaves and batched channels to RCU,
/// then rcu_barrier waits for every callback (process context, every CPU online).
pub fn kvfree_rcu_barrier() {
    crate::smp::on_each_cpu(&|_| flush_local());
    rcu::rcu_barrier();
    // A batch slot busy at flush time was rearmed: its objects went to the other slot's
    // next batch; flush again until nothing waits.
    for _ in 0..KFREE_N_BATCHES_ROUNDS {
        let waiting: u64 = crate::smp::online_cpus()
            .iter()
            .map(|c| counts(*c).waiting)
            .sum();
        if waiting == 0 {
            return;
        }
        crate::smp::on_each_cpu(&|_| flush_local());
        rcu::rcu_barrier();
    }
}

/// Linux's kfree_rcu shrinker (kfree_rcu_shrink_scan's drain_page_cache): every CPU gives its
/// kept pointer blocks back to kmalloc. Returns the blocks freed. Process context, every CPU
/// online; after `kvfree_rcu_barrier` no block is in a batch, so none is left held.
pub fn shrink() -> usize {
    let freed = AtomicUsize::new(0);
    crate::smp::on_each_cpu(&|_| {
        let n = KRC
            .get_with(&crate::percpu::pin())
            .state
            .lock()
            .drain_cache(&mut KernelEnv);
        freed.fetch_add(n, Relaxed);
    });
    freed.load(Relaxed)
}

/// Rounds of `kvfree_rcu_barrier` (each frees at least one batch slot per CPU).
const KFREE_N_BATCHES_ROUNDS: usize = 4;

/// One CPU's kfree_rcu counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub callbacks: u64,
    /// Objects queued and not yet freed, now and at most since `reset_peak`.
    pub waiting: u64,
    pub peak_waiting: u64,
    /// Objects the batched way put on the rcu_head list (no block to be had).
    pub in_list: u64,
    /// Objects queued (every way) and freed after their grace period since boot; of the
    /// freed, the vmalloc areas (vfree'd).
    pub queued: u64,
    pub freed: u64,
    pub vfreed: u64,
}

pub fn counts(cpu: crate::topology::CpuId) -> Counts {
    let k = KRC.on(cpu);
    let in_list = k.state.lock().stats.in_list;
    let queued = k.queued.load(Relaxed);
    let freed = k.freed.load(Relaxed);
    Counts {
        callbacks: k.callbacks.load(Relaxed),
        waiting: queued.saturating_sub(freed),
        peak_waiting: k.peak.load(Relaxed),
        in_list,
        queued,
        freed,
        vfreed: k.vfreed.load(Relaxed),
    }
}

/// Every online CPU's counts summed (`peak_waiting`: the largest CPU's).
pub fn total_counts() -> Counts {
    crate::smp::online_cpus()
        .iter()
        .map(|c| counts(*c))
        .fold(Counts::default(), |a, c| Counts {
            callbacks: a.callbacks + c.callbacks,
            waiting: a.waiting + c.waiting,
            peak_waiting: a.peak_waiting.max(c.peak_waiting),
            in_list: a.in_list + c.in_list,
            queued: a.queued + c.queued,
            freed: a.freed + c.freed,
            vfreed: a.vfreed + c.vfreed,
        })
}

/// Restarts the running CPU's peak from its objects waiting now.
pub fn reset_peak() {
    let pin = crate::percpu::pin();
    let k = KRC.get_with(&pin);
    k.peak
        .store(k.queued.load(Relaxed) - k.freed.load(Relaxed), Relaxed);
}

/// kvfree_rcu_mightsleep(ptr): no rcu_head; may wait for a grace period inline.
///
/// # Safety
/// As for `kvfree_rcu`.
pub unsafe fn kvfree_rcu_mightsleep(ptr: NonNull<u8>) {
    queue(ptr.as_ptr() as usize, None);
}

/// The cache of a slab object (None: not a slab object).
fn slab_cache_of(
    ptr: usize,
) -> Option<&'static numalab_algo::slub::Cache<crate::mm::slub::platform::KernelPlatform>> {
    crate::mm::slub::kmalloc::cache_of_object(ptr)
}

/// kvfree_rcu_mightsleep as the call_rcu way has it: no head, so wait, then free.
fn queue(ptr: usize, head: Option<(NonNull<RcuHead>, rcu::RcuCallback)>) {
    let pin = crate::percpu::pin();
    let k = KRC.get_with(&pin);
    let q = k.queued.load(Relaxed) + 1;
    k.queued.store(q, Relaxed);
    let waiting = q - k.freed.load(Relaxed);
    if waiting > k.peak.load(Relaxed) {
        k.peak.store(waiting, Relaxed);
    }
    match way() {
        KfreeRcuWay::CallRcu => match head {
            Some((h, f)) => {
                k.callbacks.fetch_add(1, Relaxed);
                rcu::call_rcu(h, f)
            }
            None => {
                rcu::synchronize_rcu();
                kvfree(ptr);
                freed(1);
            }
        },
        KfreeRcuWay::Sheaf => {
            if let Some(cache) = slab_cache_of(ptr) {
                match cache.kfree_rcu_sheaf(ptr) {
                    RcuSheafFree::Queued => return,
                    RcuSheafFree::Full(s) => {
                        k.callbacks.fetch_add(1, Relaxed);
                        let h = NonNull::new((s + RCU_HEAD_OFFSET) as *mut RcuHead);
                        rcu::call_rcu(h.expect("sheaf address"), sheaf_done);
                        return;
                    }
                    RcuSheafFree::Bypass | RcuSheafFree::Fail => {}
                }
            }
            batched(k, ptr, head.map(|(h, _)| h))
        }
        KfreeRcuWay::Batched => batched(k, ptr, head.map(|(h, _)| h)),
    }
}

fn batched(k: &Krc, ptr: usize, head: Option<NonNull<RcuHead>>) {
    // The headless form may take a page, without the lock held (as Linux drops krcp->lock
    // around __get_free_page); the two-argument form only uses the blocks kept.
    if head.is_none() && k.state.lock().needs_block(&KernelEnv, ptr) {
        if let Some(b) = crate::mm::slub::kmalloc::kmalloc(BLOCK_BYTES) {
            let kept = k.state.lock().fill_cache(b.as_ptr() as usize);
            if !kept {
                // SAFETY: the block just allocated, not kept.
                unsafe { crate::mm::slub::kmalloc::kfree(b) };
            }
        }
    }
    let t = now();
    let mut st = k.state.lock();
    st.set_drain_ticks(DRAIN_TICKS.load(Relaxed));
    let how = st.queue(&mut KernelEnv, ptr, head.map(|h| h.as_ptr() as usize), t);
    let due = st.monitor_due(t);
    if due {
        run_monitor(k, &mut st, t);
    }
    drop(st);
    if how == Queued::Inline {
        rcu::synchronize_rcu();
        kvfree(ptr);
        freed(1);
    }
}

fn run_monitor(k: &Krc, st: &mut KfreeRcuCpu, t: u64) {
    let q = st.monitor(t);
    for (i, queued) in q.iter().enumerate() {
        if *queued {
            k.callbacks.fetch_add(1, Relaxed);
            let h = NonNull::new(k.heads[i].get()).expect("static head");
            rcu::call_rcu(h, if i == 0 { batch0_done } else { batch1_done });
        }
    }
}
