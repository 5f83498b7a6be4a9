//! `AreaTree`: an AVL tree of disjoint address ranges keyed by start, where every node also
//! carries the largest range size in its subtree (Linux's `subtree_max_size`), so the
//! lowest-address range that can hold a size and alignment is found without a scan.
//!
//! Nodes live in one arena (arena.rs: fixed-size chunks, never one large block) and link by
//! `u32` index; freed slots are chained through `left` and reused, so a steady alloc/free
//! workload does not touch the heap. The same tree
//! is the free-space structure (meta `()`) and each vmap node's busy tree (meta = area data).

use super::arena::Arena;
use alloc::vec::Vec;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node<M> {
    start: u64,
    size_bytes: u64,
    /// Largest `size_bytes` in this node's subtree (itself included).
    subtree_max_bytes: u64,
    left: u32,
    right: u32,
    height: u8,
    meta: M,
}

/// A fit found by [`AreaTree::lowest_fit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// The range that holds the fit.
    pub block_start: u64,
    pub block_bytes: u64,
    /// The aligned address inside it.
    pub addr: u64,
}

/// Disjoint ranges keyed by start address, with per-subtree maximum size.
#[derive(Clone, Debug)]
pub struct AreaTree<M: Copy> {
    nodes: Arena<Node<M>>,
    root: u32,
    free_head: u32,
    len: usize,
}

impl<M: Copy> Default for AreaTree<M> {
    fn default() -> Self {
        Self::new()
    }
}

fn align_up(value: u64, align: u64) -> Option<u64> {
    value.checked_add(align - 1).map(|v| v & !(align - 1))
}

impl<M: Copy> AreaTree<M> {
    pub const fn new() -> Self {
        AreaTree {
            nodes: Arena::new(),
            root: NIL,
            free_head: NIL,
            len: 0,
        }
    }

    /// Reserves arena room for `additional` more ranges (so later inserts do not allocate).
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The largest range size in the tree (0 when empty).
    pub fn max_bytes(&self) -> u64 {
        self.max_of(self.root)
    }

