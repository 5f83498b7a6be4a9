//! KTAP tests of vmalloc: the cases of Linux's lib/test_vmalloc.c (test_cases.rs), each run
//! on every CPU at once under all three designs of one boot, with a `Summary:` line per
//! design and a conservation check after each; plus bad input, lazy purge, exhaustion, the
//! fault-on-freed-area probe and the vmallocinfo dump.
//!
//! `vmalloc.test_loops` replaces test_loop_count (1000000); fix_size_alloc_test maps 3 pages
//! (test_vmalloc.c before its `nr_pages` parameter) and vm_map_ram_test 16 pages here; the
//! `test_vmalloc` experiment runs the same cases with Linux's parameters
//! (kernel/src/bench/test_vmalloc.rs).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::vmalloc::test_scale::loops_per_cpu;

use numalab_algo::options::Options;
use numalab_algo::page::{PhysAddr, VirtAddr};
use numalab_algo::vmalloc::{FreeFault, Layout, Policy, Scope, VmError, PAGE_SIZE};

use super::instance::Vmalloc;
use super::test_cases::*;
use super::{backing, map};
use crate::kfree_rcu::vmalloc_cases::{
    kvfree_rcu_1_arg_vmalloc_test, kvfree_rcu_2_arg_vmalloc_test, RcuSnapshot,
};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::{kassert, kassert_eq, ktest};

use crate::ktest::suites::VMALLOC as SUITE;

const P: u64 = PAGE_SIZE;

/// Counted events of one design, for the line after each Summary.
struct Events {
    purges: u64,
    purge_waits: u64,
    shootdowns: u64,
    free_lock: crate::sync::LockStatsSnapshot,
    purge_lock: crate::sync::LockStatsSnapshot,
}

impl Events {
    fn of(v: &Vmalloc) -> Events {
        Events {
            purges: v.counters.purges.get(),
            purge_waits: v.counters.purge_waits.get(),
            shootdowns: v.counters.shootdowns.get(),
            free_lock: v.global_lock_stats(),
            purge_lock: v.purge_lock_stats(),
        }
    }

    fn since(&self, before: &Events) -> Events {
        Events {
            purges: self.purges - before.purges,
            purge_waits: self.purge_waits - before.purge_waits,
            shootdowns: self.shootdowns - before.shootdowns,
            free_lock: self.free_lock.since(&before.free_lock),
            purge_lock: self.purge_lock.since(&before.purge_lock),
        }
    }
}

