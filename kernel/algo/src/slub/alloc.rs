//! The allocation slow path (Linux's ___slab_alloc), in Linux's order: the CPU slab's own
//! freelist (remote frees), the CPU partial list, the local node's partial list, other
//! nodes' partial lists nearest first (gated like remote_node_defrag_ratio, skipped by
//! prefer_local while the local node has memory), and a new slab from the page allocator.
//!
//! A request for a node (`alloc_node`) insists on that node only when it is strict (Linux's
//! __GFP_THISNODE, `alloc_node_strict`): otherwise it tries the node's partial list and a
//! new slab on the node first, then falls back like a request without a node (Linux 6.10,
//! "mm/slub: Reduce memory consumption in extreme scenarios"), and the fallback slab is
//! marked as standing in for the node so that the next request for it does not reject it.
//!
//! Runs on the allocating CPU with interrupts off; takes one node list_lock at a time.

use super::cache::{Cache, CpuSlab};
use super::freelist::{decode, SlabWord};
use super::geometry::PAGE_SIZE;
use super::platform::Platform;
use super::slab::{Slab, LIST_PARTIAL};
use super::stats::Stat;
use crate::topology::NodeId;
use core::sync::atomic::Ordering::Relaxed;

impl<P: Platform> Cache<P> {
    /// Makes `slab` the CPU's active slab with `freelist` (its objects, already taken).
    pub(crate) fn install_cpu_slab(&self, c: &CpuSlab, slab: Slab, freelist: usize) {
        let p = &self.plat;
        c.slab.store(slab.0, Relaxed);
        c.base.store(slab.base(p), Relaxed);
        c.span.store((PAGE_SIZE as usize) << slab.order(p), Relaxed);
        c.node.store(slab.node(p).index(), Relaxed);
        c.objects
            .store(if self.debug_any { 0 } else { slab.objects(p) }, Relaxed);
        c.freelist.store(freelist, Relaxed);
        c.stands_in_for.store(0, Relaxed);
    }

    /// Forgets the CPU's active slab (the caller deals with the slab itself).
    pub(crate) fn clear_cpu_slab(&self, c: &CpuSlab) {
        c.slab.store(0, Relaxed);
        c.freelist.store(0, Relaxed);
        c.stands_in_for.store(0, Relaxed);
        c.debug_freelist.store(0, Relaxed);
        c.objects.store(0, Relaxed);
        c.base.store(0, Relaxed);
        c.span.store(0, Relaxed);
    }

    /// Pops the head object of a private freelist, stores the rest as the CPU freelist.
    fn load_freelist(&self, c: &CpuSlab, head: usize) -> usize {
        let fp = head + self.layout.fp_offset;
        c.freelist
            .store(decode(self.plat.load(fp), self.random, fp), Relaxed);
        head
    }

    /// Takes a frozen slab's whole freelist (Linux's get_freelist). When it is empty the
    /// slab is unfrozen (full, on no list) and 0 is returned.
    pub(crate) fn get_freelist(&self, c: &CpuSlab, slab: Slab) -> usize {
        let p = &self.plat;
        loop {
            let old = slab.state(p);
            let new = SlabWord::new(None, slab.objects(p), old.has_free());
            if self.debug_any && !old.has_free() {
                // Debug caches keep full slabs on the full list: unfreeze under the lock.
                let n = &self.nodes[slab.node(p).index()];
                let done = p.with_lock(&n.list_lock, || {
                    if !slab.cas_state(p, old, new) {
                        return false;
                    }
                    n.full.push(p, slab, true, super::slab::LIST_FULL);
                    true
                });
                if done {
                    return 0;
                }
            } else if slab.cas_state(p, old, new) {
                return old.free_off().map_or(0, |off| slab.base(p) + off);
            }
            c.stats.inc(Stat::CmpxchgDoubleFail);
        }
    }

    /// Linux's ___slab_alloc. `node` is already mapped by the memoryless fix. Debug caches
    /// come here for every allocation: their private freelist is swapped in for the
    /// duration, and the object is checked before it is handed out.
    /// `strict`: only `node`'s memory will do (see the module comment).
    pub(crate) fn alloc_slow(
        &self,
        c: &CpuSlab,
        node: Option<NodeId>,
        strict: bool,
    ) -> Option<usize> {
        if !self.debug_any {
            return self.alloc_slow_inner(c, node, strict);
        }
        c.freelist.store(c.debug_freelist.load(Relaxed), Relaxed);
        let obj = self.alloc_slow_inner(c, node, strict);
        c.debug_freelist.store(c.freelist.load(Relaxed), Relaxed);
        c.freelist.store(0, Relaxed);
        let obj = obj?;
        self.debug_alloc_checks(c, obj);
        Some(obj)
    }

