//! The cases of Linux's lib/test_vmalloc.c (same names, its table order in
//! numalab_algo::vmalloc::test_grid::TESTS; its two kvfree_rcu tests are in
//! kernel/src/kfree_rcu/vmalloc_cases.rs, as mm sits below RCU), shared by the KTAP tests (tests.rs: each case on
//! every CPU under all three designs) and the `test_vmalloc` experiment
//! (kernel/src/bench/test_vmalloc.rs: Linux's parameter grid).
//!
//! Sizes are scaled down from test_vmalloc.c for QEMU (TCG): full_fit uses fls(CPUs)*64 junk
//! areas instead of fls(CPUs)*8192, long_busy_list 500 busy areas instead of 15000, pcpu 200
//! objects instead of 35000.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;

use numalab_algo::page::VirtAddr;
use numalab_algo::rng::Rng;
use numalab_algo::vmalloc::test_grid;
use numalab_algo::vmalloc::test_scale::loops_per_cpu;
use numalab_algo::vmalloc::{Scope, VmError, PAGE_SIZE};

use super::instance::{AreaKind, Vmalloc};
use super::{backing, map};

const P: u64 = PAGE_SIZE;

/// What a case is told: its loop count (`test_loop_count`), the pages of fix_size_alloc_test's
/// areas and of vm_map_ram_test's mapping (`nr_pages`, at least 1), and what runs before
/// each vmalloc and vm_map_ram of a case (`may_sleep`): Linux's may sleep there (cond_resched
/// while the pages are allocated); numalab has no tick, so the callers pass
/// `rcu::quiescent_point` (mm sits below rcu), or a CPU looping in a case would hold up the
/// grace period another CPU's kvfree_rcu test waits for.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub loops: u64,
    pub fix_size_pages: u64,
    pub map_pages: u64,
    pub may_sleep: fn(),
}

/// A case: the instance, its parameters, the worker's generator.
pub type CaseFn = fn(&Vmalloc, &Params, &mut Rng) -> Outcome;

/// The case of test_vmalloc.c's table entry `index` (test_grid::TESTS), None for the two
/// kvfree_rcu tests: they use RCU, a layer above mm, and live in kernel/src/kfree_rcu
/// (`kfree_rcu::vmalloc_cases`, which the bench and the KTAP tests add).
pub fn by_index(index: usize) -> Option<CaseFn> {
    let f: CaseFn = match index {
        0 => fix_size_alloc_test,
        1 => full_fit_alloc_test,
        2 => long_busy_list_alloc_test,
        3 => random_size_alloc_test,
        4 => fix_align_alloc_test,
        5 => random_size_align_alloc_test,
        6 => align_shift_alloc_test,
        7 => pcpu_alloc_test,
        10 => vm_map_ram_test,
        _ => return None,
    };
    Some(f)
}

/// The generator of a test_vmalloc.c case on `cpu` (seeded per CPU).
pub fn cpu_rng(cpu: usize) -> Rng {
    Rng::new(test_grid::worker_seed(cpu as u64))
}

/// How a case ended: XFail is the failure Linux expects (align_shift_alloc_test's first
/// alignment the range cannot give), which test_vmalloc.c counts as `failed`.
pub enum Outcome {
    Pass,
    Fail(String),
    XFail,
}

/// Writes `val` at `addr`.
///
/// # Safety
/// `addr` is inside a live vmalloc/vmap area owned by the caller.
pub unsafe fn poke(addr: u64, val: u8) {
    // SAFETY: per the contract the byte is mapped, writable and ours.
    unsafe { core::ptr::write_volatile(addr as *mut u8, val) }
}

#[track_caller]
pub fn va(v: &Vmalloc, size: u64, align: u64) -> Result<u64, VmError> {
    v.alloc(size, align, None, false, Location::caller())
        .map(VirtAddr::as_u64)
}

/// vmalloc as a case does it: `p.may_sleep` first.
#[track_caller]
pub fn case_va(p: &Params, v: &Vmalloc, size: u64, align: u64) -> Result<u64, VmError> {
    (p.may_sleep)();
    va(v, size, align)
}

pub fn free(v: &Vmalloc, addr: u64) -> Result<(), String> {
    v.free(VirtAddr::new(addr), AreaKind::Vmalloc)
        .map_err(|b| format!("vfree({:#x}): {}", b.addr, b.reason()))
}

