//! KTAP test of `vmalloc.nr_vmalloc` (accounting.rs): the per-node count follows vmalloc and
//! vfree when on and stays put when off, both states in one boot (the knob check).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;

use numalab_algo::vmalloc::{Layout, Policy, PAGE_SIZE};

use super::accounting;
use super::instance::AreaKind;
use super::test_cases::{conserved, snapshot};
use crate::ktest::suites::VMALLOC as SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::{kassert_eq, ktest};

const AREAS: u64 = 8;
const AREA_PAGES: u64 = 16;

fn total() -> u64 {
    accounting::per_node().iter().sum()
}

/// With the counter in state `on`: (pages counted while the areas lived, pages counted after
/// vfree), both relative to before.
fn run(on: bool) -> Result<(u64, u64), String> {
    accounting::set_enabled(on);
    let topo = crate::topology::get();
    let layout = Layout::new(Policy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let v = super::scratch(layout, 1 << 30).ok_or("vmalloc not initialized")?;
    let before = snapshot()?;
    let t0 = total();
    let mut areas = Vec::new();
    for _ in 0..AREAS {
        let a = v
            .alloc(
                AREA_PAGES * PAGE_SIZE,
                PAGE_SIZE,
                None,
                false,
                Location::caller(),
            )
            .map_err(|e| format!("{e:?}"))?;
        areas.push(a);
    }
    let live = total().wrapping_sub(t0);
    for a in areas {
        v.free(a, AreaKind::Vmalloc)
            .map_err(|b| format!("vfree({:#x}): {}", b.addr, b.reason()))?;
    }
    let after = total().wrapping_sub(t0);
    conserved(&v, &before)?;
    Ok((live, after))
}

fn nr_vmalloc(ctx: &Ctx) -> TestResult {
    let was = ctx.opts.get(&crate::options::VMALLOC_NR_VMALLOC);
    let off = run(false);
    let on = run(true);
    accounting::set_enabled(was);
    let (off, on) = (off.map_err(TestError::Fail)?, on.map_err(TestError::Fail)?);
    crate::println!(
        "# vmalloc nr_vmalloc: {} areas of {} pages: counted while live off {} on {}, after vfree off {} on {}; per node now {:?}",
        AREAS,
        AREA_PAGES,
        off.0,
        on.0,
        off.1,
        on.1,
        accounting::per_node()
    );
    kassert_eq!(off, (0, 0), "vmalloc.nr_vmalloc=0 counted pages");
    kassert_eq!(
        on,
        (AREAS * AREA_PAGES, 0),
        "vmalloc.nr_vmalloc=1: live pages counted, and none after vfree"
    );
    Ok(())
}

ktest!(SUITE, Test, nr_vmalloc);
