//! `numa_locality` (seed 004, Hyeonggon Yoo / Jay Patel, "improve SLUB on NUMA"): a
//! hackbench-like exchange. Every CPU sends 128-byte messages (hackbench's 100-byte messages
//! land in kmalloc-128) allocated from one cache to a partner CPU on another node, and receives
//! and frees the messages its own senders pass it (remote frees). Cases: `prefer_local` (the
//! cache takes a new local slab rather than a remote partial while the local node has free
//! memory) and `default` (Linux's behaviour: remote partials first).
//!
//! Metrics per case: `local_object_fraction` (messages whose memory is on the sending CPU's
//! node), `slab_kib` (the most memory the cache held in slab pages during the run, sampled),
//! `messages_per_sec` (all CPUs together, guest time; tsc clock: a trend).
//!
//! Lock order: mailbox locks are leaves, never held across allocator calls.

use super::slub_cache::{BenchCache, Obj};
use super::workload::{self, Barrier, Mailboxes};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::topology::CpuId;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const NAME: &str = "numa_locality";
const MSG_BYTES: usize = 128;
/// Messages a sender lets wait in its partner's mailbox before it receives its own.
const IN_FLIGHT: usize = 256;
const SEND_BATCH: usize = 8;

/// For each CPU (by index in `cpus`), the index of a partner on another node: half the machine
/// away, then onward to the first CPU of a different node.
fn partners(cpus: &[CpuId]) -> Vec<usize> {
    let n = cpus.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (i + n / 2 + j) % n)
                .find(|&p| workload::node_of(cpus[p]) != workload::node_of(cpus[i]))
                .unwrap_or((i + 1) % n)
        })
        .collect()
}

struct Sample {
    local: u64,
    total: u64,
    peak_slab_bytes: u64,
    elapsed_ticks: u64,
}

fn run_case(case: &str, prefer_local: bool, per_cpu: u64) -> Result<Sample, String> {
    let cpus = workload::online();
    let partner = partners(&cpus);
    let mut t = BenchCache::default_tunables(NAME);
    t.prefer_local = prefer_local;
    let cache = BenchCache::create(NAME, MSG_BYTES, t)?;
    let mail = Mailboxes::new(cpus.len(), IN_FLIGHT * 2);
    let barrier = Barrier::new(cpus.len());
    let (local, total) = (AtomicU64::new(0), AtomicU64::new(0));
    let (start, end, peak) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let senders_done = AtomicUsize::new(0);
    let short = AtomicU64::new(0);
    crate::smp::run_on_cpus(&cpus, &|cpu| {
        let me = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
        let to = partner[me];
        let my_node = workload::node_of(cpu);
        let mut out: Vec<Obj> = Vec::with_capacity(SEND_BATCH);
        let mut inbox: Vec<Obj> = Vec::with_capacity(IN_FLIGHT * 2);
        let (mut my_local, mut sent, mut checksum) = (0u64, 0u64, 0u64);
        barrier.wait();
        if me == 0 {
            start.store(super::now(), Ordering::Release);
        }
        let receive = |inbox: &mut Vec<Obj>, checksum: &mut u64| {
            mail.take(me, inbox);
            for msg in inbox.drain(..) {
                *checksum = checksum.wrapping_add(msg.read_word());
                cache.free(msg);
            }
        };
        while sent < per_cpu {
            if mail.len(to) < IN_FLIGHT {
                for _ in 0..SEND_BATCH.min((per_cpu - sent) as usize) {
                    let Some(mut msg) = cache.alloc() else {
                        short.fetch_add(1, Ordering::Relaxed);
                        break;
                    };
                    if workload::node_of_addr(msg.addr()) == Some(my_node) {
                        my_local += 1;
                    }
                    msg.write_word(sent);
                    out.push(msg);
                    sent += 1;
                }
                mail.send(to, &mut out);
                if short.load(Ordering::Relaxed) > 0 {
                    break;
                }
            }
            receive(&mut inbox, &mut checksum);
            if sent % 256 < SEND_BATCH as u64 {
                workload::store_max(&peak, cache.slab_bytes());
                if me == 0 {
                    super::progress(NAME, case, (sent * 100 / per_cpu) as u32);
                }
            }
        }
        senders_done.fetch_add(1, Ordering::AcqRel);
        while senders_done.load(Ordering::Acquire) < cpus.len() || mail.len(me) > 0 {
            receive(&mut inbox, &mut checksum);
        }
        workload::store_max(&end, super::now());
        local.fetch_add(my_local, Ordering::Relaxed);
        total.fetch_add(sent, Ordering::Relaxed);
        core::hint::black_box(checksum);
    });
    workload::store_max(&peak, cache.slab_bytes());
    cache.finish()?;
    if short.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{NAME}: {case}: message allocations failed (out of memory?)"
        ));
    }
    Ok(Sample {
        local: local.load(Ordering::Relaxed),
        total: total.load(Ordering::Relaxed).max(1),
        peak_slab_bytes: peak.load(Ordering::Relaxed),
        elapsed_ticks: end
            .load(Ordering::Acquire)
            .saturating_sub(start.load(Ordering::Acquire))
            .max(1),
    })
}

fn numa_locality(ctx: &Ctx) -> TestResult {
    super::needs_cpus(ctx, NAME, 2)?;
    let cpus = workload::online();
    let nodes_with_cpus = {
        let mut nodes: Vec<u16> = cpus.iter().map(|&c| workload::node_of(c).0).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes.len()
    };
    if nodes_with_cpus < 2 {
        return Err(TestError::Skip(format!(
            "{NAME}: needs CPUs on two or more NUMA nodes"
        )));
    }
    let per_cpu = super::pick(10_000, 600);
    let n = cpus.len() as u32;
    let hz = workload::ticks_per_sec();
    for (case, prefer_local) in super::rep_order([("prefer_local", true), ("default", false)]) {
        let s = run_case(case, prefer_local, per_cpu)?;
        super::record(
            NAME,
            case,
            "local_object_fraction",
            s.local as f64 / s.total as f64,
            "fraction",
            n,
        );
        super::record(
            NAME,
            case,
            "slab_kib",
            (s.peak_slab_bytes / 1024) as f64,
            "kib",
            n,
        );
        super::record(
            NAME,
            case,
            "messages_per_sec",
            s.total as f64 / (s.elapsed_ticks as f64 / hz),
            "messages_per_sec",
            n,
        );
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, numa_locality);
