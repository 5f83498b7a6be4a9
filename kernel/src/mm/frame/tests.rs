//! KTAP tests of the frame allocator: conservation and free-list consistency, placement per
//! policy, distance-ordered fallback, exhaustion, invalid frees, per-CPU lists, dumps, stress.

use super::*;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::{kassert, kassert_eq, ktest};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::topology::CpuId;

use crate::ktest::suites::FRAME as SUITE;

/// Checks that everything a test took was given back: consistent lists and the same free
/// bytes per node as before.
fn expect_restored(before: &[u64]) -> TestResult {
    let after = settled_bytes()?;
    kassert_eq!(after, before.to_vec(), "free bytes per node before/after");
    Ok(())
}

fn in_node(topo: &Topology, phys: PhysAddr, bytes: u64, node: NodeId) -> bool {
    let phys = phys.as_u64();
    topo.nodes[node.index()]
        .mem_ranges
        .iter()
        .any(|&(s, e)| s <= phys && phys + bytes <= e)
}

/// Every node with memory: consistent free lists, conservation, free <= total; memoryless
/// nodes report zero.
fn conservation(_ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    settled_bytes()?;
    let mut total = 0;
    for info in &topo.nodes {
        let (t, f) = (total_bytes(info.id), free_bytes(info.id));
        kassert!(f <= t, "node {}: free {} > total {}", info.id.0, f, t);
        if topo.is_memoryless(info.id) {
            kassert_eq!(t, 0);
        }
        total += t;
    }
    kassert!(total > 0, "no memory managed");
    Ok(())
}

/// One block of every order: aligned, inside its node, writable, and freed back.
fn orders(_ctx: &Ctx) -> TestResult {
    let before = settled_bytes()?;
    let topo = crate::topology::get();
    for order in 0..=MAX_ORDER {
        let p = alloc_pages(order, Policy::Local).map_err(|e| format!("order {}: {}", order, e))?;
        let bytes = p.size_bytes() as u64;
        kassert_eq!(
            p.phys_addr().as_u64() % bytes,
            0,
            "order {} alignment",
            order
        );
        kassert!(
            in_node(topo, p.phys_addr(), bytes, p.node()),
            "order {} outside node",
            order
        );
        // SAFETY: the block is ours (just allocated) and `bytes` long in the direct map.
        unsafe {
            p.virt_ptr().write_bytes(0xa5, bytes as usize);
            kassert_eq!(p.virt_ptr().add(bytes as usize - 1).read(), 0xa5);
        }
    }
    kassert_eq!(
        alloc_pages(MAX_ORDER + 1, Policy::Local).err(),
        Some(AllocError::BadOrder(11))
    );
    expect_restored(&before)
}

/// Bind/Preferred land in the asked node's ranges, Local on the CPU's nearest memory node,
/// Interleave cycles over the memory nodes; Bind to a memoryless node is an error.
fn placement(_ctx: &Ctx) -> TestResult {
    let before = settled_bytes()?;
    let topo = crate::topology::get();
    let mut held = Vec::new();
    for info in &topo.nodes {
        let n = info.id;
        if topo.is_memoryless(n) {
            kassert_eq!(
                alloc_pages(0, Policy::Bind(n)).err(),
                Some(AllocError::BadNode(n))
            );
            let p = alloc_pages(0, Policy::Preferred(n)).map_err(|e| format!("{}", e))?;
            kassert_eq!(
                p.node(),
                topo.mem_node(n),
                "preferred memoryless node {}",
                n.0
            );
            continue;
        }
        for order in [0u8, 3, 9] {
            for policy in [Policy::Bind(n), Policy::Preferred(n)] {
                let p = alloc_pages(order, policy).map_err(|e| format!("{:?}: {}", policy, e))?;
                kassert_eq!(p.node(), n, "{:?} order {}", policy, order);
                kassert!(
                    in_node(topo, p.phys_addr(), p.size_bytes() as u64, n),
                    "{:?}: {:#x} not in node {}'s ranges",
                    policy,
                    p.phys_addr(),
                    n.0
                );
                held.push(p);
            }
        }
    }
    let local = topo.mem_node(crate::percpu::node_id());
    let p = alloc_pages(0, Policy::Local).map_err(|e| format!("{}", e))?;
    kassert_eq!(p.node(), local);
    kassert_eq!(p.order(), 0);
    kassert!(in_node(topo, p.phys_addr(), 4096, local));
    held.push(p);
    let mem_nodes: Vec<NodeId> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_bytes() > 0)
        .map(|n| n.id)
        .collect();
    let mut seen = Vec::new();
    for _ in 0..mem_nodes.len() {
        let p = alloc_pages(0, Policy::Interleave).map_err(|e| format!("{}", e))?;
        kassert!(in_node(topo, p.phys_addr(), 4096, p.node()));
        seen.push(p.node());
        held.push(p);
    }
    seen.sort_unstable();
    kassert_eq!(
        seen,
        mem_nodes,
        "interleave visits every memory node once per round"
    );
    let bad = NodeId(topo.nr_nodes() as u16);
    kassert_eq!(
        alloc_pages(0, Policy::Bind(bad)).err(),
        Some(AllocError::BadNode(bad))
    );
    kassert_eq!(
        alloc_pages(0, Policy::Preferred(bad)).err(),
        Some(AllocError::BadNode(bad))
    );
    drop(held);
    expect_restored(&before)
}

