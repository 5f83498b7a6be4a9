//! test_vmalloc.c's two kvfree_rcu tests (kvfree_rcu_1_arg_vmalloc_test,
//! kvfree_rcu_2_arg_vmalloc_test), beside the other nine in kernel/src/mm/vmalloc/test_cases.rs
//! (which cannot use RCU: mm sits below it). Shared by the `test_vmalloc` experiment
//! (kernel/src/bench/test_vmalloc.rs) and the KTAP tests of vmalloc (every CPU, each design).

use alloc::format;
use core::ptr::NonNull;

use numalab_algo::rng::Rng;
use numalab_algo::vmalloc::test_grid::TESTS;
use numalab_algo::vmalloc::PAGE_SIZE;

use crate::mm::vmalloc::test_cases::{self, case_va, poke, CaseFn, Outcome, Params};
use crate::mm::vmalloc::Vmalloc;

/// test_vmalloc.c's `struct test_kvfree_rcu`: an rcu_head (`rcu`, at byte 0), then
/// `unsigned char array[20]`, of which the tests write `array[0]`.
const ARRAY_OFFSET: u64 = core::mem::size_of::<crate::rcu::RcuHead>() as u64;

/// The case of test_vmalloc.c's table entry `index`: the two kvfree_rcu tests here, the
/// others from test_cases.
pub fn by_index(index: usize) -> Option<CaseFn> {
    match TESTS.get(index).copied() {
        Some("kvfree_rcu_1_arg_vmalloc_test") => Some(kvfree_rcu_1_arg_vmalloc_test),
        Some("kvfree_rcu_2_arg_vmalloc_test") => Some(kvfree_rcu_2_arg_vmalloc_test),
        _ => test_cases::by_index(index),
    }
}

/// Whether `index` is one of the kvfree_rcu tests: they leave vmalloc areas waiting for a
/// grace period, so their callers run `kvfree_rcu_barrier` before the conservation check.
pub fn uses_kvfree_rcu(index: usize) -> bool {
    TESTS[index].starts_with("kvfree_rcu")
}

/// One loop: vmalloc(1 * PAGE_SIZE) a struct test_kvfree_rcu (after `p.may_sleep`, the
/// quiescent point: grace periods end and the CPU's callbacks, the vfrees, run), write
/// `array[0] = 'a'`, give it to kvfree_rcu (`free` picks the form).
fn loops(v: &Vmalloc, p: &Params, free: unsafe fn(NonNull<u8>)) -> Outcome {
    for _ in 0..p.loops {
        let a = match case_va(p, v, PAGE_SIZE, PAGE_SIZE) {
            Ok(a) => a,
            Err(e) => return Outcome::Fail(format!("vmalloc(PAGE_SIZE): {e:?}")),
        };
        // SAFETY: a is a live one-page area we own; array[0] is inside it.
        unsafe { poke(a + ARRAY_OFFSET, b'a') };
        let ptr = NonNull::new(a as *mut u8).expect("vmalloc area at 0");
        // SAFETY: a vmalloc area we give up, with room for an rcu_head at byte 0.
        unsafe { free(ptr) };
    }
    Outcome::Pass
}

/// kvfree_rcu_mightsleep(p): no rcu_head used (the call_rcu way waits for a grace period
/// inline; batched and sheaf queue the pointer in a block, or wait when none).
pub fn kvfree_rcu_1_arg_vmalloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    loops(v, p, super::kvfree_rcu_mightsleep)
}

/// kvfree_rcu(p, rcu): the struct's rcu_head at byte 0.
pub fn kvfree_rcu_2_arg_vmalloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    loops(v, p, super::kvfree_rcu::<0>)
}

/// kfree_rcu's and RCU's counters at one moment, to say what went through RCU since.
pub struct RcuSnapshot {
    kfree: super::Counts,
    rcu: crate::rcu::RcuStats,
}

/// What went through RCU between a snapshot and now.
pub struct RcuDelta {
    pub queued: u64,
    pub freed: u64,
    pub vfreed: u64,
    /// Objects waiting for a grace period now (not a difference).
    pub waiting: u64,
    pub kfree_rcu_callbacks: u64,
    pub grace_periods: u64,
    pub cbs_invoked: u64,
}

impl RcuDelta {
    /// Every area queued was vfree'd and nothing waits (after `kvfree_rcu_barrier`).
    pub fn settled(&self) -> bool {
        self.waiting == 0 && self.vfreed == self.queued
    }
}

impl RcuSnapshot {
    pub fn take() -> RcuSnapshot {
        RcuSnapshot {
            kfree: super::total_counts(),
            rcu: crate::rcu::stats(),
        }
    }

    pub fn since(&self) -> RcuDelta {
        let (k, r) = (super::total_counts(), crate::rcu::stats());
        RcuDelta {
            queued: k.queued - self.kfree.queued,
            freed: k.freed - self.kfree.freed,
            vfreed: k.vfreed - self.kfree.vfreed,
            waiting: k.waiting,
            kfree_rcu_callbacks: k.callbacks - self.kfree.callbacks,
            grace_periods: r.grace_periods - self.rcu.grace_periods,
            cbs_invoked: r.cbs_invoked - self.rcu.cbs_invoked,
        }
    }
}
