//! The trace plugin's known answers (tests/s13_trace.rs reads what the plugin counted): three
//! regions whose accesses are known in advance, each done by a probe that touches nothing but
//! the lines it names (arch::trace_mark::probes):
//! - `trace.remote_reads`: a CPU of node A loads one word from each of `LINES` lines of node
//!   B's memory: `LINES` remote accesses, 0 local;
//! - `trace.ping_pong`: a CPU of node A and one of node B hand one line back and forth
//!   `ROUNDS` times: 2 x `ROUNDS` - 1 remote HITM on that line (each handoff but the first
//!   move of the line, which the test places on node A's CPU first);
//! - `trace.private_writes`: a CPU stores to `LINES` lines it wrote just before: 0 transfers,
//!   0 invalidations, no miss.
//!
//! Each skips on a machine without two nodes that have both CPUs and memory. The probes take
//! raw pages, so this file allows what the rest of bench/ denies: unsafe code.

#![allow(unsafe_code)]

use crate::arch::trace_mark::probes;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{alloc_pages, Policy};
use crate::topology::{CpuId, NodeId};
use core::sync::atomic::{AtomicU64, Ordering};

use crate::ktest::suites::TRACE as SUITE;

/// Lines the read and write probes touch (four pages).
const LINES: u64 = 256;
/// Round trips of the ping-pong.
const ROUNDS: u64 = 100;
/// The label of the known-answer regions.
const BENCH: &str = "trace_check";

/// A CPU of each of two different nodes that have memory: (cpu A, node A, cpu B, node B).
fn two_nodes() -> Result<(CpuId, NodeId, CpuId, NodeId), TestError> {
    let topo = crate::topology::get();
    let mut found: alloc::vec::Vec<(CpuId, NodeId)> = alloc::vec::Vec::new();
    for &cpu in crate::smp::online_cpus() {
        let node = topo.node_of_cpu(cpu);
        if crate::mm::frame::total_bytes(node) > 0 && !found.iter().any(|&(_, n)| n == node) {
            found.push((cpu, node));
        }
    }
    match found.as_slice() {
        [(a, na), (b, nb), ..] => Ok((*a, *na, *b, *nb)),
        _ => Err(TestError::Skip(
            "trace: needs two nodes with both CPUs and memory".into(),
        )),
    }
}

fn remote_reads(_ctx: &Ctx) -> TestResult {
    let (a, _, _, nb) = two_nodes()?;
    let pages = alloc_pages(2, Policy::Bind(nb)).map_err(|e| alloc::format!("{e}"))?;
    let base = pages.virt_ptr() as usize;
    crate::println!(
        "# trace name {base:#x} {}: remote_reads lines of node {}",
        LINES * 64,
        nb.0
    );
    let (enter, leave) = super::region::open(BENCH, "remote_reads", 1);
    crate::smp::run_on_cpus(&[a], &|_| {
        // SAFETY: `pages` (four pages, LINES x 64 bytes) is this test's until it is dropped.
        unsafe { probes::read_lines(enter, leave, base as *const u8, LINES) }
    });
    drop(pages);
    Ok(())
}

fn ping_pong(_ctx: &Ctx) -> TestResult {
    let (a, na, b, _) = two_nodes()?;
    let page = alloc_pages(0, Policy::Bind(na)).map_err(|e| alloc::format!("{e}"))?;
    let word = page.virt_ptr() as usize;
    crate::println!("# trace name {word:#x} 64: ping_pong line");
    // SAFETY: `word` is the start of a page this test owns until `page` is dropped below, and
    // a page start is 8-byte aligned, as AtomicU64 needs.
    let shared = unsafe { &*(word as *const AtomicU64) };
    // CPU A holds the line (modified) before the region starts.
    crate::smp::run_on_cpus(&[a], &|_| shared.store(0, Ordering::SeqCst));
    let (enter, leave) = super::region::open(BENCH, "ping_pong", 2);
    crate::smp::run_on_cpus(&[a, b], &|cpu| {
        let first = if cpu == a { 0 } else { 1 };
        // SAFETY: `word` starts a page this test owns; only CPUs a and b use it here.
        unsafe { probes::ping_pong(enter, leave, word as *mut u64, first, ROUNDS) };
    });
    let last = shared.load(Ordering::SeqCst);
    drop(page);
    crate::kassert_eq!(last, 2 * ROUNDS);
    Ok(())
}

fn private_writes(_ctx: &Ctx) -> TestResult {
    let (a, na, _, _) = two_nodes()?;
    let pages = alloc_pages(2, Policy::Bind(na)).map_err(|e| alloc::format!("{e}"))?;
    let base = pages.virt_ptr() as usize;
    crate::println!(
        "# trace name {base:#x} {}: private_writes lines",
        LINES * 64
    );
    let (enter, leave) = super::region::open(BENCH, "private_writes", 1);
    let (warm, _) = super::region::open(BENCH, "private_writes_warm", 1);
    crate::smp::run_on_cpus(&[a], &|_| {
        // SAFETY: `pages` (LINES x 64 bytes) is this test's, and only this CPU writes it.
        unsafe {
            probes::write_lines(warm, leave, base as *mut u8, LINES);
            probes::write_lines(enter, leave, base as *mut u8, LINES);
        }
    });
    drop(pages);
    Ok(())
}

crate::ktest!(SUITE, Test, remote_reads);
crate::ktest!(SUITE, Test, ping_pong);
crate::ktest!(SUITE, Test, private_writes);