/// Allocates everything `policy` can give, largest blocks first; returns the blocks.
fn exhaust(policy: Policy, held: &mut Vec<Pages>) -> Result<usize, String> {
    let mut pages = 0;
    for order in (0..=MAX_ORDER).rev() {
        loop {
            match alloc_pages(order, policy) {
                Ok(p) => {
                    pages += p.nr_pages();
                    held.push(p);
                }
                Err(AllocError::OutOfMemory) => break,
                Err(e) => return Err(format!("{:?} order {}: {}", policy, order, e)),
            }
        }
    }
    Ok(pages)
}

/// Exhausts the nodes one by one in the fallback order of the CPU's node: Preferred(first)
/// must then come from the next node in distance order, counting numa_miss on the node that
/// served and numa_foreign on the preferred one; then every policy fails with OutOfMemory;
/// everything is freed back.
fn fallback_and_exhaustion(_ctx: &Ctx) -> TestResult {
    let mut held: Vec<Pages> = Vec::with_capacity(16384);
    let before = settled_bytes()?;
    let topo = crate::topology::get();
    let order_list = topo.fallback_order(crate::percpu::node_id()).to_vec();
    kassert!(!order_list.is_empty());
    let first = order_list[0];
    let mut report = String::new();
    for (i, &n) in order_list.iter().enumerate() {
        exhaust(Policy::Bind(n), &mut held)?;
        kassert_eq!(free_bytes(n), 0);
        let held_bytes: u64 = held
            .iter()
            .filter(|p| p.node() == n)
            .map(|p| p.size_bytes() as u64)
            .sum();
        kassert_eq!(
            held_bytes + holders_held_bytes_on(n),
            before[n.index()],
            "node {} exhausted",
            n.0
        );
        kassert_eq!(
            alloc_pages(0, Policy::Bind(n)).err(),
            Some(AllocError::OutOfMemory)
        );
        if let Some(&next) = order_list.get(i + 1) {
            let miss0 = node_counters(next).map_or(0, |c| c.numa_miss);
            let foreign0 = node_counters(first).map_or(0, |c| c.numa_foreign);
            let p = alloc_pages(0, Policy::Preferred(first)).map_err(|e| format!("{}", e))?;
            kassert_eq!(
                p.node(),
                next,
                "fallback after exhausting {:?}",
                &order_list[..=i]
            );
            kassert_eq!(node_counters(next).map_or(0, |c| c.numa_miss), miss0 + 1);
            kassert_eq!(
                node_counters(first).map_or(0, |c| c.numa_foreign),
                foreign0 + 1
            );
            report.push_str(&format!(" {}", next.0));
            held.push(p);
        }
    }
    for policy in [Policy::Local, Policy::Interleave, Policy::Preferred(first)] {
        kassert_eq!(
            alloc_pages(0, policy).err(),
            Some(AllocError::OutOfMemory),
            "{:?}",
            policy
        );
        kassert_eq!(
            alloc_pages(MAX_ORDER, policy).err(),
            Some(AllocError::OutOfMemory)
        );
    }
    let n_blocks = held.len();
    held.clear();
    println!(
        "# frame: exhausted {} nodes ({} blocks); Preferred({}) fell back to:{}",
        order_list.len(),
        n_blocks,
        first.0,
        report
    );
    expect_restored(&before)
}