    fn alloc_slow_inner(&self, c: &CpuSlab, node: Option<NodeId>, strict: bool) -> Option<usize> {
        let p = &self.plat;
        let slab = Slab(c.slab.load(Relaxed));
        if slab.0 != 0 {
            if node.is_some_and(|n| !self.cpu_slab_serves(c, n, strict)) {
                c.stats.inc(Stat::AllocNodeMismatch);
                self.deactivate_cpu_slab(c);
            } else {
                let fl = c.freelist.load(Relaxed);
                if fl != 0 {
                    c.stats.inc(Stat::AllocSlowpath);
                    return Some(self.load_freelist(c, fl));
                }
                let fl = self.get_freelist(c, slab);
                if fl != 0 {
                    c.stats.inc(Stat::AllocRefill);
                    c.stats.inc(Stat::AllocSlowpath);
                    return Some(self.load_freelist(c, fl));
                }
                self.clear_cpu_slab(c);
                c.stats.inc(Stat::DeactivateBypass);
            }
        }
        // The CPU partial list.
        loop {
            let head = c.partial.load(Relaxed);
            if head == 0 {
                break;
            }
            let slab = Slab(head);
            c.partial.store(slab.cpu_next(p), Relaxed);
            c.partial_slabs
                .store(c.partial_slabs.load(Relaxed).saturating_sub(1), Relaxed);
            slab.set_cpu_next(p, 0);
            if node.is_some_and(|n| slab.node(p) != n) {
                // Linux puts a slab of the wrong node back on its node list.
                self.unfreeze_partials(c, slab.0);
                continue;
            }
            let fl = self.get_freelist(c, slab);
            if fl != 0 {
                self.install_cpu_slab(c, slab, 0);
                c.stats.inc(Stat::CpuPartialAlloc);
                c.stats.inc(Stat::AllocSlowpath);
                return Some(self.load_freelist(c, fl));
            }
        }
        // Node partial lists (with a node: that node's only).
        if let Some((slab, fl)) = self.get_partial(c, node) {
            self.install_cpu_slab(c, slab, 0);
            c.stats.inc(Stat::AllocSlowpath);
            return Some(self.load_freelist(c, fl));
        }
        // A new slab: with a node, on that node only first (Linux's try_thisnode).
        let (slab, fl) = match self.new_slab(c, node, node.is_some()) {
            Some(got) => got,
            None => {
                let n = node?;
                if strict {
                    return None;
                }
                // The node is out of pages: other nodes' partials nearest first, then a
                // new slab wherever the page allocator falls back to.
                let stand_in = self.may_stand_in(n);
                let (slab, fl) = match stand_in.then(|| self.get_any_partial(c, n)).flatten() {
                    Some(got) => got,
                    None => self.new_slab(c, node, false)?,
                };
                self.install_cpu_slab(c, slab, 0);
                if stand_in && slab.node(p) != n {
                    c.stands_in_for.store(n.index() + 1, Relaxed);
                    c.stats.inc(Stat::AllocNodeFallback);
                }
                c.stats.inc(Stat::AllocSlowpath);
                return Some(self.load_freelist(c, fl));
            }
        };
        self.install_cpu_slab(c, slab, 0);
        c.stats.inc(Stat::AllocSlowpath);
        Some(self.load_freelist(c, fl))
    }

    /// Whether requests for `node`, out of pages, may take other nodes' partial slabs and
    /// keep a slab of another node as a stand-in. Not for a memoryless node with
    /// `memoryless_fix` off: that setting reproduces Linux before its memoryless-node fix
    /// (every request for the node rejects the CPU slab and builds a new one).
    fn may_stand_in(&self, node: NodeId) -> bool {
        self.tunables.memoryless_fix || !self.plat.topology().is_memoryless(node)
    }

    /// Linux's get_partial: the search node, then for requests without a node (unless
    /// prefer_local says to make a local slab) the other nodes nearest first.
    fn get_partial(&self, c: &CpuSlab, node: Option<NodeId>) -> Option<(Slab, usize)> {
        let p = &self.plat;
        let topo = p.topology();
        let search = node.unwrap_or_else(|| topo.mem_node(topo.node_of_cpu(p.cpu())));
        let got = self.get_partial_node(c, search);
        // A request for a node is served from that node only (Linux 5.x get_partial; with
        // the memoryless fix a memoryless node already means its nearest memory node).
        if got.is_some() || node.is_some() {
            return got;
        }
        if self.prefer_local && !topo.is_memoryless(search) && p.node_has_free_memory(search) {
            let remote_partials = topo.fallback_order(search).iter().any(|&n| {
                n != search
                    && self
                        .nodes
                        .get(n.index())
                        .is_some_and(|l| l.nr_partial() > self.min_partial)
            });
            if remote_partials {
                c.stats.inc(Stat::AllocPreferLocal);
            }
            return None;
        }
        self.get_any_partial(c, search)
    }

