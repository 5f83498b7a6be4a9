//! Experiment `smp_calls`: the cost of a cross-CPU call to every CPU (`on_each_cpu`), to the
//! farthest CPU (`call_on_cpu`), and of a one-page TLB shootdown, averaged over 200 rounds.
//!
//! In the multi-CPU (tsc) boot the unit is nanoseconds of host time (a trend under TCG); in the
//! one-CPU icount boot it is guest instructions per round (no IPI is sent there: it measures
//! the call path's own cost).

use numalab_algo::page::PAGE_SIZE;

use crate::arch;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::smp::{call_on_cpu, on_each_cpu, online_cpus, tlb_shootdown};

const NAME: &str = super::catalog::SMP_CALLS.name;
const ROUNDS: u64 = 200;

fn smp_calls(_ctx: &Ctx) -> TestResult {
    let icount = super::instruction_boot();
    let hz = super::ticks_per_sec();
    if !icount && arch::tsc_hz() == 0 {
        return Err(TestError::Skip("TSC not calibrated".into()));
    }
    let online = online_cpus();
    let emit = |case: &str, metric: &str, ticks: u64| {
        let per_round = ticks as f64 / ROUNDS as f64;
        let (value, unit) = if icount {
            (per_round, "instructions")
        } else {
            (per_round * 1e9 / hz as f64, "ns")
        };
        super::record(NAME, case, metric, value, unit, online.len() as u32);
    };
    let t0 = super::now();
    for _ in 0..ROUNDS {
        on_each_cpu(&|_| {});
    }
    emit("on_each_cpu", "round_trip", super::now() - t0);
    if let Some(&far) = online.last().filter(|&&c| c != crate::percpu::cpu_id()) {
        let t0 = super::now();
        for _ in 0..ROUNDS {
            let _ = call_on_cpu(far, &|_| {});
        }
        emit("call_on_cpu", "round_trip", super::now() - t0);
    }
    let virt = crate::smp::start::alloc_scratch_virt(1).unwrap_or_default();
    let t0 = super::now();
    for _ in 0..ROUNDS {
        tlb_shootdown(virt, virt + PAGE_SIZE);
    }
    emit("tlb_shootdown_1page", "latency", super::now() - t0);
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, smp_calls);