/// Invalid frees (tail page, wrong order, double free, unaligned address, outside every
/// node) are refused, counted and leave the allocator consistent.
fn invalid_frees(_ctx: &Ctx) -> TestResult {
    let before = settled_bytes()?;
    let local = crate::percpu::mem_node_id();
    let invalid = || node_counters(local).map_or(0, |c| c.invalid_frees);
    let count0 = invalid();
    let p = alloc_pages(2, Policy::Bind(local)).map_err(|e| format!("{}", e))?;
    let q = alloc_pages(5, Policy::Bind(local)).map_err(|e| format!("{}", e))?;
    let (phys, order) = p.into_raw();
    let (qphys, qorder) = q.into_raw();
    // Six of the eight frees below are refused, each with an `invalid free` warning.
    crate::ktest::expect_warnings(6, numalab_algo::formats::ktap::INVALID_FREE);
    crate::ktest::expect_warnings(1, "outside every node");
    // SAFETY: both blocks are owned by this test and never touched through these values;
    // every pair but the two valid ones is refused by the allocator (what is checked here).
    unsafe {
        drop(Pages::from_raw(phys + PAGE_SIZE, 0)); // tail page
        drop(Pages::from_raw(phys, 1)); // wrong order
        drop(Pages::from_raw(phys + 8, 2)); // unaligned address
        drop(Pages::from_raw(qphys + 4 * PAGE_SIZE, 2)); // inside a bigger block
        drop(Pages::from_raw(phys, order)); // valid
        drop(Pages::from_raw(phys, order)); // double free (on a per-CPU list)
        drop(Pages::from_raw(qphys, qorder)); // valid
        drop(Pages::from_raw(qphys, qorder)); // double free (in the buddy)
    }
    kassert_eq!(invalid() - count0, 6);
    let fa = FRAME.get().ok_or_else(|| String::from("not ready"))?;
    let stray0 = fa.stray_frees.load(Relaxed);
    // SAFETY: a page below 1 MiB is never managed: the free must be refused.
    unsafe { drop(Pages::from_raw(PhysAddr::new(0x1000), 0)) };
    kassert_eq!(fa.stray_frees.load(Relaxed), stray0 + 1);
    expect_restored(&before)
}

/// Per-CPU lists: a free then an alloc of order 0 is a list hit on the same page; going past
/// `high` drains a batch; drain_all empties them.
fn pcp_lists(ctx: &Ctx) -> TestResult {
    if !ctx.opts.get(&crate::options::FRAME_PCP) {
        return Err(TestError::Skip(String::from("frame.pcp=0")));
    }
    let before = settled_bytes()?;
    let local = crate::percpu::mem_node_id();
    let c0 = node_counters(local).ok_or_else(|| String::from("no local node"))?;
    let p = alloc_pages(0, Policy::Local).map_err(|e| format!("{}", e))?;
    let phys = p.phys_addr();
    drop(p);
    let p = alloc_pages(0, Policy::Local).map_err(|e| format!("{}", e))?;
    kassert_eq!(p.phys_addr(), phys, "LIFO reuse through the per-CPU list");
    drop(p);
    let c1 = node_counters(local).ok_or_else(|| String::from("no local node"))?;
    kassert!(
        c1.pcp_refill > c0.pcp_refill,
        "first alloc after drain refills"
    );
    kassert!(c1.pcp_hit > c0.pcp_hit);
    let high = ctx.opts.get(&crate::options::FRAME_PCP_HIGH) as usize;
    let held: Vec<Pages> = (0..high + 64)
        .map(|_| alloc_pages(0, Policy::Local))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}", e))?;
    drop(held);
    let c2 = node_counters(local).ok_or_else(|| String::from("no local node"))?;
    kassert!(c2.pcp_drain > c1.pcp_drain, "going past high drains");
    kassert!(
        c2.pcp_pages <= high,
        "{} pages listed, high {}",
        c2.pcp_pages,
        high
    );
    expect_restored(&before)
}