macro_rules! tryo {
    ($e:expr) => {
        match $e {
            Ok(x) => x,
            Err(e) => return Outcome::Fail(format!("{}:{}: {:?}", file!(), line!(), e)),
        }
    };
}

pub fn fix_size_alloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    for _ in 0..p.loops {
        let a = tryo!(case_va(p, v, p.fix_size_pages.max(1) * P, P));
        // SAFETY: a is a live area of at least one page that we own.
        unsafe { poke(a, 0) };
        tryo!(free(v, a));
    }
    Outcome::Pass
}

pub fn full_fit_alloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    // test_vmalloc.c's junk list, fls(CPUs) * 64 areas per CPU, spread like the loops
    // beyond 8 CPUs (test_scale.rs).
    let cpus = backing::nr_cpus();
    let fls = u64::from(usize::BITS - cpus.leading_zeros());
    let junk_length = loops_per_cpu(fls * 64, cpus as u64) as usize;
    let mut ptr = Vec::with_capacity(junk_length);
    let mut junk = Vec::with_capacity(junk_length);
    for _ in 0..junk_length {
        ptr.push(tryo!(case_va(p, v, P, P)));
        junk.push(tryo!(case_va(p, v, P, P)));
    }
    for j in junk {
        tryo!(free(v, j));
    }
    for _ in 0..p.loops {
        let t = tryo!(case_va(p, v, P, P));
        // SAFETY: t is a live area we own.
        unsafe { poke(t, 0) };
        tryo!(free(v, t));
    }
    for p in ptr {
        tryo!(free(v, p));
    }
    Outcome::Pass
}

pub fn long_busy_list_alloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    // 500 busy areas per CPU, spread like the loops beyond 8 CPUs (test_scale.rs).
    let busy_areas = loops_per_cpu(500, backing::nr_cpus() as u64);
    let mut busy = Vec::with_capacity(busy_areas as usize);
    for _ in 0..busy_areas {
        busy.push(tryo!(case_va(p, v, P, P)));
    }
    for _ in 0..p.loops {
        let t = tryo!(case_va(p, v, P, P));
        // SAFETY: t is a live area we own.
        unsafe { poke(t, 0) };
        tryo!(free(v, t));
    }
    for p in busy {
        tryo!(free(v, p));
    }
    Outcome::Pass
}

pub fn random_size_alloc_test(v: &Vmalloc, p: &Params, rng: &mut Rng) -> Outcome {
    for _ in 0..p.loops {
        let n = rng.next_u64() % 100 + 1;
        let p = tryo!(case_va(p, v, n * P, P));
        // SAFETY: p is a live n-page area we own; we touch its first and last byte.
        unsafe {
            poke(p, 1);
            poke(p + n * P - 1, 1);
        }
        tryo!(free(v, p));
    }
    Outcome::Pass
}

pub fn fix_align_alloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    // THREAD_ALIGN << 1 on x86_64 (16 KiB stacks).
    let align = 32 * 1024;
    for _ in 0..p.loops {
        let p = tryo!(case_va(p, v, 5 * P, align));
        if p % align != 0 {
            return Outcome::Fail(format!("{:#x} not aligned to {:#x}", p, align));
        }
        tryo!(free(v, p));
    }
    Outcome::Pass
}

pub fn random_size_align_alloc_test(v: &Vmalloc, p: &Params, rng: &mut Rng) -> Outcome {
    for _ in 0..p.loops {
        let rnd = rng.next_u64();
        let align = 1u64 << (rnd % 20);
        let size = ((rnd >> 8) % 10 + 1) * P;
        let p = tryo!(case_va(p, v, size, align));
        if p % align != 0 {
            return Outcome::Fail(format!("{:#x} not aligned to {:#x}", p, align));
        }
        tryo!(free(v, p));
    }
    Outcome::Pass
}

/// As in Linux, alignments up to 2^63 are asked for; the first one the range cannot satisfy
/// fails, which is the expected failure (xfail). Any other error is a real failure.
pub fn align_shift_alloc_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    for i in 0..64 {
        let align = 1u64 << i;
        match case_va(p, v, P, align) {
            Ok(p) => tryo!(free(v, p)),
            Err(VmError::TooLarge(_)) | Err(VmError::Exhausted) => return Outcome::XFail,
            Err(e) => return Outcome::Fail(format!("align {:#x}: {:?}", align, e)),
        }
    }
    Outcome::Pass
}

