//! In-kernel test of run-time per-CPU data (`percpu::PerCpuBox`): every CPU's copy starts with
//! its CPU's initializer, each CPU's `get_with` reaches its own copy and no other, and a
//! dropped box gives its units back (the next box of its size takes the same place).

use alloc::string::String;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use super::super::{on_each_cpu, online_cpus};
use super::SUITE;
use crate::ktest::{Ctx, TestResult};
use crate::percpu::{self, PerCpuBox};
use crate::topology::CpuId;
use crate::{kassert_eq, ktest};

/// A copy's value: the CPU's id in the high half.
fn tag(cpu: CpuId) -> u64 {
    u64::from(cpu.0) << 32
}

fn percpu_box_private(_ctx: &Ctx) -> TestResult {
    let words = PerCpuBox::new(|cpu| AtomicU64::new(tag(cpu)))
        .ok_or_else(|| String::from("percpu: no room in the regions for a word"))?;
    let wrong_start = words
        .iter()
        .filter(|(c, w)| w.load(Relaxed) != tag(*c))
        .count();
    kassert_eq!(
        wrong_start,
        0,
        "copies that did not start with their CPU's value"
    );
    let foreign = AtomicU32::new(0);
    on_each_cpu(&|cpu: CpuId| {
        let pin = percpu::pin();
        let mine = words.get_with(&pin);
        if mine.load(Relaxed) != tag(cpu) {
            foreign.fetch_add(1, Relaxed);
        }
        mine.fetch_add(1 + u64::from(cpu.0), Relaxed);
    });
    kassert_eq!(
        foreign.load(Relaxed),
        0,
        "CPUs whose get_with reached another copy"
    );
    for &cpu in online_cpus().iter() {
        kassert_eq!(
            words.on(cpu).load(Relaxed),
            tag(cpu) + 1 + u64::from(cpu.0),
            "CPU {}'s copy after its own add",
            cpu.0
        );
    }
    let place = words.on(CpuId(0)) as *const AtomicU64 as usize;
    drop(words);
    let again = PerCpuBox::new(|_| AtomicU64::new(0))
        .ok_or_else(|| String::from("percpu: no room after a drop"))?;
    kassert_eq!(
        again.on(CpuId(0)) as *const AtomicU64 as usize,
        place,
        "a dropped box's units were not given back"
    );
    Ok(())
}

ktest!(SUITE, Test, percpu_box_private);