/// page_meta: the owner/private words of a head page are the user's; unmanaged addresses
/// have none.
fn page_meta_words(_ctx: &Ctx) -> TestResult {
    let p = alloc_pages(1, Policy::Local).map_err(|e| format!("{}", e))?;
    let meta =
        page_meta(p.phys_addr()).ok_or_else(|| String::from("no meta for an allocated page"))?;
    kassert_eq!(meta.owner.load(Relaxed), 0);
    kassert_eq!(meta.state(), numalab_algo::frame::buddy::ALLOCATED | 1);
    meta.owner.store(0xdead_0000, Relaxed);
    meta.private.store(7, Relaxed);
    kassert_eq!(
        page_meta(p.phys_addr()).map(|m| m.private.load(Relaxed)),
        Some(7)
    );
    meta.owner.store(0, Relaxed);
    meta.private.store(0, Relaxed);
    let low = PhysAddr::new(0x1000);
    // A page no node manages has no PageMeta, or (inside a 2 MiB section a node's memmap
    // covers, as Linux's reserved struct pages) one that is not free and has no owner.
    kassert!(page_meta(low).is_none_or(|m| node_of_phys(low).is_some()
        || (m.state() == 0 && m.owner.load(core::sync::atomic::Ordering::Relaxed) == 0)));
    kassert_eq!(virt_to_phys(phys_to_virt(p.phys_addr())), p.phys_addr());
    Ok(())
}

/// The physical address of a page descriptor, reached through the vmemmap or the direct map.
fn meta_phys(m: &PageMeta) -> Option<u64> {
    crate::arch::paging::translate(VirtAddr::new(m as *const PageMeta as u64)).map(|p| p.as_u64())
}

/// Pages are looked up by their node's ranges, never by its span (another
/// node's memory may lie between a node's ranges): the first and last page of every managed
/// range are that node's, with metadata from that node's memmap; the page after a range that
/// the node's next range does not start at is not that node's; and a block of every node
/// handed back through `from_raw` is freed to its node, not refused.
fn node_of_page(_ctx: &Ctx) -> TestResult {
    let before = settled_bytes()?;
    let fa = FRAME.get().ok_or_else(|| String::from("not ready"))?;
    for node in fa.nodes.iter().flatten() {
        for (i, &(s, e)) in node.ranges.iter().enumerate() {
            for phys in [PhysAddr::new(s), PhysAddr::new(e - PAGE_SIZE)] {
                kassert_eq!(node_of_phys(phys), Some(node.id), "page {:#x}", phys);
                // The same words, whichever address reaches them (the vmemmap's or the
                // direct map's): compared by the physical address behind each.
                let own = node.meta(phys.pfn()).and_then(meta_phys);
                kassert!(
                    own.is_some() && page_meta(phys).and_then(meta_phys) == own,
                    "page {:#x}: metadata not from node {}'s memmap",
                    phys,
                    node.id.0
                );
            }
            let next = node.ranges.get(i + 1).map(|r| r.0);
            if next != Some(e) {
                kassert!(
                    node_of_phys(PhysAddr::new(e)) != Some(node.id),
                    "page {:#x} after node {}'s range {:#x}-{:#x} is in none of its ranges",
                    e,
                    node.id.0,
                    s,
                    e
                );
            }
        }
        let invalid = node.invalid_frees.load(Relaxed);
        let (phys, order) = alloc_pages(0, Policy::Bind(node.id))
            .map_err(|e| format!("node {}: {}", node.id.0, e))?
            .into_raw();
        // SAFETY: (phys, order) came from into_raw just above; nothing uses the page.
        let p = unsafe { Pages::from_raw(phys, order) };
        kassert_eq!(p.node(), node.id, "from_raw of {:#x}", phys);
        drop(p);
        kassert_eq!(
            node.invalid_frees.load(Relaxed),
            invalid,
            "the free of {:#x} was refused",
            phys
        );
    }
    expect_restored(&before)
}