pub fn pcpu_alloc_test(v: &Vmalloc, p: &Params, rng: &mut Rng) -> Outcome {
    // 200 areas per CPU, spread like the loops beyond 8 CPUs (test_scale.rs).
    let areas = loops_per_cpu(200, backing::nr_cpus() as u64);
    let mut objs = Vec::with_capacity(areas as usize);
    for _ in 0..areas {
        let rnd = rng.next_u64();
        let size = rnd % P + 1;
        let align = 1u64 << ((rnd >> 16) % 11 + 1);
        let p = tryo!(case_va(p, v, size, align));
        // SAFETY: p is a live area of at least `size` bytes we own.
        unsafe { poke(p + size - 1, 0xa5) };
        objs.push(p);
    }
    for p in objs {
        tryo!(free(v, p));
    }
    Outcome::Pass
}

pub fn vm_map_ram_test(v: &Vmalloc, p: &Params, _: &mut Rng) -> Outcome {
    let nr = p.map_pages.max(1) as usize;
    let mut pages = Vec::with_capacity(nr);
    for _ in 0..nr {
        match backing::alloc_page(backing::this_mem_node(), true) {
            Some((phys, _)) => pages.push(phys),
            None => break,
        }
    }
    let mut out = Outcome::Pass;
    if pages.len() == nr {
        for _ in 0..p.loops {
            (p.may_sleep)();
            match v.vmap(&pages, Location::caller()) {
                Ok(m) => {
                    // SAFETY: m maps nr of our pages.
                    unsafe { poke((m + (nr as u64 - 1) * P).as_u64(), b'a') };
                    if let Err(b) = v.free(m, AreaKind::Vmap) {
                        out = Outcome::Fail(format!("vunmap({:#x}): {}", m, b.reason()));
                        break;
                    }
                }
                Err(e) => {
                    out = Outcome::Fail(format!("vmap: {:?}", e));
                    break;
                }
            }
        }
    } else {
        out = Outcome::Fail(String::from("no pages for vm_map_ram_test"));
    }
    for phys in pages {
        // SAFETY: the page came from alloc_page above and is no longer mapped.
        unsafe { backing::free_page(phys) };
    }
    out
}

/// Data pages vmalloc holds (pages out of the page allocator minus its page tables).
fn data_pages() -> u64 {
    backing::pages_out() - map::table_pages()
}

/// What a test starts from: vmalloc's own count of data pages, and the frame allocator's
/// free + held bytes per node (`frame::settled_bytes`: its per-CPU lists drained, vmalloc's
/// page tables and SLUB's pages counted as held).
pub struct Before {
    data_pages: u64,
    frame: Vec<u64>,
}

pub fn snapshot() -> Result<Before, String> {
    Ok(Before {
        data_pages: data_pages(),
        frame: crate::mm::frame::settled_bytes()?,
    })
}

/// Purges everything (pools too) and checks that every page and all virtual space are back:
/// vmalloc's own count of pages out, and, what sees a leak below vmalloc (a free the frame
/// allocator refused), every node's free pages in the frame allocator.
pub fn conserved(v: &Vmalloc, before: &Before) -> Result<(), String> {
    v.purge(Scope::All, true);
    for (i, c) in v.node_counts().iter().enumerate() {
        if c.busy_areas + c.lazy_areas + c.pool_areas != 0 {
            return Err(format!("vmap node {} not empty after purge: {:?}", i, c));
        }
    }
    let (free_bytes, blocks, all_free) = v.free_space_state();
    if !all_free {
        return Err(format!(
            "virtual space not all free after purge: {} bytes in {} blocks",
            free_bytes, blocks
        ));
    }
    if v.lazy_pages() != 0 {
        return Err(format!("lazy pages {} after purge", v.lazy_pages()));
    }
    if data_pages() != before.data_pages {
        return Err(format!(
            "pages not conserved: {} data pages held before the case, {} after",
            before.data_pages,
            data_pages()
        ));
    }
    let after = crate::mm::frame::settled_bytes()?;
    for (node, (b, a)) in before.frame.iter().zip(&after).enumerate() {
        if a != b {
            return Err(format!(
                "frame pages not conserved on node {}: {} pages free or held before, {} after",
                node,
                b / P,
                a / P
            ));
        }
    }
    Ok(())
}