/// Runs `case` on every CPU at once under each design, prints a Summary line per design
/// (test_vmalloc.c's format) and checks conservation.
fn run_case(name: &str, case: CaseFn, opts: &Options) -> TestResult {
    // Beyond 8 CPUs the same total work is spread over the CPUs (test_scale.rs): 255 vCPUs
    // on 2 host cores otherwise take tens of minutes.
    let cpus = crate::topology::get().nr_cpus() as u64;
    let loops = loops_per_cpu(opts.get(&crate::options::VMALLOC_TEST_LOOPS), cpus);
    let mut failures = Vec::new();
    for p in Policy::ALL {
        let Some(v) = super::design(p) else {
            return Err(TestError::Skip(String::from("vmalloc not initialized")));
        };
        let before = snapshot()?;
        let events_before = Events::of(v);
        let rcu_before = RcuSnapshot::take();
        let (passed, failed, xfailed, ticks) = (
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        );
        let first_error = spin::Mutex::new(None::<String>);
        backing::on_each_cpu(&|cpu| {
            let mut rng = cpu_rng(cpu.index());
            let t0 = crate::arch::rdtsc();
            let params = Params {
                loops,
                fix_size_pages: 3,
                map_pages: 16,
                may_sleep: crate::rcu::quiescent_point,
            };
            let out = case(v, &params, &mut rng);
            ticks.fetch_add(crate::arch::rdtsc() - t0, Relaxed);
            match out {
                Outcome::Pass => passed.fetch_add(1, Relaxed),
                Outcome::XFail => xfailed.fetch_add(1, Relaxed),
                Outcome::Fail(e) => {
                    first_error
                        .lock()
                        .get_or_insert(format!("cpu {}: {}", cpu.0, e));
                    failed.fetch_add(1, Relaxed)
                }
            };
        });
        let runs = (passed.load(Relaxed) + failed.load(Relaxed) + xfailed.load(Relaxed)).max(1);
        // As test_vmalloc.c: the average time of one thread's whole run, in usec (TCG time:
        // a trend only); TSC cycles before the TSC is calibrated.
        let avg_ticks = ticks.load(Relaxed) / runs;
        let avg = match backing::tsc_hz() {
            Some(hz) => format!("{} usec", avg_ticks as u128 * 1_000_000 / hz as u128),
            None => format!("{} cycles", avg_ticks),
        };
        crate::println!(
            "# vmalloc[{}] Summary: {} passed: {} failed: {} xfailed: {} repeat: 1 loops: {} avg: {}",
            p.name(),
            name,
            passed.load(Relaxed),
            failed.load(Relaxed),
            xfailed.load(Relaxed),
            loops,
            avg
        );
        // What the case cost in counted events (robust under TCG, unlike its time).
        let e = Events::of(v).since(&events_before);
        crate::println!(
            "# vmalloc[{}] {}: purges {} tlb_shootdowns {} free_space_lock acquisitions {} contended {} spins {} purge_lock contended {} purge_waits {}",
            p.name(),
            name,
            e.purges,
            e.shootdowns,
            e.free_lock.acquisitions,
            e.free_lock.contended,
            e.free_lock.spins,
            e.purge_lock.contended,
            e.purge_waits
        );
        if let Some(e) = first_error.lock().take() {
            failures.push(format!("{}: {}", p.name(), e));
        }
        if name.starts_with("kvfree_rcu") {
            if let Err(e) = kvfree_rcu_settled(p, name, &rcu_before) {
                failures.push(format!("{}: {}", p.name(), e));
            }
        }
        if let Err(e) = conserved(v, &before) {
            failures.push(format!("{}: {}", p.name(), e));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(failures.join("; ")))
    }
}

/// After a kvfree_rcu case: `kvfree_rcu_barrier`, then a line of what went through RCU (this
/// design's areas queued, vfree'd after a grace period, kfree_rcu's callbacks, RCU's grace
/// periods and callbacks run); every area queued must be vfree'd and nothing left waiting.
fn kvfree_rcu_settled(p: Policy, name: &str, before: &RcuSnapshot) -> Result<(), String> {
    crate::kfree_rcu::kvfree_rcu_barrier();
    let d = before.since();
    let line = format!(
        "queued {} vfreed {} waiting {} kfree_rcu_callbacks {} grace_periods {} cbs_invoked {}",
        d.queued, d.vfreed, d.waiting, d.kfree_rcu_callbacks, d.grace_periods, d.cbs_invoked
    );
    crate::println!("# vmalloc[{}] {} kvfree_rcu: {}", p.name(), name, line);
    if !d.settled() {
        return Err(format!("kvfree_rcu: not every area vfree'd: {line}"));
    }
    Ok(())
}

/// Every bad input is an error value; bad frees are reported, counted and ignored.
fn bad_input(_ctx: &Ctx) -> TestResult {
    for p in Policy::ALL {
        let Some(v) = super::design(p) else {
            return Err(TestError::Skip(String::from("vmalloc not initialized")));
        };
        let before = snapshot()?;
        kassert_eq!(va(v, 0, P), Err(VmError::ZeroSize));
        kassert_eq!(va(v, 1 << 40, P), Err(VmError::TooLarge(1 << 40)));
        kassert_eq!(va(v, P, 3 * P), Err(VmError::BadAlign(3 * P)));
        kassert_eq!(va(v, P, 1 << 40), Err(VmError::TooLarge(2 * P)));
        kassert_eq!(v.vmap(&[], Location::caller()), Err(VmError::BadPages));
        kassert_eq!(
            v.vmap(&[PhysAddr::new(123)], Location::caller()),
            Err(VmError::BadPages)
        );
        let a = va(v, 3 * P, P).map_err(|e| format!("{:?}", e))?;
        // The four bad vfree/vunmap calls below are refused with one warning each (on purpose).
        crate::ktest::expect_warnings(4, super::BAD_FREE_WARNING);
        let bad_before = v.counters.bad_frees.get();
        let inside = super::vfree(VirtAddr::new(a + P));
        kassert_eq!(
            inside.map_err(|b| b.fault),
            Err(FreeFault::InsideArea { start: a })
        );
        let never = super::vfree(VirtAddr::new(a + (64 << 20)));
        kassert_eq!(never.map_err(|b| b.fault), Err(FreeFault::NotAllocated));
        let kind = super::vunmap(VirtAddr::new(a));
        kassert!(
            kind.is_err_and(|b| b.wrong_kind),
            "vunmap of a vmalloc area accepted"
        );
        kassert!(super::vfree(VirtAddr::new(a)).is_ok());
        let twice = super::vfree(VirtAddr::new(a));
        kassert_eq!(
            twice.map_err(|b| b.fault),
            Err(FreeFault::AlreadyFreed { start: a })
        );
        kassert_eq!(v.counters.bad_frees.get() - bad_before, 4);
        conserved(v, &before)?;
    }
    let outside = super::bad_outside();
    crate::ktest::expect_warnings(1, super::BAD_FREE_WARNING);
    kassert!(super::vfree(VirtAddr::new(0x1234)).is_err());
    kassert_eq!(super::bad_outside(), outside + 1);
    Ok(())
}

