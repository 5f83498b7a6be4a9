//! A counter split over 64 cache-line-padded shards picked by CPU id (vmalloc's event
//! counters and the per-node nr_vmalloc count): the hot path never bounces one shared line
//! between CPUs; reading it sums the shards.

use super::backing;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A counter split over 64 cache-line-padded shards picked by CPU id, so the hot path never
/// bounces one shared line between CPUs.
pub struct Sharded([Padded; 64]);

#[repr(align(64))]
struct Padded(AtomicU64);

impl Default for Sharded {
    fn default() -> Self {
        Sharded([const { Padded(AtomicU64::new(0)) }; 64])
    }
}

impl Sharded {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0[backing::this_cpu().index() % 64]
            .0
            .fetch_add(n, Relaxed);
    }
    /// Subtracts `n` (a shard may go below zero; the sum does not).
    #[inline]
    pub fn sub(&self, n: u64) {
        self.add(n.wrapping_neg());
    }
    pub fn get(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |a, p| a.wrapping_add(p.0.load(Relaxed)))
    }
}
