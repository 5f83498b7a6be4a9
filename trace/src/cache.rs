//! One set-associative cache of 64-byte lines with true LRU per set: flat storage, each set's
//! line numbers kept in recency order (most recent first), no allocation per access.

/// A free way (line numbers are guest-physical addresses / 64, far below this).
const EMPTY: u64 = u64::MAX;

/// A cache of `sets * ways` lines; the set of line number `l` is `l % sets`.
#[derive(Debug, Clone)]
pub struct Cache {
    sets: u64,
    ways: usize,
    /// `sets` runs of `ways` line numbers, each run most recently used first.
    tags: Vec<u64>,
}

impl Cache {
    /// A cache of `bytes` in `ways`-way sets; `bytes` must be a non-zero multiple of 64 * ways
    /// (the config checks it).
    pub fn new(bytes: u64, ways: usize) -> Self {
        assert!(ways > 0 && bytes > 0 && bytes.is_multiple_of(64 * ways as u64));
        let sets = bytes / (64 * ways as u64);
        Self {
            sets,
            ways,
            tags: vec![EMPTY; (sets as usize) * ways],
        }
    }

    pub fn sets(&self) -> u64 {
        self.sets
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    fn set(&mut self, line: u64) -> &mut [u64] {
        let start = (line % self.sets) as usize * self.ways;
        &mut self.tags[start..start + self.ways]
    }

    /// Whether `line` is cached (its recency unchanged).
    pub fn contains(&self, line: u64) -> bool {
        let start = (line % self.sets) as usize * self.ways;
        self.tags[start..start + self.ways].contains(&line)
    }

    /// If `line` is cached, makes it the most recently used of its set; returns whether it was.
    pub fn touch(&mut self, line: u64) -> bool {
        let set = self.set(line);
        match set.iter().position(|&t| t == line) {
            Some(i) => {
                set[..=i].rotate_right(1);
                true
            }
            None => false,
        }
    }

    /// Makes `line` the most recently used of its set, inserting it if absent; returns the
    /// least recently used line it evicted from a full set.
    pub fn insert(&mut self, line: u64) -> Option<u64> {
        let set = self.set(line);
        let i = set.iter().position(|&t| t == line).unwrap_or(set.len() - 1);
        let out = set[i];
        set[..=i].rotate_right(1);
        set[0] = line;
        (out != EMPTY && out != line).then_some(out)
    }

    /// Drops `line`; returns whether it was cached.
    pub fn remove(&mut self, line: u64) -> bool {
        let set = self.set(line);
        match set.iter().position(|&t| t == line) {
            Some(i) => {
                set[i..].rotate_left(1);
                let last = set.len() - 1;
                set[last] = EMPTY;
                true
            }
            None => false,
        }
    }

    /// Lines cached now (for tests).
    pub fn len(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_and_set_index() {
        // 12 sets: not a power of two; line 13 and line 1 share set 1.
        let mut c = Cache::new(12 * 64 * 2, 2);
        assert_eq!((c.sets(), c.ways()), (12, 2));
        assert_eq!(c.insert(1), None);
        assert_eq!(c.insert(13), None);
        assert_eq!(c.insert(2), None);
        // A third line of set 1 evicts the least recently used (1).
        assert_eq!(c.insert(25), Some(1));
        assert!(c.contains(13) && c.contains(25) && c.contains(2) && !c.contains(1));
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn lru_order_follows_touches_not_contains() {
        let mut c = Cache::new(4 * 64, 4); // one set of 4
        for l in 0..4 {
            assert_eq!(c.insert(l), None);
        }
        // Touch 0: now 1 is the oldest. contains(1) does not refresh it.
        assert!(c.touch(0));
        assert!(c.contains(1));
        assert_eq!(c.insert(10), Some(1));
        // Re-inserting a present line refreshes it and evicts nothing.
        assert_eq!(c.insert(2), None);
        assert_eq!(c.insert(11), Some(3));
        assert_eq!(c.insert(12), Some(0));
        assert_eq!(c.insert(13), Some(10));
        assert_eq!(c.insert(14), Some(2));
        assert!(!c.touch(99));
    }

    #[test]
    fn remove_frees_a_way_without_disturbing_the_order() {
        let mut c = Cache::new(3 * 64, 3);
        for l in [5, 6, 7] {
            c.insert(l);
        }
        assert!(c.remove(6));
        assert!(!c.remove(6));
        assert_eq!(c.insert(8), None);
        // Order now 8, 7, 5: the next insert evicts 5, then 7.
        assert_eq!(c.insert(9), Some(5));
        assert_eq!(c.insert(10), Some(7));
        assert_eq!(c.len(), 3);
        assert!(!c.is_empty());
    }

    /// A random cyclic order of `n` lines starting at `base` (a fixed permutation).
    pub fn cycle(base: u64, n: u64, seed: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (base..base + n).collect();
        let mut x = seed | 1;
        for i in (1..v.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
        v
    }

    /// Hits of `passes` passes over `order`, after one warm pass.
    fn chase(c: &mut Cache, order: &[u64], passes: usize) -> usize {
        for &l in order {
            if !c.touch(l) {
                c.insert(l);
            }
        }
        let mut hits = 0;
        for _ in 0..passes {
            for &l in order {
                if c.touch(l) {
                    hits += 1;
                } else {
                    c.insert(l);
                }
            }
        }
        hits
    }

    #[test]
    fn a_cyclic_chase_over_more_lines_than_ways_never_hits() {
        for (bytes, ways) in [(48 * 1024, 12), (2 * 1024 * 1024, 16), (12 * 64 * 3, 3)] {
            let mut c = Cache::new(bytes, ways);
            let lines = bytes / 64;
            // One line per set more than the ways, and 4 x the cache.
            for n in [lines + c.sets(), 4 * lines] {
                let order = cycle(1000, n, n ^ bytes);
                assert_eq!(chase(&mut c, &order, 3), 0, "{bytes} {ways} {n}");
            }
        }
    }

    #[test]
    fn a_chase_over_half_the_cache_always_hits_after_the_warm_pass() {
        for (bytes, ways) in [(48 * 1024, 12), (2 * 1024 * 1024, 16), (12 * 64 * 4, 4)] {
            let mut c = Cache::new(bytes, ways);
            let n = bytes / 64 / 2;
            let order = cycle(77, n, bytes);
            assert_eq!(chase(&mut c, &order, 3), 3 * n as usize, "{bytes} {ways}");
            // The whole cache fits too.
            let mut c = Cache::new(bytes, ways);
            let order = cycle(0, 2 * n, bytes + 1);
            assert_eq!(chase(&mut c, &order, 2), 4 * n as usize);
        }
    }
}
