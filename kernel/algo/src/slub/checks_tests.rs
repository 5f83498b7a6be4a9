//! Host tests of `slub.checks` (checks.rs): what `Linux` lets through on the sheaves free
//! fast path (a free off an object boundary and an immediate double free are cached and
//! handed out again), what it still refuses (an object of another cache, a pointer outside
//! every slab), and that `Full` refuses all four.

use super::fake::{FakeMachine, BASE};
use super::*;
use std::boxed::Box;

fn machine() -> &'static FakeMachine {
    Box::leak(Box::new(FakeMachine::new(&[256], &[0], None)))
}

fn cache(m: &'static FakeMachine, checks: Checks) -> &'static Cache<&'static FakeMachine> {
    let t = Tunables {
        design: Design::Sheaves,
        ..Tunables::default()
    };
    let c = Box::leak(Box::new(
        Cache::new(m, "checks", 64, 0, t, 0x1234_5678, None).unwrap(),
    ));
    c.set_checks(checks);
    c
}

fn errors(c: &Cache<&'static FakeMachine>) -> u64 {
    [
        ErrorKind::DoubleFree,
        ErrorKind::NotObjectStart,
        ErrorKind::WrongCache,
        ErrorKind::NotSlab,
    ]
    .iter()
    .map(|&k| c.error_count(k))
    .sum()
}

#[test]
fn checks_default_to_full() {
    let m = machine();
    FakeMachine::set_cpu(0);
    let t = Tunables {
        design: Design::Sheaves,
        ..Tunables::default()
    };
    let c = Cache::new(m, "checks", 64, 0, t, 1, None).unwrap();
    assert_eq!(c.checks(), Checks::Full);
}

#[test]
fn linux_caches_a_free_off_an_object_boundary_and_hands_it_out() {
    for checks in [Checks::Full, Checks::Linux] {
        let m = machine();
        FakeMachine::set_cpu(0);
        let c = cache(m, checks);
        let a = c.alloc().unwrap();
        c.free(a + 8);
        let next = c.alloc().unwrap();
        match checks {
            Checks::Full => {
                assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
                assert_ne!(next, a + 8, "full: the bad pointer is never cached");
            }
            Checks::Linux => {
                assert_eq!(errors(c), 0, "linux: nothing reported");
                assert_eq!(next, a + 8, "linux: the pointer went into the sheaf");
            }
        }
    }
}

#[test]
fn linux_caches_an_immediate_double_free_and_hands_the_object_out_twice() {
    for checks in [Checks::Full, Checks::Linux] {
        let m = machine();
        FakeMachine::set_cpu(0);
        let c = cache(m, checks);
        let a = c.alloc().unwrap();
        c.free(a);
        c.free(a);
        let first = c.alloc().unwrap();
        let second = c.alloc().unwrap();
        match checks {
            Checks::Full => {
                assert_eq!(c.error_count(ErrorKind::DoubleFree), 1);
                assert_eq!(first, a);
                assert_ne!(second, a, "full: the object is cached once");
            }
            Checks::Linux => {
                assert_eq!(errors(c), 0, "linux: nothing reported");
                assert_eq!(
                    (first, second),
                    (a, a),
                    "linux: one object handed out twice"
                );
            }
        }
    }
}

#[test]
fn linux_still_refuses_another_caches_object_and_a_pointer_outside_every_slab() {
    let m = machine();
    FakeMachine::set_cpu(0);
    let c = cache(m, Checks::Linux);
    let other = cache(m, Checks::Linux);
    let a = other.alloc().unwrap();
    // cache_from_obj under CONFIG_SLAB_FREELIST_HARDENED: "Wrong slab cache".
    c.free(a);
    assert_eq!(c.error_count(ErrorKind::WrongCache), 1);
    // virt_to_cache: "Object is not a Slab page".
    c.free(BASE - 4096);
    assert_eq!(c.error_count(ErrorKind::NotSlab), 1);
    assert_eq!(c.stats().get(Stat::FreeCpuSheaf), 0, "neither was cached");
    other.free(a);
}

#[test]
fn the_slab_path_checks_in_both_modes() {
    // A misaligned pointer cached under linux is found when its sheaf is flushed to the
    // slabs (the slab path's check), and dropped there.
    let m = machine();
    FakeMachine::set_cpu(0);
    let c = cache(m, Checks::Linux);
    let a = c.alloc().unwrap();
    c.free(a + 8);
    c.flush_all();
    assert_eq!(c.error_count(ErrorKind::NotObjectStart), 1);
}
