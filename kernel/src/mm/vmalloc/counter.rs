//! A counter with one word per CPU (vmalloc's event counters and the per-node nr_vmalloc
//! count), run-time per-CPU data (`percpu::PerCpuBox`, each CPU's word on its memory node):
//! the hot path adds to the running CPU's word and never bounces a line between CPUs;
//! reading it sums the words.

use crate::percpu::{self, PerCpuBox};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A counter with one word per CPU (Linux's vmalloc counters are per-CPU too).
pub struct PerCpuCounter(PerCpuBox<AtomicU64>);

impl Default for PerCpuCounter {
    fn default() -> Self {
        match PerCpuBox::new(|_| AtomicU64::new(0)) {
            Some(words) => PerCpuCounter(words),
            None => crate::mm::out_of_memory(format_args!(
                "vmalloc: no room in the per-CPU regions for a counter"
            )),
        }
    }
}

impl PerCpuCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.get_with(&percpu::pin()).fetch_add(n, Relaxed);
    }
    /// Subtracts `n` (one CPU's word may go below zero; the sum does not).
    #[inline]
    pub fn sub(&self, n: u64) {
        self.add(n.wrapping_neg());
    }
    pub fn get(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |a, (_, w)| a.wrapping_add(w.load(Relaxed)))
    }
}
