//! Per-CPU SMP counters (IPIs, calls, shootdowns, timer ticks) and their dump.

use core::sync::atomic::AtomicU64;
#[cfg(feature = "ktest")]
use core::sync::atomic::Ordering::Relaxed;

#[cfg(feature = "ktest")]
use crate::percpu;

/// One CPU's counters; each is written by its own CPU only (Relaxed), read by anyone.
pub struct CpuStats {
    /// Call IPIs this CPU sent.
    pub ipis_sent: AtomicU64,
    /// Call IPIs this CPU took.
    pub ipis_received: AtomicU64,
    /// Function calls this CPU queued on others.
    pub calls_sent: AtomicU64,
    /// Function calls this CPU ran for others.
    pub calls_run: AtomicU64,
    /// TLB shootdowns this CPU started.
    pub shootdowns_sent: AtomicU64,
    /// TLB flush requests this CPU served for others.
    pub shootdowns_received: AtomicU64,
    /// LAPIC timer interrupts.
    pub timer_ticks: AtomicU64,
}

/// A copy of one CPU's counters.
#[cfg(feature = "ktest")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuStatsSnapshot {
    pub ipis_sent: u64,
    pub ipis_received: u64,
    pub calls_sent: u64,
    pub calls_run: u64,
    pub shootdowns_sent: u64,
    pub shootdowns_received: u64,
    pub timer_ticks: u64,
}

impl CpuStats {
    pub const fn new() -> CpuStats {
        CpuStats {
            ipis_sent: AtomicU64::new(0),
            ipis_received: AtomicU64::new(0),
            calls_sent: AtomicU64::new(0),
            calls_run: AtomicU64::new(0),
            shootdowns_sent: AtomicU64::new(0),
            shootdowns_received: AtomicU64::new(0),
            timer_ticks: AtomicU64::new(0),
        }
    }

    #[cfg(feature = "ktest")]
    pub fn snapshot(&self) -> CpuStatsSnapshot {
        CpuStatsSnapshot {
            ipis_sent: self.ipis_sent.load(Relaxed),
            ipis_received: self.ipis_received.load(Relaxed),
            calls_sent: self.calls_sent.load(Relaxed),
            calls_run: self.calls_run.load(Relaxed),
            shootdowns_sent: self.shootdowns_sent.load(Relaxed),
            shootdowns_received: self.shootdowns_received.load(Relaxed),
            timer_ticks: self.timer_ticks.load(Relaxed),
        }
    }
}

impl Default for CpuStats {
    fn default() -> Self {
        Self::new()
    }
}

/// Prints one line per online CPU (a per-CPU /proc/interrupts):
/// `smp: cpu 3 apic 3 node 1: ipi_sent 0 ipi_recv 12 calls_sent 0 calls_run 10 tlb_sent 0 tlb_recv 2 timer 0`.
#[cfg(feature = "ktest")]
pub fn dump_stats() {
    for (cpu, state) in super::CPU_STATE.online() {
        let Some(area) = percpu::of(cpu) else {
            continue;
        };
        let s = state.stats.snapshot();
        crate::println!(
            "smp: cpu {} apic {} node {}: ipi_sent {} ipi_recv {} calls_sent {} calls_run {} tlb_sent {} tlb_recv {} timer {}",
            cpu.0,
            area.apic_id(),
            area.node().0,
            s.ipis_sent,
            s.ipis_received,
            s.calls_sent,
            s.calls_run,
            s.shootdowns_sent,
            s.shootdowns_received,
            s.timer_ticks
        );
    }
}
