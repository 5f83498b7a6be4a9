//! The sheaves design's slab path (Linux 7's ___slab_alloc without a CPU slab, and
//! refill_objects): objects are taken from a node's partial slabs under its list_lock, a
//! slab that runs out leaving the list, or from one new slab whose rest goes on the list.
//! No slab is frozen or owned by a CPU; frees go back through `free_slow` (the partial
//! design's __slab_free, which for unfrozen slabs only ever moves them between lists).
//!
//! Runs with interrupts off; takes one node list_lock at a time.

use super::cache::{Cache, CpuSlab};
use super::freelist::{decode, SlabWord};
use super::platform::Platform;
use super::slab::{Slab, LIST_PARTIAL};
use super::stats::Stat;
use crate::topology::NodeId;

impl<P: Platform> Cache<P> {
    /// One object from the slabs for a caller (Linux's __slab_alloc_node): `node`'s memory
    /// (None: the CPU's memory node), falling back as the partial design does unless
    /// `strict`. Counted as alloc_slowpath. Null when out of memory.
    #[cold]
    #[inline(never)]
    pub(crate) fn slab_alloc_entry(&self, node: Option<NodeId>, strict: bool) -> *mut u8 {
        if self.hybrid {
            // 6.18: what the sheaves cannot serve goes to the per-CPU slab (hybrid.rs).
            return self.cpu_slab_alloc(node, strict);
        }
        let p = &self.plat;
        let irq = p.irq_save();
        let c = self.cpu_slab();
        let mut got = 0usize;
        let target = node.unwrap_or(NodeId(
            c.home.load(core::sync::atomic::Ordering::Relaxed) as u16
        ));
        let n = self.take_objects_for(c, target, node.is_some(), strict, 1, &mut |o| got = o);
        if n == 1 {
            c.stats.inc(Stat::AllocSlowpath);
        }
        p.irq_restore(irq);
        got as *mut u8
    }

    /// Up to `want` objects for the CPU's own refill (any node's partial slabs may serve),
    /// each handed to `put`; returns how many.
    pub(crate) fn take_objects(
        &self,
        c: &CpuSlab,
        home: NodeId,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        self.take_objects_for(c, home, false, false, want, put)
    }

    /// Linux 7.3's refill_objects for kmem_cache_alloc_bulk's slab part
    /// (__kmem_cache_alloc_bulk): the CPU's memory node's partial slabs, other nodes' (gated as
    /// get_any_partial), then new slabs until `want` objects (7.3 loops over new_slab). Each
    /// object handed to `put`; returns how many. Interrupts off.
    pub(crate) fn refill_objects(
        &self,
        c: &CpuSlab,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let home = NodeId(c.home.load(core::sync::atomic::Ordering::Relaxed) as u16);
        let mut got = self
            .take_from_partial(c, home, want, false, put)
            .unwrap_or(0);
        if got < want {
            got += self.take_from_any_partial(c, home, want - got, put);
        }
        while got < want {
            let k = self.take_from_new_slab(c, Some(home), false, want - got, put);
            if k == 0 {
                break;
            }
            got += k;
        }
        got
    }

    /// The refill order: `node`'s partial slabs; for a refill (not `for_node`), other nodes'
    /// partial slabs nearest first (gated like get_any_partial, with a trylock when
    /// `any_node_trylock`); one new slab on `node` (only there when `for_node`, then, unless
    /// `strict`, other nodes' partials and a new slab wherever the page allocator finds one).
    fn take_objects_for(
        &self,
        c: &CpuSlab,
        node: NodeId,
        for_node: bool,
        strict: bool,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let mut got = self
            .take_from_partial(c, node, want, false, put)
            .unwrap_or(0);
        if got < want && !for_node {
            got += self.take_from_any_partial(c, node, want - got, put);
        }
        if got < want {
            got += self.take_from_new_slab(c, Some(node), for_node, want - got, put);
        }
        if got == 0 && for_node && !strict {
            // Like a request without a node (Linux 6.10's fallback): the CPU's own memory
            // node's partial slabs, then other nodes', then a new slab anywhere.
            let home = NodeId(c.home.load(core::sync::atomic::Ordering::Relaxed) as u16);
            if home != node {
                got += self
                    .take_from_partial(c, home, want, false, put)
                    .unwrap_or(0);
            }
            if got == 0 {
                got += self.take_from_any_partial(c, home, want, put);
            }
            if got == 0 {
                got += self.take_from_new_slab(c, Some(node), false, want, put);
            }
        }
        got
    }