/// Large heap allocations come from pages (outside the bootstrap heap) and go back.
fn heap_large(_ctx: &Ctx) -> TestResult {
    let before = settled_bytes()?;
    let v: Vec<u8> = alloc::vec![3u8; 1 << 20];
    let virt = VirtAddr::from_ptr(v.as_ptr());
    kassert!(
        !crate::early::in_bootstrap_heap(virt),
        "1 MiB Vec in the bootstrap heap"
    );
    kassert!(node_of_phys(virt_to_phys(virt)).is_some());
    kassert_eq!(v.iter().map(|&b| b as u64).sum::<u64>(), 3 << 20);
    drop(v);
    let small: Vec<u8> = alloc::vec![1u8; 64];
    // Small blocks come from the bootstrap heap until SLUB is up, from kmalloc after.
    kassert!(
        crate::early::in_bootstrap_heap(VirtAddr::from_ptr(small.as_ptr()))
            != crate::mm::heap::small_blocks_from_kmalloc()
    );
    drop(small);
    expect_restored(&before)
}

/// Prints /proc/buddyinfo, numastat and the per-CPU list figures; one line per memory node.
fn dumps(_ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    let mem_nodes = topo.nodes.iter().filter(|n| n.mem_bytes() > 0).count();
    let buddyinfo = buddyinfo_lines();
    let numastat = numastat_lines();
    let pcp = pcp_lines();
    for line in buddyinfo.iter().chain(numastat.iter()).chain(pcp.iter()) {
        println!("{}", line);
    }
    kassert_eq!(buddyinfo.len(), mem_nodes);
    kassert_eq!(numastat.len(), 7);
    kassert_eq!(pcp.len(), mem_nodes);
    Ok(())
}

use numalab_algo::rng::Rng;

/// Every online CPU allocates random orders 0..=5 under every policy into a shared pool of
/// slots and frees whatever it finds in the slot it picks (often another CPU's pages, often a
/// remote node's), for a bounded number of operations; each block carries a tag checked when
/// it is freed. Then the pool is emptied, every CPU's lists are drained, and conservation
/// and the free lists are checked.
fn stress(ctx: &Ctx) -> TestResult {
    use core::sync::atomic::{AtomicU64, AtomicUsize};
    let before = settled_bytes()?;
    let topo = crate::topology::get();
    let nr_slots = 1024;
    let slots: Vec<AtomicU64> = (0..nr_slots).map(|_| AtomicU64::new(0)).collect();
    let ops_per_cpu: u64 = if ctx.opts.get(&crate::options::BENCH_SMOKE) {
        2_000
    } else {
        20_000
    };
    let failures = AtomicU64::new(0);
    let bad_tags = AtomicU64::new(0);
    let remote_frees = AtomicU64::new(0);
    let cpus_ran = AtomicUsize::new(0);
    let tag_of = |raw: u64| raw ^ 0x5a5a_5a5a_0000_0000;
    let worker = |cpu: CpuId| {
        cpus_ran.fetch_add(1, Relaxed);
        let mut rng = Rng::new(0x5eed_f4a3_0000_0001 ^ ((cpu.0 as u64 + 1) << 32));
        for _ in 0..ops_per_cpu {
            let slot = &slots[(rng.next_u64() % nr_slots as u64) as usize];
            let old = slot.swap(0, Relaxed);
            if old != 0 {
                let p = Pages { raw: old };
                // SAFETY: the block is ours (taken out of the slot); its first word holds the
                // tag its allocator wrote.
                let tag = unsafe { (p.virt_ptr() as *const u64).read_volatile() };
                if tag != tag_of(old) {
                    bad_tags.fetch_add(1, Relaxed);
                }
                if p.node() != crate::percpu::mem_node_id() {
                    remote_frees.fetch_add(1, Relaxed);
                }
                drop(p);
                continue;
            }
            let order = (rng.next_u64() % 6) as u8;
            let node = NodeId((rng.next_u64() % topo.nr_nodes() as u64) as u16);
            let policy = match rng.next_u64() % 4 {
                0 => Policy::Local,
                1 => Policy::Preferred(node),
                2 => Policy::Bind(topo.mem_node(node)),
                _ => Policy::Interleave,
            };
            match alloc_pages(order, policy) {
                Ok(p) => {
                    // SAFETY: the first word of a block this CPU owns.
                    unsafe { (p.virt_ptr() as *mut u64).write_volatile(tag_of(p.raw)) };
                    let raw = p.raw;
                    core::mem::forget(p);
                    if let Err(_taken) = slot.compare_exchange(0, raw, Relaxed, Relaxed) {
                        drop(Pages { raw });
                    }
                }
                Err(_) => {
                    failures.fetch_add(1, Relaxed);
                }
            }
        }
    };
    crate::smp::on_each_cpu(&worker);
    for slot in &slots {
        let raw = slot.swap(0, Relaxed);
        if raw != 0 {
            drop(Pages { raw });
        }
    }
    drop(slots);
    let ran = cpus_ran.load(Relaxed);
    println!(
        "# frame.stress: {} operations on {} CPUs, {} frees of another node's pages, {} failed allocations",
        ops_per_cpu * ran as u64,
        ran,
        remote_frees.load(Relaxed),
        failures.load(Relaxed)
    );
    kassert_eq!(ran, crate::percpu::nr_cpus_online());
    kassert_eq!(
        bad_tags.load(Relaxed),
        0,
        "blocks whose tag changed while owned"
    );
    kassert_eq!(failures.load(Relaxed), 0);
    expect_restored(&before)
}