/// With a tiny lazy threshold, frees trigger purges, each with exactly one shootdown; the
/// pools then serve allocations (cpu, numa) and everything is conserved.
fn lazy_purge_shootdown(ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    for p in Policy::ALL {
        let layout = Layout::new(p, topo.nr_cpus(), topo.nr_nodes(), 32);
        let Some(v) = super::scratch(layout, 1 << 30) else {
            return Err(TestError::Skip(String::from("vmalloc not initialized")));
        };
        let before = snapshot()?;
        for _ in 0..ctx.opts.get(&crate::options::VMALLOC_TEST_LOOPS).max(100) {
            let a = va(&v, P, P).map_err(|e| format!("{:?}", e))?;
            free(&v, a)?;
        }
        let purges = v.counters.purges.get();
        kassert!(purges > 0, "{}: no purge with lazy_max_pages 32", p.name());
        kassert_eq!(
            v.counters.shootdowns.get(),
            purges,
            "one shootdown per purge"
        );
        if p != Policy::Global {
            kassert!(
                v.counters.pool_allocs.get() > 0,
                "{}: pools never used",
                p.name()
            );
        }
        kassert!(v.global_lock_stats().acquisitions > 0);
        conserved(&v, &before)?;
    }
    Ok(())
}

/// A full range fails with Exhausted only after a purge gave back what could be given.
fn exhaustion(_ctx: &Ctx) -> TestResult {
    let topo = crate::topology::get();
    let layout = Layout::new(Policy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let Some(v) = super::scratch(layout, 64 * P) else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let before = snapshot()?;
    let mut got = Vec::new();
    while let Ok(a) = va(&v, 3 * P, P) {
        got.push(a);
    }
    kassert_eq!(got.len(), 16, "64 pages hold 16 areas of 3 pages + guard");
    kassert_eq!(
        v.counters.purges.get(),
        1,
        "the failed allocation purged once"
    );
    kassert_eq!(va(&v, P, P), Err(VmError::Exhausted));
    kassert_eq!(v.counters.purges.get(), 2);
    for a in got.drain(..) {
        free(&v, a)?;
    }
    kassert_eq!(
        v.counters.purges.get(),
        2,
        "below the lazy threshold: no purge yet"
    );
    let big = va(&v, 63 * P, P).map_err(|e| format!("after frees: {:?}", e))?;
    kassert_eq!(
        v.counters.purges.get(),
        3,
        "a lazy range is reclaimed by a purge"
    );
    free(&v, big)?;
    conserved(&v, &before)?;
    Ok(())
}

/// vzalloc, and where the call was (the owner vmalloc records).
#[track_caller]
fn vzalloc_here(size_bytes: usize) -> (Result<VirtAddr, VmError>, &'static Location<'static>) {
    (super::vzalloc(size_bytes), Location::caller())
}

/// An access to a freed and purged area faults; the fault is caught by the probe's fixup
/// and reported with the area and its former owner. The guard page faults too.
fn fault_on_freed_area(_ctx: &Ctx) -> TestResult {
    let Some(v) = super::active() else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let (a, site) = vzalloc_here(2 * P as usize);
    let a = a.map_err(|e| format!("{:?}", e))?.as_u64();
    // SAFETY: a is a live 2-page area we own.
    unsafe { poke(a + 8, 42) };
    kassert_eq!(super::probe_read(a + 8).ok(), Some(42));
    kassert!(
        super::probe_read(a + 2 * P).is_err(),
        "guard page is mapped"
    );
    let fixed = crate::arch::fixup::fixed_count();
    super::vfree(VirtAddr::new(a)).map_err(|b| String::from(b.reason()))?;
    v.purge(Scope::All, false);
    match super::probe_read(a + 8) {
        Ok(val) => return Err(TestError::Fail(format!("read {} from freed area", val))),
        Err(None) => return Err(TestError::Fail(String::from("fault with no former owner"))),
        Err(Some((start, end, owner))) => {
            crate::println!(
                "# vmalloc: caught fault at {:#x} in freed area {:#x}-{:#x}, former owner {}:{}",
                a + 8,
                start,
                end,
                owner.file(),
                owner.line()
            );
            kassert_eq!(start, a);
            kassert_eq!((owner.file(), owner.line()), (site.file(), site.line()));
        }
    }
    kassert_eq!(crate::arch::fixup::fixed_count(), fixed + 1);
    Ok(())
}

/// The kernel-wide API (the design chosen by `vmalloc.nodes=`): vmalloc, vmalloc_node,
/// vzalloc, vmap, vunmap, vfree.
fn api(_ctx: &Ctx) -> TestResult {
    let Some(v) = super::active() else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let before = snapshot()?;
    let a = super::vmalloc(10_000).map_err(|e| format!("{:?}", e))?;
    let z = super::vzalloc(2 * P as usize).map_err(|e| format!("{:?}", e))?;
    let n = super::vmalloc_node(P as usize, crate::topology::NodeId(0))
        .map_err(|e| format!("{:?}", e))?;
    // SAFETY: a is a live area of 10000 bytes (3 pages) that we own.
    unsafe { poke(a.as_u64() + 9_999, 7) };
    kassert_eq!(
        super::probe_read(a.as_u64() + 9_992).ok().map(|w| w >> 56),
        Some(7)
    );
    for off in (0..2 * P).step_by(512) {
        kassert_eq!(
            super::probe_read(z.as_u64() + off).ok(),
            Some(0),
            "vzalloc not zero at {}",
            off
        );
    }
    let pages: Vec<PhysAddr> = (0..3).filter_map(|i| map::translate(a + i * P)).collect();
    kassert_eq!(pages.len(), 3);
    let m = super::vmap(&pages).map_err(|e| format!("{:?}", e))?;
    kassert_eq!(
        super::probe_read(m.as_u64() + 9_992).ok().map(|w| w >> 56),
        Some(7),
        "vmap aliases the pages"
    );
    crate::ktest::expect_warnings(1, super::BAD_FREE_WARNING);
    kassert!(super::vfree(m).is_err(), "vfree of a vmap area accepted");
    kassert!(super::vunmap(m).is_ok());
    for x in [a, z, n] {
        kassert!(super::vfree(x).is_ok());
    }
    conserved(v, &before)?;
    kassert!(v.counters.allocs.get() >= 4);
    let _: Option<*mut u8> = Some(a.as_mut_ptr());
    let _: super::VmallocError = VmError::NoMemory;
    Ok(())
}

/// Owned areas (`VmArea`): their bytes are usable, a vmap alias of a vmalloc area sees the
/// same pages, dropping frees (vfree or vunmap as the area's kind says), and every data page
/// comes back.
fn owned_areas(_ctx: &Ctx) -> TestResult {
    let Some(v) = super::active() else {
        return Err(TestError::Skip(String::from("vmalloc not initialized")));
    };
    let before = snapshot()?;
    let frees_before = v.counters.frees.get();
    let bad_before = v.counters.bad_frees.get();
    let mut a = super::VmArea::vmalloc(3 * P as usize).map_err(|e| format!("{:?}", e))?;
    a.bytes_mut()
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = i as u8);
    let z = super::VmArea::vzalloc(P as usize).map_err(|e| format!("{:?}", e))?;
    kassert!(z.bytes().iter().all(|&b| b == 0), "vzalloc area not zero");
    let n = super::VmArea::vmalloc_node(P as usize, crate::topology::NodeId(0))
        .map_err(|e| format!("{:?}", e))?;
    kassert_eq!(n.size_bytes(), P as usize);
    let pages: Vec<PhysAddr> = (0..3)
        .filter_map(|i| map::translate(a.addr() + i * P))
        .collect();
    kassert_eq!(pages.len(), 3);
    let m = super::VmArea::vmap(&pages).map_err(|e| format!("{:?}", e))?;
    kassert_eq!(
        m.bytes()[P as usize + 5],
        (P as usize + 5) as u8,
        "vmap aliases"
    );
    drop(m);
    let (addr, size, kind) = z.into_raw();
    // SAFETY: the triple came from into_raw just above; nothing else frees it.
    let z = unsafe { super::VmArea::from_raw(addr, size, kind) };
    drop((a, z, n));
    kassert_eq!(v.counters.frees.get() - frees_before, 4);
    kassert_eq!(v.counters.bad_frees.get(), bad_before);
    Ok(conserved(v, &before)?)
}