    fn max_of(&self, i: u32) -> u64 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].subtree_max_bytes
        }
    }

    fn height_of(&self, i: u32) -> u8 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].height
        }
    }

    fn update(&mut self, i: u32) {
        let (l, r) = {
            let n = &self.nodes[i as usize];
            (n.left, n.right)
        };
        let height = 1 + self.height_of(l).max(self.height_of(r));
        let max = self.max_of(l).max(self.max_of(r));
        let n = &mut self.nodes[i as usize];
        n.height = height;
        n.subtree_max_bytes = max.max(n.size_bytes);
    }

    fn rotate_right(&mut self, i: u32) -> u32 {
        let l = self.nodes[i as usize].left;
        self.nodes[i as usize].left = self.nodes[l as usize].right;
        self.nodes[l as usize].right = i;
        self.update(i);
        self.update(l);
        l
    }

    fn rotate_left(&mut self, i: u32) -> u32 {
        let r = self.nodes[i as usize].right;
        self.nodes[i as usize].right = self.nodes[r as usize].left;
        self.nodes[r as usize].left = i;
        self.update(i);
        self.update(r);
        r
    }

    fn balance(&mut self, i: u32) -> u32 {
        self.update(i);
        let (l, r) = (self.nodes[i as usize].left, self.nodes[i as usize].right);
        let bf = self.height_of(l) as i16 - self.height_of(r) as i16;
        if bf > 1 {
            let ll = self.nodes[l as usize].left;
            let lr = self.nodes[l as usize].right;
            if self.height_of(lr) > self.height_of(ll) {
                self.nodes[i as usize].left = self.rotate_left(l);
            }
            return self.rotate_right(i);
        }
        if bf < -1 {
            let rl = self.nodes[r as usize].left;
            let rr = self.nodes[r as usize].right;
            if self.height_of(rl) > self.height_of(rr) {
                self.nodes[i as usize].right = self.rotate_right(r);
            }
            return self.rotate_left(i);
        }
        i
    }

    fn new_node(&mut self, start: u64, size_bytes: u64, meta: M) -> u32 {
        let node = Node {
            start,
            size_bytes,
            subtree_max_bytes: size_bytes,
            left: NIL,
            right: NIL,
            height: 1,
            meta,
        };
        if self.free_head != NIL {
            let i = self.free_head;
            self.free_head = self.nodes[i as usize].left;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize].left = self.free_head;
        self.free_head = i;
    }

    /// Inserts range [start, start+size). Returns false (and changes nothing) when a range
    /// with this start already exists. The caller keeps ranges disjoint.
    pub fn insert(&mut self, start: u64, size_bytes: u64, meta: M) -> bool {
        if self.get(start).is_some() {
            return false;
        }
        let n = self.new_node(start, size_bytes, meta);
        self.root = self.insert_at(self.root, n);
        self.len += 1;
        true
    }

    fn insert_at(&mut self, at: u32, n: u32) -> u32 {
        if at == NIL {
            return n;
        }
        if self.nodes[n as usize].start < self.nodes[at as usize].start {
            let l = self.insert_at(self.nodes[at as usize].left, n);
            self.nodes[at as usize].left = l;
        } else {
            let r = self.insert_at(self.nodes[at as usize].right, n);
            self.nodes[at as usize].right = r;
        }
        self.balance(at)
    }

    /// Removes the range starting at `start`, returning its size and meta.
    pub fn remove(&mut self, start: u64) -> Option<(u64, M)> {
        let mut out = None;
        self.root = self.remove_at(self.root, start, &mut out);
        if let Some(i) = out {
            let n = self.nodes[i as usize];
            self.release(i);
            self.len -= 1;
            Some((n.size_bytes, n.meta))
        } else {
            None
        }
    }

    fn remove_at(&mut self, at: u32, start: u64, out: &mut Option<u32>) -> u32 {
        if at == NIL {
            return NIL;
        }
        let key = self.nodes[at as usize].start;
        if start < key {
            let l = self.remove_at(self.nodes[at as usize].left, start, out);
            self.nodes[at as usize].left = l;
        } else if start > key {
            let r = self.remove_at(self.nodes[at as usize].right, start, out);
            self.nodes[at as usize].right = r;
        } else {
            *out = Some(at);
            let (l, r) = (self.nodes[at as usize].left, self.nodes[at as usize].right);
            if l == NIL {
                return r;
            }
            if r == NIL {
                return l;
            }
            let mut min = NIL;
            let new_r = self.remove_min(r, &mut min);
            self.nodes[min as usize].left = l;
            self.nodes[min as usize].right = new_r;
            return self.balance(min);
        }
        self.balance(at)
    }

    fn remove_min(&mut self, at: u32, min: &mut u32) -> u32 {
        let l = self.nodes[at as usize].left;
        if l == NIL {
            *min = at;
            return self.nodes[at as usize].right;
        }
        let new_l = self.remove_min(l, min);
        self.nodes[at as usize].left = new_l;
        self.balance(at)
    }

    fn find(&self, start: u64) -> u32 {
        let mut i = self.root;
        while i != NIL {
            let n = &self.nodes[i as usize];
            if start == n.start {
                return i;
            }
            i = if start < n.start { n.left } else { n.right };
        }
        NIL
    }

    /// The size and meta of the range starting exactly at `start`.
    pub fn get(&self, start: u64) -> Option<(u64, M)> {
        match self.find(start) {
            NIL => None,
            i => Some((
                self.nodes[i as usize].size_bytes,
                self.nodes[i as usize].meta,
            )),
        }
    }

    /// Moves/resizes the range starting at `old_start` to [new_start, new_start+new_size).
    /// The caller guarantees the new range stays between its neighbours (key order kept), as
    /// when a free block is trimmed or grown in place. Returns false if `old_start` is absent.
    pub fn reshape(&mut self, old_start: u64, new_start: u64, new_size_bytes: u64) -> bool {
        self.reshape_at(self.root, old_start, new_start, new_size_bytes)
    }

    fn reshape_at(&mut self, at: u32, old: u64, new_start: u64, new_size: u64) -> bool {
        if at == NIL {
            return false;
        }
        let key = self.nodes[at as usize].start;
        let found = if old == key {
            let n = &mut self.nodes[at as usize];
            n.start = new_start;
            n.size_bytes = new_size;
            true
        } else if old < key {
            self.reshape_at(self.nodes[at as usize].left, old, new_start, new_size)
        } else {
            self.reshape_at(self.nodes[at as usize].right, old, new_start, new_size)
        };
        if found {
            self.update(at);
        }
        found
    }

    /// The range with the greatest start <= `addr`.
    pub fn floor(&self, addr: u64) -> Option<(u64, u64, M)> {
        let mut i = self.root;
        let mut best = NIL;
        while i != NIL {
            let n = &self.nodes[i as usize];
            if n.start <= addr {
                best = i;
                i = n.right;
            } else {
                i = n.left;
            }
        }
        (best != NIL).then(|| {
            let n = &self.nodes[best as usize];
            (n.start, n.size_bytes, n.meta)
        })
    }

    /// The range with the smallest start > `addr`.
    pub fn above(&self, addr: u64) -> Option<(u64, u64, M)> {
        let mut i = self.root;
        let mut best = NIL;
        while i != NIL {
            let n = &self.nodes[i as usize];
            if n.start > addr {
                best = i;
                i = n.left;
            } else {
                i = n.right;
            }
        }
        (best != NIL).then(|| {
            let n = &self.nodes[best as usize];
            (n.start, n.size_bytes, n.meta)
        })
    }

    /// The range containing `addr`, if any.
    pub fn containing(&self, addr: u64) -> Option<(u64, u64, M)> {
        self.floor(addr)
            .filter(|&(start, size, _)| addr - start < size)
    }

    /// The lowest-address place for `size_bytes` at an `align_bytes` boundary (a power of
    /// two). Subtrees whose largest range is below `size_bytes` are never entered, so when
    /// every range that is large enough also fits after alignment (alignment <= the
    /// granule the ranges are kept in, the common vmalloc case) the search is one root-to-leaf
    /// path plus one backtrack: O(log n). With a larger alignment, ranges that are large
    /// enough but cannot fit after alignment are visited too (Linux retries its search for the
    /// same reason).
    pub fn lowest_fit(&self, size_bytes: u64, align_bytes: u64) -> Option<Fit> {
        if size_bytes == 0 || !align_bytes.is_power_of_two() {
            return None;
        }
        self.fit_at(self.root, size_bytes, align_bytes)
    }

    fn fit_at(&self, at: u32, size: u64, align: u64) -> Option<Fit> {
        if at == NIL || self.nodes[at as usize].subtree_max_bytes < size {
            return None;
        }
        let n = &self.nodes[at as usize];
        if let Some(fit) = self.fit_at(n.left, size, align) {
            return Some(fit);
        }
        if n.size_bytes >= size {
            if let Some(addr) = align_up(n.start, align) {
                let end = n.start + n.size_bytes;
                if addr <= end && end - addr >= size {
                    return Some(Fit {
                        block_start: n.start,
                        block_bytes: n.size_bytes,
                        addr,
                    });
                }
            }
        }
        self.fit_at(n.right, size, align)
    }

    /// Every range in address order (for dumps and checks; allocates).
    pub fn to_vec(&self) -> Vec<(u64, u64, M)> {
        let mut out = Vec::with_capacity(self.len);
        let mut stack = Vec::new();
        let mut i = self.root;
        while i != NIL || !stack.is_empty() {
            while i != NIL {
                stack.push(i);
                i = self.nodes[i as usize].left;
            }
            let top = stack.pop().unwrap_or(NIL);
            let n = &self.nodes[top as usize];
            out.push((n.start, n.size_bytes, n.meta));
            i = n.right;
        }
        out
    }

    /// Calls `f` on every range in address order without allocating beyond a small stack.
    pub fn for_each(&self, mut f: impl FnMut(u64, u64, &M)) {
        self.walk(self.root, &mut f);
    }

    fn walk(&self, at: u32, f: &mut impl FnMut(u64, u64, &M)) {
        if at == NIL {
            return;
        }
        let n = &self.nodes[at as usize];
        self.walk(n.left, f);
        f(n.start, n.size_bytes, &n.meta);
        self.walk(n.right, f);
    }

    /// Checks the invariants (order, AVL balance, subtree maxima, count); for tests.
    pub fn check(&self) -> Result<(), &'static str> {
        let mut count = 0;
        self.check_at(self.root, None, None, &mut count)?;
        if count != self.len {
            return Err("len does not match node count");
        }
        Ok(())
    }

    fn check_at(
        &self,
        at: u32,
        lo: Option<u64>,
        hi: Option<u64>,
        count: &mut usize,
    ) -> Result<(u8, u64), &'static str> {
        if at == NIL {
            return Ok((0, 0));
        }
        *count += 1;
        let n = &self.nodes[at as usize];
        if lo.is_some_and(|lo| n.start <= lo) || hi.is_some_and(|hi| n.start >= hi) {
            return Err("key order violated");
        }
        let (hl, ml) = self.check_at(n.left, lo, Some(n.start), count)?;
        let (hr, mr) = self.check_at(n.right, Some(n.start), hi, count)?;
        if (hl as i16 - hr as i16).abs() > 1 {
            return Err("AVL balance violated");
        }
        if n.height != 1 + hl.max(hr) {
            return Err("stale height");
        }
        let max = n.size_bytes.max(ml).max(mr);
        if n.subtree_max_bytes != max {
            return Err("stale subtree_max_bytes");
        }
        Ok((n.height, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_keeps_invariants() {
        let mut t: AreaTree<u32> = AreaTree::new();
        for i in 0..200u64 {
            let k = (i * 7919) % 1000;
            assert!(t.insert(k * 16, 8 + (i % 5), i as u32));
            t.check().unwrap();
        }
        assert!(!t.insert(0, 1, 0), "duplicate start refused");
        assert_eq!(t.max_bytes(), 12);
        for i in 0..200u64 {
            let k = (i * 7919) % 1000;
            if i % 2 == 0 {
                assert_eq!(t.remove(k * 16).map(|x| x.1), Some(i as u32));
                t.check().unwrap();
            }
        }
        assert_eq!(t.len(), 100);
        let v = t.to_vec();
        assert!(v.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(t.containing(v[3].0 + 2).map(|x| x.0), Some(v[3].0));
    }

    #[test]
    fn lowest_fit_prefers_low_addresses_and_respects_alignment() {
        let mut t: AreaTree<()> = AreaTree::new();
        t.insert(0x1000, 0x1000, ());
        t.insert(0x3000, 0x3000, ());
        t.insert(0x10000, 0x20000, ());
        assert_eq!(t.lowest_fit(0x1000, 0x1000).unwrap().addr, 0x1000);
        assert_eq!(t.lowest_fit(0x2000, 0x1000).unwrap().addr, 0x3000);
        assert_eq!(t.lowest_fit(0x2000, 0x4000).unwrap().addr, 0x4000);
        assert_eq!(t.lowest_fit(0x3000, 0x4000).unwrap().addr, 0x10000);
        assert_eq!(t.lowest_fit(0x1000, 0x4000).unwrap().addr, 0x4000);
        assert!(t.lowest_fit(0x30000, 0x1000).is_none());
        assert!(t.lowest_fit(0x1000, 3).is_none());
    }

    #[test]
    fn freed_slots_are_reused() {
        let mut t: AreaTree<()> = AreaTree::new();
        for i in 0..64 {
            t.insert(i * 10, 5, ());
        }
        let cap = t.nodes.len();
        for _ in 0..10 {
            for i in 0..64 {
                t.remove(i * 10);
            }
            for i in 0..64 {
                t.insert(i * 10, 5, ());
            }
        }
        assert_eq!(t.nodes.len(), cap);
        t.check().unwrap();
    }
}