/// Every online CPU fills its lists (allocates and frees pages on every memory node), then
/// `drain_all` empties every CPU's lists from this CPU, each under its claim.
fn drain_all_cpus(_ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    settled_bytes()?;
    crate::smp::on_each_cpu(&|_cpu| {
        for info in topo.nodes.iter().filter(|n| n.mem_bytes() > 0) {
            drop(alloc_pages(0, Policy::Bind(info.id)));
        }
    });
    let listed = |n: NodeId| node_counters(n).map_or(0, |c| c.pcp_pages);
    let before: usize = topo.nodes.iter().map(|n| listed(n.id)).sum();
    let drained = drain_all() as usize;
    let after: usize = topo.nodes.iter().map(|n| listed(n.id)).sum();
    kassert!(before > 0 || o_pcp_off(), "no page on any per-CPU list");
    kassert_eq!(after, 0);
    kassert_eq!(drained, before);
    settled_bytes()?;
    Ok(())
}

/// Another online CPU than the caller (None on one CPU).
fn other_cpu() -> Option<CpuId> {
    let me = crate::percpu::cpu_id();
    crate::smp::online_cpus().iter().copied().find(|&c| c != me)
}

/// Two CPUs free the same order-0 block at the same moment (a barrier, then both drop it),
/// `ROUNDS` times: each time exactly one free wins and the other is refused as an invalid
/// free (the per-CPU list's free checked, then set, the state, so both could put
/// the block on their lists and it was handed out twice later). Conservation after.
fn pcp_double_free_race(_ctx: &Ctx) -> TestResult {
    const ROUNDS: u32 = 300;
    let Some(other) = other_cpu() else {
        return Err(TestError::Skip(String::from("needs two CPUs")));
    };
    let me = crate::percpu::cpu_id();
    let before = settled_bytes()?;
    let local = crate::percpu::mem_node_id();
    let invalid = || node_counters(local).map_or(0, |c| c.invalid_frees);
    let count0 = invalid();
    crate::ktest::expect_warnings(ROUNDS, numalab_algo::formats::ktap::INVALID_FREE);
    for round in 0..ROUNDS {
        let order = (round % 2) as u8 * 3;
        let (phys, order) = alloc_pages(order, Policy::Bind(local))
            .map_err(|e| format!("round {}: {}", round, e))?
            .into_raw();
        let arrived = core::sync::atomic::AtomicU32::new(0);
        crate::smp::run_on_cpus(&[me, other], &|_cpu| {
            arrived.fetch_add(1, Relaxed);
            while arrived.load(Relaxed) < 2 {
                core::hint::spin_loop();
            }
            // SAFETY: the block is this test's (into_raw above); both CPUs free it on purpose:
            // the allocator must refuse one of the two (what is checked).
            drop(unsafe { Pages::from_raw(phys, order) });
        });
        kassert_eq!(
            invalid() - count0,
            u64::from(round) + 1,
            "round {}: frees of {:#x} refused",
            round,
            phys
        );
    }
    expect_restored(&before)
}