/// The dump has the format of /proc/vmallocinfo with per-NUMA-node page counts; the
/// counters are printed.
fn vmallocinfo(_ctx: &Ctx) -> TestResult {
    for p in Policy::ALL {
        let Some(v) = super::design(p) else {
            return Err(TestError::Skip(String::from("vmalloc not initialized")));
        };
        let node = backing::this_mem_node();
        let a = v
            .alloc(3 * P, P, Some(node), false, Location::caller())
            .map_err(|e| format!("{:?}", e))?;
        let lines = super::vmallocinfo(v);
        for l in &lines {
            crate::println!("{}", l);
        }
        let prefix = format!("{:#x}-{:#x} {:>7} ", a, a + 4 * P, 4 * P);
        let line = lines.iter().find(|l| l.starts_with(&prefix));
        kassert!(line.is_some(), "no vmallocinfo line starting {:?}", prefix);
        let line = line.map(String::as_str).unwrap_or("");
        kassert!(line.contains(" pages=3 vmalloc N"), "{}", line);
        let total: u64 = line
            .split(' ')
            .filter_map(|w| w.strip_prefix('N')?.split_once('=')?.1.parse::<u64>().ok())
            .sum();
        kassert_eq!(total, 3, "{}", line);
        free(v, a.as_u64())?;
        v.purge(Scope::All, true);
        super::print_counters(v);
    }
    Ok(())
}

