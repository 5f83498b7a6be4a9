//! Model check (shuttle) of the grace-period protocol: the real `tree`, `segcblist`, `queue`
//! and `qs_point` over shuttle mutexes, on three CPUs in two leaves (CPUs 0 and 1 on node 0,
//! CPU 2 on node 1).
//!
//! CPU 0 is a writer: it replaces the object behind a shared pointer three times, hands each old one
//! to `queue` (call_rcu), and waits as `rcu_barrier` does: quiescent points, the idle CPUs
//! forced (`force_qs`), its done callbacks invoked (they mark the object freed). CPUs 1 and 2
//! are readers: four read-side sections each, a timer tick (the glue's rule, `tick_may_report`)
//! before, inside and after them, then their idle loop (out of idle, a quiescent point, their
//! own callbacks, back to idle). CPU 2 also frees an object of its own through `queue`.
//!
//! Checked: a reader never finds the object it loaded in its section freed (the RCU
//! guarantee); at the end every queued callback ran once. Mutations that must be caught
//! (`super::Mutation`): the snapshot one grace period short, `advance` one segment too far, a
//! leaf done one quiescent state early, a quiescent state reported inside a reader, a lost
//! callback.

use super::segcblist::{CbQueue, SegCbList};
use super::tree::{self, Geometry, Nodes, RcuNode};
use super::{kick, qs_point, queue, set_mutation, tick_may_report, Mutation};
use crate::model_check::{self, point};
use shuttle::sync::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::vec::Vec;

const CPUS: usize = 3;
/// Times the writer replaces the object behind the shared pointer.
const REPLACEMENTS: usize = 3;
/// Objects: 0..=REPLACEMENTS behind the shared pointer in turn, then CPU 2's own.
const OBJECTS: usize = REPLACEMENTS + 2;
/// Callbacks queued in a run.
const CALLBACKS: u32 = REPLACEMENTS as u32 + 1;
/// Read-side sections of each reader.
const SECTIONS: usize = 4;
/// Passes of a wait loop before it gives up (a correct run needs a few).
const WAIT_PASSES: usize = 150;

/// Schedules (of unmutated runs) in which the object a reader held was replaced and handed to
/// call_rcu while its section was open: the case the guarantee is about must happen.
static OVERLAPS: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct Fifo(VecDeque<usize>);