    /// Other nodes' partial slabs, nearest to `search` first, each only while it holds
    /// more than min_partial slabs (Linux's get_any_partial gate).
    fn take_from_any_partial(
        &self,
        c: &CpuSlab,
        search: NodeId,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let p = &self.plat;
        if self.defrag_ratio == 0 || (p.now() % 1024) as u32 > self.defrag_ratio {
            return 0;
        }
        let mut got = 0;
        for &n in p.topology().fallback_order(search) {
            if n == search || got >= want {
                continue;
            }
            let Some(lists) = self.nodes.get(n.index()) else {
                continue;
            };
            if lists.nr_partial() <= self.min_partial {
                continue;
            }
            match self.take_from_partial(c, n, want - got, self.tunables.any_node_trylock, put) {
                Some(k) if k > 0 => {
                    got += k;
                    c.stats.inc(Stat::AllocRemotePartial);
                }
                Some(_) => {}
                None => c.stats.inc(Stat::AllocRemoteTrylockFail),
            }
        }
        got
    }

    /// Objects from `node`'s partial slabs under its list_lock (with `trylock`: None when
    /// the lock was taken).
    fn take_from_partial(
        &self,
        c: &CpuSlab,
        node: NodeId,
        want: usize,
        trylock: bool,
        put: &mut dyn FnMut(usize),
    ) -> Option<usize> {
        let p = &self.plat;
        let n = self.nodes.get(node.index())?;
        if n.nr_partial() == 0 {
            return Some(0);
        }
        let body = || {
            let mut got = 0;
            while got < want {
                let head = n.partial.head();
                if head == 0 {
                    break;
                }
                let slab = Slab(head);
                let k = self.take_from_slab(c, slab, want - got, put);
                got += k;
                if !slab.state(p).has_free() {
                    n.partial.remove(p, slab);
                }
                c.stats.inc(Stat::AllocFromPartial);
            }
            got
        };
        if trylock {
            p.try_with_lock(&n.list_lock, body)
        } else {
            Some(p.with_lock(&n.list_lock, body))
        }
    }

    /// Takes up to `want` objects off an unfrozen slab's freelist with one compare-and-swap
    /// of its state word (list_lock held, so nobody else allocates from it; remote frees
    /// only push on the head, which the compare catches), then hands them to `put`.
    fn take_from_slab(
        &self,
        c: &CpuSlab,
        slab: Slab,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let p = &self.plat;
        let base = slab.base(p);
        let objects = slab.objects(p);
        loop {
            let old = slab.state(p);
            let Some(off) = old.free_off() else {
                return 0;
            };
            let k = want.min(objects - old.inuse());
            let head = base + off;
            let mut rest = head;
            for _ in 0..k {
                let fp = rest + self.layout.fp_offset;
                rest = decode(p.load(fp), self.random, fp);
            }
            let new = SlabWord::new((rest != 0).then(|| rest - base), old.inuse() + k, false);
            if slab.cas_state(p, old, new) {
                let mut obj = head;
                for _ in 0..k {
                    let fp = obj + self.layout.fp_offset;
                    let next = decode(p.load(fp), self.random, fp);
                    put(obj);
                    obj = next;
                }
                return k;
            }
            c.stats.inc(Stat::CmpxchgDoubleFail);
        }
    }

    /// One new slab: up to `want` of its objects, the rest left on it and the slab put on
    /// its node's partial list.
    fn take_from_new_slab(
        &self,
        c: &CpuSlab,
        node: Option<NodeId>,
        this_node: bool,
        want: usize,
        put: &mut dyn FnMut(usize),
    ) -> usize {
        let p = &self.plat;
        let Some((slab, head)) = self.new_slab(c, node, this_node) else {
            return 0;
        };
        let base = slab.base(p);
        let objects = slab.objects(p);
        let k = want.min(objects);
        let mut obj = head;
        let mut taken = 0;
        // Walk first: `put` may write into the objects (a sheaf does not, a caller may).
        let mut first = head;
        for _ in 0..k {
            let fp = obj + self.layout.fp_offset;
            obj = decode(p.load(fp), self.random, fp);
        }
        let rest = obj;
        let new = SlabWord::new((rest != 0).then(|| rest - base), k, false);
        let n = &self.nodes[slab.node(p).index()];
        if rest != 0 {
            p.with_lock(&n.list_lock, || {
                let old = slab.state(p);
                let ok = slab.cas_state(p, old, new);
                debug_assert!(ok, "nobody else knows the new slab");
                n.partial.push(p, slab, false, LIST_PARTIAL);
            });
        } else {
            let old = slab.state(p);
            let ok = slab.cas_state(p, old, new);
            debug_assert!(ok, "nobody else knows the new slab");
        }
        while taken < k {
            let fp = first + self.layout.fp_offset;
            let next = decode(p.load(fp), self.random, fp);
            put(first);
            first = next;
            taken += 1;
        }
        k
    }
}