    /// Linux's get_any_partial: other nodes' partial lists, nearest to `search` first, each
    /// only while it holds more than min_partial slabs.
    fn get_any_partial(&self, c: &CpuSlab, search: NodeId) -> Option<(Slab, usize)> {
        let p = &self.plat;
        let topo = p.topology();
        // Linux's get_any_partial gate: skip remote nodes 1024 - ratio times in 1024.
        if self.defrag_ratio == 0 || (p.now() % 1024) as u32 > self.defrag_ratio {
            return None;
        }
        for &n in topo.fallback_order(search) {
            if n == search {
                continue;
            }
            let Some(lists) = self.nodes.get(n.index()) else {
                continue;
            };
            if lists.nr_partial() > self.min_partial {
                if let Some(got) = self.get_partial_node(c, n) {
                    c.stats.inc(Stat::AllocRemotePartial);
                    return Some(got);
                }
            }
        }
        None
    }

    /// Linux's get_partial_node: under the node's list_lock, take the first partial slab as
    /// the CPU slab (its whole freelist) and move more onto the CPU partial list, up to half
    /// the cpu_partial bound.
    fn get_partial_node(&self, c: &CpuSlab, node: NodeId) -> Option<(Slab, usize)> {
        let p = &self.plat;
        let n = self.nodes.get(node.index())?;
        if n.nr_partial() == 0 {
            return None;
        }
        p.with_lock(&n.list_lock, || {
            let mut got: Option<(Slab, usize)> = None;
            let mut moved = 0usize;
            loop {
                let head = n.partial.head();
                if head == 0 {
                    break;
                }
                let slab = Slab(head);
                n.partial.remove(p, slab);
                if got.is_none() {
                    // Take its freelist and freeze it.
                    let fl = loop {
                        let old = slab.state(p);
                        let new = SlabWord::new(None, slab.objects(p), true);
                        if slab.cas_state(p, old, new) {
                            break old.free_off().map_or(0, |off| slab.base(p) + off);
                        }
                        c.stats.inc(Stat::CmpxchgDoubleFail);
                    };
                    got = Some((slab, fl));
                    c.stats.inc(Stat::AllocFromPartial);
                    if !self.has_cpu_partial() {
                        break;
                    }
                } else {
                    loop {
                        let old = slab.state(p);
                        if slab.cas_state(p, old, old.with_frozen(true)) {
                            break;
                        }
                        c.stats.inc(Stat::CmpxchgDoubleFail);
                    }
                    slab.set_cpu_next(p, c.partial.load(Relaxed));
                    c.partial.store(slab.0, Relaxed);
                    c.partial_slabs
                        .store(c.partial_slabs.load(Relaxed) + 1, Relaxed);
                    c.stats.inc(Stat::CpuPartialNode);
                    moved += 1;
                    if moved > self.cpu_partial_slabs / 2 {
                        break;
                    }
                }
            }
            debug_assert!(got.is_none_or(|(s, _)| s.list(p) != LIST_PARTIAL));
            got
        })
    }

    /// Linux's new_slab + allocate_slab: pages of the preferred order on `node` (falling back
    /// to the minimum order), a descriptor, the objects chained in address order, the
    /// constructor run, the pages' owner words set. The slab comes back frozen with its whole
    /// freelist taken.
    /// `this_node`: pages from `node` only (Linux's __GFP_THISNODE), no fallback.
    pub(crate) fn new_slab(
        &self,
        c: &CpuSlab,
        node: Option<NodeId>,
        this_node: bool,
    ) -> Option<(Slab, usize)> {
        let p = &self.plat;
        let mut oo = self.oo;
        let alloc = |order: u8| match node {
            Some(n) if this_node => p.alloc_pages_on(order, n),
            _ => p.alloc_pages(order, node),
        };
        let pages = match alloc(oo.order) {
            Some(pages) => pages,
            None if self.min.order < oo.order => {
                oo = self.min;
                let pages = alloc(oo.order)?;
                c.stats.inc(Stat::OrderFallback);
                pages
            }
            None => return None,
        };
        let Some(desc) = p.alloc_desc() else {
            p.free_pages(pages.base, oo.order);
            return None;
        };
        let slab = Slab(desc);
        let size = self.layout.size;
        for i in 0..oo.objects {
            let obj = pages.base + i * size;
            self.init_object(obj);
            if let Some(ctor) = self.ctor {
                ctor(obj);
            }
            let next = if i + 1 < oo.objects { obj + size } else { 0 };
            let fp = obj + self.layout.fp_offset;
            p.store(fp, super::freelist::encode(next, self.random, fp));
        }
        slab.init(
            p,
            self.id(),
            pages.base,
            pages.node,
            oo,
            SlabWord::new(None, oo.objects, true),
        );
        p.set_owner(pages.base, oo.nr_pages(), desc);
        let n = &self.nodes[pages.node.index()];
        n.nr_slabs.fetch_add(1, Relaxed);
        n.total_objects.fetch_add(oo.objects, Relaxed);
        n.nr_pages.fetch_add(oo.nr_pages(), Relaxed);
        c.stats.inc(Stat::AllocSlab);
        Some((slab, pages.base))
    }
}