impl CbQueue for Fifo {
    type Item = usize;
    fn push(&mut self, item: usize) {
        self.0.push_back(item);
    }
    fn append(&mut self, other: &mut Self) {
        self.0.append(&mut other.0);
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

struct Locked(Vec<Mutex<RcuNode>>);

impl Nodes for Locked {
    fn with<R>(&self, idx: usize, f: impl FnOnce(&mut RcuNode) -> R) -> R {
        point();
        let mut g = self.0[idx].lock().unwrap();
        f(&mut g)
    }
}

struct Model {
    geo: Geometry,
    nodes: Locked,
    lists: Vec<Mutex<SegCbList<Fifo>>>,
    nesting: Vec<AtomicU32>,
    idle: Vec<AtomicBool>,
    ptr: AtomicUsize,
    freed: Vec<AtomicBool>,
    invoked: AtomicU32,
    clock: AtomicU64,
}

impl Model {
    fn new() -> Model {
        let geo = Geometry::new(&[(0, 0), (1, 0), (2, 1)], 0).unwrap();
        let nodes = Locked(geo.initial_nodes().into_iter().map(Mutex::new).collect());
        Model {
            geo,
            nodes,
            lists: (0..CPUS)
                .map(|_| Mutex::new(SegCbList::default()))
                .collect(),
            nesting: (0..CPUS).map(|_| AtomicU32::new(0)).collect(),
            idle: (0..CPUS).map(|_| AtomicBool::new(false)).collect(),
            ptr: AtomicUsize::new(0),
            freed: (0..OBJECTS).map(|_| AtomicBool::new(false)).collect(),
            invoked: AtomicU32::new(0),
            clock: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.clock.fetch_add(1, SeqCst)
    }

    /// call_rcu(free `obj`) on `cpu`.
    fn call_rcu(&self, cpu: usize, obj: usize) {
        let mut l = self.lists[cpu].lock().unwrap();
        queue(&self.geo, &self.nodes, &mut l, obj, self.now(), |c| {
            self.in_eqs(c)
        });
    }

    fn in_eqs(&self, cpu: u16) -> bool {
        self.idle[cpu as usize].load(SeqCst)
    }

    /// A report of `cpu`'s quiescent state now, and the idle CPUs forced if it started the
    /// next grace period.
    fn report(&self, cpu: usize) {
        let now = self.now();
        let r = tree::report_cpu(&self.geo, &self.nodes, cpu as u16, now);
        kick(&self.geo, &self.nodes, r, now, |c| self.in_eqs(c));
    }

    /// The timer tick on `cpu`: interrupts off, atomic with respect to the CPU's own code.
    fn tick(&self, cpu: usize) {
        if tick_may_report(self.nesting[cpu].load(SeqCst)) {
            self.report(cpu);
        }
    }

    /// Idle entry (before hlt): the flag first, then a report, so that a grace period that
    /// started in between is either forced by its starter or reported here.
    fn enter_idle(&self, cpu: usize) {
        self.idle[cpu].store(true, SeqCst);
        self.report(cpu);
    }

    /// A quiescent point on `cpu`: report, advance, invoke the done callbacks (free).
    fn quiescent_point(&self, cpu: usize) {
        let done = {
            let mut l = self.lists[cpu].lock().unwrap();
            let now = self.now();
            qs_point(&self.geo, &self.nodes, cpu as u16, &mut l, now, |c| {
                self.in_eqs(c)
            })
            .1
        };
        for obj in done.0 {
            assert!(
                !self.freed[obj].swap(true, SeqCst),
                "object {obj} freed twice"
            );
            self.invoked.fetch_add(1, SeqCst);
        }
    }

    fn read_section(&self, cpu: usize) {
        self.tick(cpu);
        self.nesting[cpu].fetch_add(1, SeqCst);
        self.tick(cpu);
        let p = self.ptr.load(SeqCst);
        for depth in 0..3 {
            point();
            // The middle pass nests a section, as rcu_read_lock inside rcu_read_lock.
            if depth == 1 {
                self.nesting[cpu].fetch_add(1, SeqCst);
            }
            self.tick(cpu);
            assert!(
                !self.freed[p].load(SeqCst),
                "use after free: CPU {cpu} reads object {p} that a callback freed inside its section"
            );
            if depth == 1 {
                self.nesting[cpu].fetch_sub(1, SeqCst);
            }
        }
        if self.ptr.load(SeqCst) != p {
            OVERLAPS.fetch_add(1, SeqCst);
        }
        self.nesting[cpu].fetch_sub(1, SeqCst);
        self.tick(cpu);
    }

    /// Waits (quiescent points, idle CPUs forced) until `pred`, at most WAIT_PASSES passes.
    fn wait(&self, cpu: usize, pred: impl Fn(&Model) -> bool) {
        for _ in 0..WAIT_PASSES {
            if pred(self) {
                return;
            }
            self.quiescent_point(cpu);
            tree::force_qs(&self.geo, &self.nodes, self.now(), |c| {
                self.idle[c as usize].load(SeqCst)
            });
            shuttle::thread::yield_now();
        }
    }

    fn writer(&self) {
        for new in 1..=REPLACEMENTS {
            let old = self.ptr.swap(new, SeqCst);
            self.call_rcu(0, old);
            point();
            self.quiescent_point(0);
        }
        self.wait(0, |m| m.lists[0].lock().unwrap().is_empty());
        self.enter_idle(0);
    }

    fn reader(&self, cpu: usize) {
        for section in 0..SECTIONS {
            self.read_section(cpu);
            if cpu == 2 && section == 0 {
                self.call_rcu(2, OBJECTS - 1);
            }
        }
        // The idle loop: leave idle, a pass, back to idle (hlt).
        for _ in 0..WAIT_PASSES {
            self.idle[cpu].store(false, SeqCst);
            self.quiescent_point(cpu);
            let empty = self.lists[cpu].lock().unwrap().is_empty();
            self.enter_idle(cpu);
            if empty {
                return;
            }
            shuttle::thread::yield_now();
        }
    }
}

fn scenario(mutation: Mutation) {
    set_mutation(mutation);
    let m = Arc::new(Model::new());
    let handles: Vec<_> = (0..CPUS)
        .map(|cpu| {
            let m = m.clone();
            shuttle::thread::spawn(move || {
                set_mutation(mutation);
                if cpu == 0 {
                    m.writer()
                } else {
                    m.reader(cpu)
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let invoked = m.invoked.load(SeqCst);
    assert_eq!(
        invoked, CALLBACKS,
        "callback lost: {CALLBACKS} queued, {invoked} invoked"
    );
}

/// Schedules per scheduler.
const DEFAULT_SCHEDULES: usize = 300;

fn check(mutation: Mutation, iterations: usize, seed: u64) {
    model_check::check(move || scenario(mutation), iterations, seed);
}

#[test]
fn model_rcu_no_callback_before_its_readers_exit() {
    let n = model_check::schedules(DEFAULT_SCHEDULES);
    check(Mutation::None, n, 45);
    let overlaps = OVERLAPS.load(SeqCst);
    eprintln!("model rcu: {overlaps} sections overlapped the removal of their object");
    assert!(
        overlaps as usize > n / 10,
        "only {overlaps} overlapping sections"
    );
}

/// Schedules per scheduler a mutation gets to be caught in: advance-too-far needs a reader
/// whose quiescent state ended the first grace period after it loaded the second object, and
/// the writer's pass in between (seed 45's random schedules find it within these).
const MUTATION_SCHEDULES: usize = 3000;

fn failure(mutation: Mutation) -> String {
    model_check::failure(|| check(mutation, MUTATION_SCHEDULES, 45))
        .unwrap_or_else(|| panic!("mutation {mutation:?} went unnoticed"))
}

#[test]
fn model_rcu_finds_a_snapshot_one_grace_period_short() {
    let msg = failure(Mutation::EarlySnap);
    assert!(
        msg.contains("use after free"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_rcu_finds_advance_one_segment_too_far() {
    let msg = failure(Mutation::AdvanceTooFar);
    assert!(
        msg.contains("use after free"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_rcu_finds_a_grace_period_ended_one_qs_early() {
    let msg = failure(Mutation::EndOneQsEarly);
    assert!(
        msg.contains("use after free"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_rcu_finds_a_qs_reported_inside_a_reader() {
    let msg = failure(Mutation::QsInReader);
    assert!(
        msg.contains("use after free"),
        "failed, but not as expected: {msg}"
    );
}

#[test]
fn model_rcu_finds_a_lost_callback() {
    let msg = failure(Mutation::LostCallback);
    assert!(
        msg.contains("callback lost"),
        "failed, but not as expected: {msg}"
    );
}