/// Registers a test_vmalloc.c case: it runs under all three designs (`run_case`).
macro_rules! vmalloc_case {
    ($case:ident) => {
        ktest!(SUITE, Test, stringify!($case), {
            fn run(ctx: &Ctx) -> TestResult {
                run_case(stringify!($case), $case, ctx.opts)
            }
            run
        });
    };
}

// The test_vmalloc.c cases, then the other tests (one registration a line: source order).
vmalloc_case!(fix_size_alloc_test);
vmalloc_case!(full_fit_alloc_test);
vmalloc_case!(long_busy_list_alloc_test);
vmalloc_case!(random_size_alloc_test);
vmalloc_case!(fix_align_alloc_test);
vmalloc_case!(random_size_align_alloc_test);
vmalloc_case!(align_shift_alloc_test);
vmalloc_case!(pcpu_alloc_test);
vmalloc_case!(kvfree_rcu_1_arg_vmalloc_test);
vmalloc_case!(kvfree_rcu_2_arg_vmalloc_test);
vmalloc_case!(vm_map_ram_test);
ktest!(SUITE, Test, bad_input);
ktest!(SUITE, Test, api);
ktest!(SUITE, Test, owned_areas);
ktest!(SUITE, Test, lazy_purge_shootdown);
ktest!(SUITE, Test, exhaustion);
ktest!(SUITE, Test, fault_on_freed_area);
ktest!(SUITE, Test, vmallocinfo);
ktest!(
    SUITE,
    Test,
    "vmap_nodes_on_their_node",
    super::placement_tests::vmap_nodes_on_their_node
);