/// Each CPU's per-CPU page lists lie in its memory node's memory (build.rs, `pcp_row_on`; Linux
/// takes per_cpu_pages with alloc_percpu): every list of the CPU's row, by the node of its
/// physical address.
fn pcp_on_their_node(_ctx: &Ctx) -> TestResult {
    let fa = FRAME.get().ok_or_else(|| String::from("not ready"))?;
    let topo = crate::topology::get();
    let mut wrong = Vec::new();
    for cpu in fa.cpu_ids() {
        let want = topo.mem_node(topo.cpus.get(cpu.index()).map_or(NodeId(0), |c| c.node));
        for n in 0..fa.nr_nodes {
            let addr = fa.pcp(cpu, NodeId(n as u16)) as *const pcp::PcpList as u64;
            let got = node_of_phys(virt_to_phys(VirtAddr::new(addr)));
            if got != Some(want) {
                wrong.push(format!(
                    "CPU {}'s list for node {n} at {addr:#x} is on node {}, want node {}",
                    cpu.0,
                    got.map_or(String::from("none"), |g| format!("{}", g.0)),
                    want.0
                ));
            }
        }
    }
    match wrong.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} misplaced, first: {first}", wrong.len()).into()),
    }
}

/// An allocation that finds its node empty while another CPU's per-CPU list holds pages of
/// it drains every CPU's lists before failing (it drained only its own, so those
/// pages were out of reach): another CPU fills its list for the local node, then this CPU
/// takes everything Bind(local) gives, which must be every free page of the node.
fn drain_other_cpus_before_failing(ctx: &Ctx) -> TestResult {
    if !ctx.opts.get(&crate::options::FRAME_PCP) {
        return Err(TestError::Skip(String::from("frame.pcp=0")));
    }
    let Some(other) = other_cpu() else {
        return Err(TestError::Skip(String::from("needs two CPUs")));
    };
    let fa = FRAME.get().ok_or_else(|| String::from("not ready"))?;
    let mut held: Vec<Pages> = Vec::with_capacity(16384);
    let before = settled_bytes()?;
    let local = crate::percpu::mem_node_id();
    crate::smp::call_on_cpu(other, &|_| {
        drop(alloc_pages(0, Policy::Bind(local)));
    })
    .map_err(|e| format!("{:?}", e))?;
    let listed = fa.pcp(other, local).pages();
    kassert!(
        listed > 0,
        "CPU {} listed no page of node {}",
        other.0,
        local.0
    );
    let pages = exhaust(Policy::Bind(local), &mut held)?;
    let held_bytes: u64 = held.iter().map(|p| p.size_bytes() as u64).sum();
    kassert_eq!(
        held_bytes + holders_held_bytes_on(local),
        before[local.index()],
        "node {} exhausted ({} pages, CPU {} listed {})",
        local.0,
        pages,
        other.0,
        listed
    );
    kassert_eq!(fa.pcp(other, local).pages(), 0);
    drop(held);
    expect_restored(&before)
}

fn o_pcp_off() -> bool {
    !crate::options::load().get(&crate::options::FRAME_PCP)
}

ktest!(SUITE, Test, conservation);
ktest!(SUITE, Test, orders);
ktest!(SUITE, Test, placement);
ktest!(SUITE, Test, fallback_and_exhaustion);
ktest!(SUITE, Test, invalid_frees);
ktest!(SUITE, Test, pcp_lists);
ktest!(SUITE, Test, "page_meta", page_meta_words);
ktest!(SUITE, Test, node_of_page);
ktest!(SUITE, Test, heap_large);
ktest!(SUITE, Test, drain_all_cpus);
ktest!(SUITE, Test, pcp_double_free_race);
ktest!(SUITE, Test, drain_other_cpus_before_failing);
ktest!(SUITE, Test, pcp_on_their_node);
ktest!(SUITE, Test, dumps);
ktest!(SUITE, Stress, stress);
